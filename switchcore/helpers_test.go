package switchcore

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// manualClock is a deterministic clock for tests: timers fire in (time,
// arming order) when the test advances it. No wall clock, no sleeping.
// Armed timers sit in a binary heap; re-arming pushes a new entry and stale
// entries are skipped when popped.
type manualClock struct {
	now  clock.Time
	heap []heapEntry
	seq  uint64
}

type heapEntry struct {
	at  clock.Time
	seq uint64
	t   *manualTimer
}

type manualTimer struct {
	c     *manualClock
	at    clock.Time
	seq   uint64
	armed bool
	f     func()
}

func (c *manualClock) Now() clock.Time { return c.now }

func (c *manualClock) NewTimer(f func()) clock.Timer { return &manualTimer{c: c, f: f} }

func (t *manualTimer) Reset(at clock.Time) {
	c := t.c
	c.seq++
	t.at, t.seq, t.armed = at, c.seq, true
	c.heap = append(c.heap, heapEntry{at, c.seq, t})
	for i := len(c.heap) - 1; i > 0; {
		up := (i - 1) / 2
		if !c.heap[i].less(&c.heap[up]) {
			break
		}
		c.heap[i], c.heap[up] = c.heap[up], c.heap[i]
		i = up
	}
}

func (e *heapEntry) less(o *heapEntry) bool { return e.at < o.at || e.at == o.at && e.seq < o.seq }

func (t *manualTimer) Stop() bool {
	was := t.armed
	t.armed = false
	return was
}

func (t *manualTimer) When() (clock.Time, bool) { return t.at, t.armed }

// at runs f at time t (a one-shot timer).
func (c *manualClock) at(t clock.Time, f func()) { c.NewTimer(f).Reset(t) }

func (c *manualClock) pop() {
	h := c.heap
	n := len(h) - 1
	h[0] = h[n]
	h[n] = heapEntry{}
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].less(&h[m]) {
			m = l
		}
		if r < n && h[r].less(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	c.heap = h
}

// next returns the earliest live timer, dropping stale heap entries.
func (c *manualClock) next() *manualTimer {
	for len(c.heap) > 0 {
		e := c.heap[0]
		if e.t.armed && e.t.seq == e.seq {
			return e.t
		}
		c.pop()
	}
	return nil
}

// runUntil fires every timer due at or before end, then sets now = end.
func (c *manualClock) runUntil(end clock.Time) {
	for {
		t := c.next()
		if t == nil || t.at > end {
			break
		}
		c.pop()
		if t.at > c.now {
			c.now = t.at
		}
		t.armed = false
		t.f()
	}
	if end > c.now {
		c.now = end
	}
}

// sent is one frame a port transmitted.
type sent struct {
	start, tail clock.Time
	data        []byte
	prio, class uint8
}

// sink is a PortTx that records what it is given and returns frames to
// their pool.
type sink struct {
	clk    *manualClock
	frames []sent
	keep   bool // copy bytes
}

func (k *sink) Transmit(f *frame.Frame) {
	s := sent{start: k.clk.now, tail: f.TailAt, prio: f.Priority, class: f.Class}
	if k.keep {
		s.data = append([]byte(nil), f.Data...)
	}
	k.frames = append(k.frames, s)
	f.Put()
}

// count returns how many recorded frames satisfy fn.
func (k *sink) count(fn func(s *sent) bool) int {
	n := 0
	for i := range k.frames {
		if fn(&k.frames[i]) {
			n++
		}
	}
	return n
}

func isPFC(s *sent) bool {
	return len(s.data) >= 14 && binary.BigEndian.Uint16(s.data[12:]) == wire.EtherTypeMACControl
}

var (
	macA = wire.MAC{0x02, 0, 0, 0, 0, 0xA}
	macB = wire.MAC{0x02, 0, 0, 0, 0, 0xB}
	macC = wire.MAC{0x02, 0, 0, 0, 0, 0xC}
)

// rocev4 describes a synthetic RoCEv2 frame: Ethernet, IPv4, UDP 4791,
// a 12-byte BTH (RDMA WRITE ONLY, opcode 0x0A) and zero payload, total
// length size (>= 60).
type rocev4 struct {
	dst, src     wire.MAC
	tagged       bool
	pcp          uint8
	dscp, ecn    uint8
	ipSrc, ipDst [4]byte
	sport        uint16
	size         int
}

func (r rocev4) build(pool *frame.Pool) *frame.Frame {
	size := max(r.size, 60)
	f := pool.Get(size)
	clear(f.Data)
	n := wire.EncodeEthernet(f.Data, &wire.EthernetFields{Dst: r.dst, Src: r.src, Tagged: r.tagged, PCP: r.pcp,
		VID: 1, EtherType: wire.EtherTypeIPv4})
	ipLen := size - n
	wire.IPv4(f.Data[n:]).Encode(&wire.IPv4Fields{DSCP: r.dscp, ECN: r.ecn, TotalLength: uint16(ipLen), DF: true,
		TTL: 64, Protocol: wire.IPProtoUDP, Src: r.ipSrc, Dst: r.ipDst})
	sport := r.sport
	if sport == 0 {
		sport = 0xC000
	}
	wire.UDP(f.Data[n+20:]).Encode(&wire.UDPFields{SrcPort: sport, DstPort: wire.RoCEv2Port, Length: uint16(ipLen - 20)})
	bth := f.Data[n+28:]
	bth[0] = 0x0A               // RC RDMA WRITE ONLY
	bth[1] = 0x40               // MigReq
	bth[2], bth[3] = 0xFF, 0xFF // P_Key
	return f
}

// testConfig is a small switch: n ports at speed, MTU 1500, identity maps,
// static FDB macA->0, macB->1, macC->2 (when present).
func testConfig(n int, speed uint64) *Config {
	c := DefaultConfig("sw", n, speed)
	for i := range c.Ports {
		c.Ports[i].MTU = 1500
	}
	for i, m := range []wire.MAC{macA, macB, macC} {
		if i < n {
			c.L2 = append(c.L2, L2Entry{MAC: m, Port: i})
		}
	}
	return c
}

func newTestSwitch(t testing.TB, c *Config) (*Switch, *manualClock, *frame.Pool) {
	t.Helper()
	clk := &manualClock{}
	pool := frame.NewPool()
	s, err := New(c, clk, pool)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, pool
}

// deliver hands f to the switch at the current time as a whole frame
// (HeadAt == TailAt == now).
func deliver(s *Switch, clk *manualClock, port int, f *frame.Frame) {
	f.HeadAt, f.TailAt = clk.now, clk.now
	s.Receive(port, f)
}

const clock1us = clock.Microsecond

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func poolForTest() *frame.Pool { return frame.NewPool() }
