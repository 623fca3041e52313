// Package capqueue holds a live capture's records between a daemon's
// loop, which offers them and must never wait, and the goroutine that
// writes the capture's stream to a reader that may be slow. There are two
// queues: data, and control frames (PFC, link-state advertisements, IB
// flow control) when the data queue is full, so that a slow reader loses
// data records before the control frames that explain them (ECN-noted data
// once filled a single queue and crowded out every XON of an incast). The
// writer takes the records back in time order: control first would put
// them up to 100 ms ahead of the data around them.
package capqueue

import (
	"slices"
	"time"
)

// Queues is one capture's pair of queues. Offer and Close are the loop's;
// Next, Wait and Drain the writer's.
type Queues[R any] struct {
	data, ctl chan R
	at        func(*R) time.Time

	// Writer side: the record taken from each queue and not yet returned
	// (ctl, data), and whether the data queue was closed.
	heads  [2]*R
	closed bool
}

// New makes the queues, data and ctl records deep; at is a record's time.
func New[R any](data, ctl int, at func(*R) time.Time) *Queues[R] {
	return &Queues[R]{data: make(chan R, data), ctl: make(chan R, ctl), at: at}
}

// Offer queues r without waiting: on the data queue, or, when that is
// full and r is a control frame, on the control queue. It reports whether
// r was queued (a record not queued is the caller's to count).
func (q *Queues[R]) Offer(r R, control bool) bool {
	select {
	case q.data <- r:
		return true
	default:
	}
	if !control {
		return false
	}
	select {
	case q.ctl <- r:
		return true
	default:
		return false
	}
}

// Close says the loop offers nothing more: the writer ends once it has
// what was queued. The loop's side; once.
func (q *Queues[R]) Close() { close(q.data) }

// Next returns the earliest of the records queued now, without waiting;
// ok is false when none is queued.
func (q *Queues[R]) Next() (r R, ok bool) {
	q.fill()
	i := 0
	switch {
	case q.heads[0] == nil && q.heads[1] == nil:
		return r, false
	case q.heads[0] == nil:
		i = 1
	case q.heads[1] != nil && q.at(q.heads[1]).Before(q.at(q.heads[0])):
		i = 1
	}
	r, q.heads[i] = *q.heads[i], nil
	return r, true
}

// fill takes the next record of each queue whose head is free.
func (q *Queues[R]) fill() {
	for i, c := range [2]chan R{q.ctl, q.data} {
		if q.heads[i] != nil || i == 1 && q.closed {
			continue
		}
		select {
		case r, ok := <-c:
			q.take(i, r, ok)
		default:
		}
	}
}

func (q *Queues[R]) take(i int, r R, ok bool) {
	if !ok {
		q.closed = true // only the data queue is ever closed
		return
	}
	q.heads[i] = &r
}

// Wait waits until a record is queued, and reports true; or until the
// loop closed the queues or stop or stop2 (nil: never) is closed, and
// reports false: the stream is to end (with Drain).
func (q *Queues[R]) Wait(stop, stop2 <-chan struct{}) bool {
	for q.heads[0] == nil && q.heads[1] == nil {
		if q.closed {
			return false
		}
		select {
		case r, ok := <-q.ctl:
			q.take(0, r, ok)
		case r, ok := <-q.data:
			q.take(1, r, ok)
		case <-stop:
			return false
		case <-stop2:
			return false
		}
	}
	return true
}

// Drain returns the records queued now, in time order: the end of a
// capture. As many as are queued when it starts, so a loop still offering
// cannot keep it going.
func (q *Queues[R]) Drain() []R {
	var out []R
	for i := range q.heads {
		if q.heads[i] != nil {
			out = append(out, *q.heads[i])
			q.heads[i] = nil
		}
	}
	for _, c := range [2]chan R{q.ctl, q.data} {
		for range len(c) {
			r, ok := <-c
			if !ok {
				break
			}
			out = append(out, r)
		}
	}
	// Each queue is in time order; a stable sort keeps it so.
	slices.SortStableFunc(out, func(a, b R) int { return q.at(&a).Compare(q.at(&b)) })
	return out
}

// Queued is the number of records waiting, for a writer that flushes its
// stream when it has caught up.
func (q *Queues[R]) Queued() int {
	n := len(q.ctl) + len(q.data)
	for _, h := range q.heads {
		if h != nil {
			n++
		}
	}
	return n
}
