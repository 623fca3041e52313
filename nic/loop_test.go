package nic

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// A tiny deterministic discrete-event loop for the NIC's tests: a heap of
// re-armable timers, ties broken by arming order. The simulator's real
// scheduler replaces it in scenario tests.

type loop struct {
	now    clock.Time
	h      timerHeap
	seq    uint64
	events uint64
}

type ltimer struct {
	l   *loop
	f   func()
	at  clock.Time
	seq uint64
	idx int // heap index, -1 when disarmed
}

type timerHeap []*ltimer

func (h timerHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h timerHeap) down(i int) {
	n := len(h)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *timerHeap) push(t *ltimer) {
	t.idx = len(*h)
	*h = append(*h, t)
	h.up(t.idx)
}

// remove takes out the timer at i.
func (h *timerHeap) remove(i int) *ltimer {
	o := *h
	t := o[i]
	last := len(o) - 1
	if i != last {
		o.swap(i, last)
	}
	o[last] = nil
	*h = o[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	t.idx = -1
	return t
}

func (l *loop) Now() clock.Time { return l.now }
func (l *loop) NewTimer(f func()) clock.Timer {
	return &ltimer{l: l, f: f, idx: -1}
}

func (t *ltimer) Reset(at clock.Time) {
	if at < t.l.now {
		at = t.l.now
	}
	t.at = at
	t.l.seq++
	t.seq = t.l.seq
	if t.idx >= 0 {
		t.l.h.down(t.idx)
		t.l.h.up(t.idx)
		return
	}
	t.l.h.push(t)
}

func (t *ltimer) Stop() bool {
	if t.idx < 0 {
		return false
	}
	t.l.h.remove(t.idx)
	return true
}

func (t *ltimer) When() (clock.Time, bool) { return t.at, t.idx >= 0 }

// run fires timers up to until or until stop reports true or the event
// budget is spent; it reports whether stop was satisfied.
func (l *loop) run(until clock.Time, budget uint64, stop func() bool) bool {
	for len(l.h) > 0 && budget > 0 {
		if stop != nil && stop() {
			return true
		}
		t := l.h[0]
		if t.at > until {
			break
		}
		l.h.remove(0)
		l.now = t.at
		l.events++
		budget--
		t.f()
	}
	if l.now < until && len(l.h) == 0 {
		l.now = until
	}
	return stop != nil && stop()
}

// link is one direction of a back-to-back cable with fault injection from
// a seeded generator: loss, corruption (one payload byte flipped, so the
// ICRC check fails, as the simulator does), reordering (a frame held back
// by extra delay), and hooks to drop or rewrite chosen frames.
type link struct {
	l       *loop
	to      *NIC
	delay   clock.Time
	rng     *rand.Rand
	loss    float64
	corrupt float64
	reorder float64
	hold    clock.Time // extra delay of a reordered frame
	drop    func(f *frame.Frame) bool
	mangle  func(f *frame.Frame)
	tap     func(f *frame.Frame)
	down    bool

	fl        flightHeap
	seq       uint64
	timer     clock.Timer
	sent      uint64
	lost      uint64
	corrupted uint64
	reordered uint64
}

type flight struct {
	f   *frame.Frame
	at  clock.Time
	seq uint64
}

type flightHeap []flight

func (h flightHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h flightHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (k *link) Transmit(f *frame.Frame) {
	k.sent++
	if k.tap != nil {
		k.tap(f)
	}
	if k.down || k.drop != nil && k.drop(f) || k.loss > 0 && k.rng.Float64() < k.loss {
		k.lost++
		f.Put()
		return
	}
	if k.mangle != nil {
		k.mangle(f)
	}
	if k.corrupt > 0 && k.rng.Float64() < k.corrupt && corruptPayload(f, k.rng) {
		k.corrupted++
	}
	at := f.TailAt + k.delay
	if k.reorder > 0 && k.rng.Float64() < k.reorder {
		at += k.hold
		k.reordered++
	}
	f.TailAt, f.HeadAt = at, at
	k.seq++
	k.fl.pushFlight(flight{f: f, at: at, seq: k.seq})
	if t, ok := k.timer.When(); !ok || at < t {
		k.timer.Reset(at)
	}
}

// pushFlight is heap.Push without boxing the flight in an interface.
func (h *flightHeap) pushFlight(x flight) {
	*h = append(*h, x)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.Less(i, p) {
			break
		}
		h.Swap(i, p)
		i = p
	}
}

func (h *flightHeap) popFlight() flight {
	o := *h
	x := o[0]
	last := len(o) - 1
	o[0] = o[last]
	o[last] = flight{}
	*h = o[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.Less(l, m) {
			m = l
		}
		if r < last && h.Less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.Swap(i, m)
		i = m
	}
	return x
}

func (k *link) deliver() {
	for len(k.fl) > 0 && k.fl[0].at <= k.l.now {
		x := k.fl.popFlight()
		k.to.Receive(x.f)
	}
	if len(k.fl) > 0 {
		k.timer.Reset(k.fl[0].at)
	}
}

// corruptPayload flips one byte inside the ICRC-covered part of a RoCEv2
// frame (never the Ethernet padding, which the ICRC does not cover).
func corruptPayload(f *frame.Frame, rng *rand.Rand) bool {
	b := f.Data
	l3, ok := roceL3(b)
	if !ok || b[l3]>>4 != 4 {
		return false
	}
	total := int(binary.BigEndian.Uint16(b[l3+2:]))
	lo, hi := l3+wire.IPv4MinSize+wire.UDPSize, l3+total
	i := lo + rng.IntN(hi-lo)
	b[i] ^= 0x5A
	f.Corrupt = true
	return true
}

// pair is two NICs back to back.
type pair struct {
	l      *loop
	pool   *frame.Pool
	a, b   *NIC
	ab, ba *link
}

type pairOpts struct {
	rate  uint64
	delay clock.Time
	seed  uint64
	v6    bool
	cfgA  func(*Config)
	cfgB  func(*Config)
}

func newPair(t testing.TB, o pairOpts) *pair {
	t.Helper()
	if o.rate == 0 {
		o.rate = 100e9
	}
	if o.delay == 0 {
		o.delay = clock.Microsecond
	}
	l := &loop{}
	pool := frame.NewPool()
	mk := func(name string, i byte, f func(*Config)) *NIC {
		c := &Config{Name: name, MAC: wire.MAC{0x02, 0, 0, 0, 0, i}, IP: netip.AddrFrom4([4]byte{10, 0, 0, i}), Rate: o.rate}
		if o.v6 {
			c.IP = netip.AddrFrom16([16]byte{0xfd, 0, 15: i})
		}
		if f != nil {
			f(c)
		}
		n, err := New(c, l, pool)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	p := &pair{l: l, pool: pool, a: mk("a", 1, o.cfgA), b: mk("b", 2, o.cfgB)}
	rng := rand.New(rand.NewPCG(o.seed, 0x9e3779b97f4a7c15))
	p.ab = &link{l: l, to: p.b, delay: o.delay, rng: rng, hold: 5 * clock.Microsecond}
	p.ba = &link{l: l, to: p.a, delay: o.delay, rng: rng, hold: 5 * clock.Microsecond}
	p.ab.timer = l.NewTimer(p.ab.deliver)
	p.ba.timer = l.NewTimer(p.ba.deliver)
	p.a.Attach(p.ab)
	p.b.Attach(p.ba)
	return p
}

// endpoint is one side's verbs objects.
type endpoint struct {
	n   *NIC
	pd  *PD
	scq *CQ
	rcq *CQ
	qp  *QP
	mr  *MR
	buf []byte
}

type qpOpts struct {
	typ         QPType
	mtu         MTU
	bufSize     int
	timeout     uint8
	retry       uint8
	rnrRetry    uint8
	minRNR      uint8
	rdAtomic    uint8
	sendWR      int
	recvWR      int
	accessQP    AccessFlags
	accessMR    AccessFlags
	skipConnect bool
	sl          uint8
}

func (o *qpOpts) fill() {
	if o.typ == 0 {
		o.typ = IBV_QPT_RC
	}
	if o.mtu == 0 {
		o.mtu = IBV_MTU_4096
	}
	if o.bufSize == 0 {
		o.bufSize = 1 << 16
	}
	if o.timeout == 0 {
		o.timeout = 8 // 1.05 ms
	}
	if o.rdAtomic == 0 {
		o.rdAtomic = 4
	}
	if o.sendWR == 0 {
		o.sendWR = 64
	}
	if o.recvWR == 0 {
		o.recvWR = 64
	}
	if o.accessQP == 0 {
		o.accessQP = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
	}
	if o.accessMR == 0 {
		o.accessMR = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
	}
}

func newTestEndpoint(t testing.TB, n *NIC, o *qpOpts) *endpoint {
	t.Helper()
	e := &endpoint{n: n, pd: n.AllocPD(), buf: make([]byte, o.bufSize)}
	var err error
	if e.scq, err = n.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.rcq, err = n.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = e.pd.RegMR(e.buf, o.accessMR); err != nil {
		t.Fatal(err)
	}
	e.qp, err = e.pd.CreateQP(&QPInitAttr{QPType: o.typ, SendCQ: e.scq, RecvCQ: e.rcq,
		Cap: QPCap{MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR, MaxSendSGE: MaxSGE, MaxRecvSGE: MaxSGE}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// connect brings two QPs to RTS facing each other, the way an RDMA-CM or
// a perftest exchange would.
func connect(t testing.TB, a, b *endpoint, o *qpOpts) {
	t.Helper()
	for _, x := range [][2]*endpoint{{a, b}, {b, a}} {
		me, peer := x[0], x[1]
		init := &QPAttr{QPState: IBV_QPS_INIT, PortNum: 1, QPAccessFlags: o.accessQP, QKey: 0x11111111}
		mask := IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT
		if o.typ == IBV_QPT_UD {
			mask |= IBV_QP_QKEY
		} else {
			mask |= IBV_QP_ACCESS_FLAGS
		}
		if err := me.qp.ModifyQP(init, mask); err != nil {
			t.Fatal(err)
		}
		rtr := &QPAttr{QPState: IBV_QPS_RTR, PathMTU: o.mtu, DestQPNum: peer.qp.QPN(), RQPSN: 0x100,
			MaxDestRdAtomic: o.rdAtomic, MinRNRTimer: o.minRNR,
			AHAttr: AHAttr{DLID: peer.n.cfg.LID, DMAC: peer.n.cfg.MAC, DGID: peer.n.GID(), SL: o.sl}}
		mask = IBV_QP_STATE
		switch o.typ {
		case IBV_QPT_RC:
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
		case IBV_QPT_UC:
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
		}
		if err := me.qp.ModifyQP(rtr, mask); err != nil {
			t.Fatal(err)
		}
		rts := &QPAttr{QPState: IBV_QPS_RTS, SQPSN: 0x100, Timeout: o.timeout, RetryCnt: o.retry,
			RNRRetry: o.rnrRetry, MaxRdAtomic: o.rdAtomic}
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN
		if o.typ == IBV_QPT_RC {
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
		}
		if err := me.qp.ModifyQP(rts, mask); err != nil {
			t.Fatal(err)
		}
	}
}

func setupRC(t testing.TB, p *pair, o qpOpts) (*endpoint, *endpoint) {
	t.Helper()
	o.fill()
	a, b := newTestEndpoint(t, p.a, &o), newTestEndpoint(t, p.b, &o)
	if !o.skipConnect {
		connect(t, a, b, &o)
	}
	return a, b
}

func poll(cq *CQ) []WC {
	var out []WC
	var wc [16]WC
	for {
		k := cq.PollCQ(wc[:])
		if k == 0 {
			return out
		}
		out = append(out, wc[:k]...)
	}
}
