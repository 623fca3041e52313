package switchcore

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/emufabric/emufabric/wire"
)

// Forwarding: static FDB entries, then L3 longest-prefix match with ECMP,
// then learned FDB entries; otherwise no_route. Unknown unicast is not
// flooded (see the Config.L2 comment: flooding lossless traffic causes deadlocks).

type fdbEntry struct {
	port   int
	static bool
}

type fdb struct {
	m        map[wire.MAC]fdbEntry
	learning bool
}

func (t *fdb) init(c *Config) {
	t.m = make(map[wire.MAC]fdbEntry, len(c.L2)+64)
	t.learning = c.MACLearning
	for _, e := range c.L2 {
		t.m[e.MAC] = fdbEntry{port: e.Port, static: true}
	}
}

// learn records src as reachable through port. Re-learning an existing MAC
// writes an existing key, which does not allocate.
func (t *fdb) learn(src wire.MAC, port int) {
	if !t.learning || src.IsMulticast() || src == (wire.MAC{}) {
		return
	}
	if e, ok := t.m[src]; ok && (e.static || e.port == port) {
		return
	}
	t.m[src] = fdbEntry{port: port}
}

// forgetPort removes the entries learned on port, whose link went down:
// the hosts behind it are now reached some other way, or not at all, and
// a frame for one must not wait for the entry to be learned over (IEEE
// 802.1Q 8.8.3: a port leaving the forwarding state flushes its dynamic
// entries). Static entries stay.
func (t *fdb) forgetPort(port int) {
	for mac, e := range t.m {
		if !e.static && e.port == port {
			delete(t.m, mac)
		}
	}
}

// Learn records that src was seen on port, as Receive does for every
// frame it takes (when MAC learning is on): a driver that floods
// broadcast and multicast itself, outside the engine, calls it for the
// frames it floods, so that the unicast answer to an ARP request finds
// the requester.
func (s *Switch) Learn(port int, src wire.MAC) { s.fdb.learn(src, port) }

// CountFlooded counts in a port's MAC counters (rx_packets_phy and
// rx_bytes_phy, or tx_...) and in its priority's (rx_prioN_packets ...) a
// frame that its owner received on the port or sent from it outside the
// engine: the broadcast and multicast a real-time switch floods itself
// (swd). The port's MAC saw the frame whoever forwarded it, and a port's
// per-priority counters add up to its port counters, as mlx5's do.
func (s *Switch) CountFlooded(port int, tx bool, b []byte) {
	c := &s.ports[port].c
	n := uint64(len(b))
	pc := &c.Prio[s.classify(b)]
	if tx {
		c.TxPacketsPhy++
		c.TxBytesPhy += n
		pc.TxPackets++
		pc.TxBytes += n
		return
	}
	c.RxPacketsPhy++
	c.RxBytesPhy += n
	pc.RxPackets++
	pc.RxBytes += n
}

// classify is the traffic class Receive gives a frame: by DSCP under DSCP
// trust, else by the 802.1Q PCP, else 0.
func (s *Switch) classify(b []byte) uint8 {
	var l2 wire.L2
	if wire.DecodeEthernet(b, &l2) != nil {
		return 0
	}
	if s.cfg.Trust == TrustDSCP && (l2.EtherType == wire.EtherTypeIPv4 || l2.EtherType == wire.EtherTypeIPv6) && len(b) > l2.HdrLen+1 {
		return s.cfg.DSCPToTC[wire.IPDSCP(b[l2.HdrLen:])]
	}
	if l2.Tagged {
		return s.cfg.Dot1pToTC[l2.PCP]
	}
	return 0
}

// lpm is a longest-prefix-match table: one hash map per prefix length,
// probed from the longest length present down.
type lpm struct {
	v4     [33]map[uint32]int32
	v4lens []int
	v6     [129]map[[16]byte]int32
	v6lens []int
	routes []Route
	// live[i] is route i's next hops whose links are up (refreshLive):
	// ECMP hashes over them, as a switch takes a member out of its ECMP
	// group when the member's link goes down, so a cut uplink costs the
	// frames on the wire, not every flow hashed onto it.
	live [][]int
}

func (t *lpm) init(routes []Route) error {
	t.routes = routes
	t.live = make([][]int, len(routes))
	for i, r := range routes {
		t.live[i] = make([]int, 0, len(r.Ports))
	}
	for i, r := range routes {
		pfx := r.Prefix.Masked()
		bits := pfx.Bits()
		a := pfx.Addr()
		if a.Is4() || a.Is4In6() && bits >= 96 {
			if a.Is4In6() {
				a, bits = a.Unmap(), bits-96
			}
			if t.v4[bits] == nil {
				t.v4[bits] = map[uint32]int32{}
				t.v4lens = append(t.v4lens, bits)
			}
			b := a.As4()
			k := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			if _, dup := t.v4[bits][k]; dup {
				return fmt.Errorf("duplicate route %v", r.Prefix)
			}
			t.v4[bits][k] = int32(i)
			continue
		}
		if t.v6[bits] == nil {
			t.v6[bits] = map[[16]byte]int32{}
			t.v6lens = append(t.v6lens, bits)
		}
		k := a.As16()
		if _, dup := t.v6[bits][k]; dup {
			return fmt.Errorf("duplicate route %v", r.Prefix)
		}
		t.v6[bits][k] = int32(i)
	}
	slices.Sort(t.v4lens)
	slices.Reverse(t.v4lens)
	slices.Sort(t.v6lens)
	slices.Reverse(t.v6lens)
	return nil
}

// SetRoutes replaces the switch's L3 routes (the driver's link-state
// routing recomputed them, linkstate.go). Frames already queued keep the
// port they were given.
func (s *Switch) SetRoutes(routes []Route) error {
	var t lpm
	if err := t.init(routes); err != nil {
		return err
	}
	s.lpm = t
	s.lpm.refreshLive(func(i int) bool { return s.ports[i].up })
	return nil
}

// refreshLive recomputes every route's live next hops from the ports'
// link states.
func (t *lpm) refreshLive(up func(port int) bool) {
	for i, r := range t.routes {
		live := t.live[i][:0]
		for _, p := range r.Ports {
			if up(p) {
				live = append(live, p)
			}
		}
		t.live[i] = live
	}
}

// nextHops is route i's ECMP group: its live next hops, or all of them
// when none is up (the frame then meets a down link and is counted there).
func (t *lpm) nextHops(i int) []int {
	if live := t.live[i]; len(live) > 0 {
		return live
	}
	return t.routes[i].Ports
}

func (t *lpm) lookup4(dst [4]byte) int {
	a := uint32(dst[0])<<24 | uint32(dst[1])<<16 | uint32(dst[2])<<8 | uint32(dst[3])
	for _, l := range t.v4lens {
		k := a
		if l < 32 {
			k = a &^ (1<<(32-l) - 1)
		}
		if i, ok := t.v4[l][k]; ok {
			return int(i)
		}
	}
	return -1
}

func (t *lpm) lookup6(dst [16]byte) int {
	for _, l := range t.v6lens {
		k := dst
		if full := l / 8; full < 16 {
			k[full] &^= 0xFF >> (l % 8)
			clear(k[full+1:])
		}
		if i, ok := t.v6[l][k]; ok {
			return int(i)
		}
	}
	return -1
}

// Lookup is the LPM result for addr (for tests and tools): the matched
// route's prefix and ports.
func (s *Switch) Lookup(addr netip.Addr) (netip.Prefix, []int, bool) {
	i := -1
	if addr.Is4() {
		i = s.lpm.lookup4(addr.As4())
	} else if addr.Is6() {
		i = s.lpm.lookup6(addr.As16())
	}
	if i < 0 {
		return netip.Prefix{}, nil, false
	}
	return s.lpm.routes[i].Prefix, s.lpm.routes[i].Ports, true
}

// flowKey is the 5-tuple ECMP hashes. RoCEv2 varies the UDP source port
// per QP (wire.RoCESourcePort) precisely so that ECMP spreads QPs.
type flowKey struct {
	src, dst     [16]byte
	proto        uint8
	sport, dport uint16
	v4           bool // addresses are IPv4-mapped (::ffff:a.b.c.d)
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// ecmpHash is FNV-1a (64-bit) over the 5-tuple, started from the offset
// basis XOR the per-switch seed so that switches at different tiers pick
// uncorrelated paths (avoiding ECMP polarisation), then finalised with a
// 64-bit mix so the low bits used by the modulo are well spread.
func ecmpHash(seed uint64, k *flowKey) uint64 {
	h := uint64(fnvOffset64) ^ seed
	for _, b := range k.src {
		h = (h ^ uint64(b)) * fnvPrime64
	}
	for _, b := range k.dst {
		h = (h ^ uint64(b)) * fnvPrime64
	}
	for _, b := range [5]byte{k.proto, byte(k.sport >> 8), byte(k.sport), byte(k.dport >> 8), byte(k.dport)} {
		h = (h ^ uint64(b)) * fnvPrime64
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
