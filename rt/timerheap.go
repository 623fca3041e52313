package rt

// timerHeap is a binary min-heap of armed Timers ordered by (at, seq): the
// earliest first, and among equal times the one armed first, so callbacks
// due at the same instant run in a stable order. Each Timer records its
// index so Reset and Stop are O(log n) without a search.
type timerHeap struct {
	t   []*Timer
	seq uint64
}

func (h *timerHeap) less(i, j int) bool {
	a, b := h.t[i], h.t[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (h *timerHeap) swap(i, j int) {
	h.t[i], h.t[j] = h.t[j], h.t[i]
	h.t[i].idx = i
	h.t[j].idx = j
}

func (h *timerHeap) push(t *Timer) {
	t.idx = len(h.t)
	h.t = append(h.t, t)
	h.up(t.idx)
}

func (h *timerHeap) remove(i int) {
	last := len(h.t) - 1
	t := h.t[i]
	if i != last {
		h.swap(i, last)
	}
	h.t[last] = nil
	h.t = h.t[:last]
	t.idx = -1
	if i != last {
		h.fix(i)
	}
}

func (h *timerHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (h *timerHeap) down(i0 int) bool {
	i := i0
	n := len(h.t)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
