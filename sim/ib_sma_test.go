package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sm"
	"github.com/emufabric/emufabric/switchcore"
	"github.com/emufabric/emufabric/wire"
)

// fatTree builds the IB fat tree: spines s1, s2 (4 ports), leaves
// l1..l4 (6 ports: 0-3 hosts, 4 to s1, 5 to s2), hosts h1..h16 (h1-h4 on
// l1, ...). cut, when not nil, gives the l1-s1 link's events.
func fatTree(t testing.TB, opt Options, cut []LinkEvent) *net {
	const rate = 100e9
	n := newNet(t, opt)
	ib := func(c *switchcore.Config) {
		c.Fabric = switchcore.FabricIB
		for i := range c.Ports {
			c.Ports[i].MTU = 4096 + ibOverhead
		}
	}
	for s := 1; s <= 2; s++ {
		n.sw(fmt.Sprintf("s%d", s), 4, rate, ib)
	}
	for l := 1; l <= 4; l++ {
		n.sw(fmt.Sprintf("l%d", l), 6, rate, ib)
	}
	for h := 1; h <= 16; h++ {
		n.host(fmt.Sprintf("h%d", h), FabricIB)
		n.link(fmt.Sprintf("h%d", h), 0, fmt.Sprintf("l%d", (h-1)/4+1), (h-1)%4, rate, 500*clock.Nanosecond)
	}
	for l := 1; l <= 4; l++ {
		for s := 1; s <= 2; s++ {
			cfg := LinkConfig{Rate: rate, Delay: 500 * clock.Nanosecond, MTU: 4200}
			if l == 1 && s == 1 {
				cfg.Events = cut
			}
			_, err := n.s.Connect(PortRef{fmt.Sprintf("l%d", l), 3 + s}, PortRef{fmt.Sprintf("s%d", s), l - 1}, cfg)
			n.must(err)
		}
	}
	return n
}

// walk follows the switches' programmed forwarding tables from src's
// leaf to the host whose LID is dst and returns the switches passed, or
// an error on a missing entry, a loop or a wrong destination.
func walk(s *Sim, src *Host, dst *Host) ([]string, error) {
	lid := dst.SMA().LID()
	node, port := peerOfHost(src)
	var path []string
	for range 8 {
		w, ok := node.(*simSwitch)
		if !ok {
			if h := node.(*Host); h == dst {
				return path, nil
			}
			return path, fmt.Errorf("LID %d reached the wrong host", lid)
		}
		path = append(path, w.name)
		out := w.sw.LFTEntry(lid)
		if out < 0 {
			return path, fmt.Errorf("switch %s has no entry for LID %d", w.name, lid)
		}
		if out == port {
			return path, fmt.Errorf("switch %s sends LID %d back out its ingress port %d", w.name, lid, out)
		}
		if !w.ports[out].link.Up() {
			return path, fmt.Errorf("switch %s routes LID %d over a down link", w.name, lid)
		}
		node, port = w.peerOf(out)
	}
	return path, fmt.Errorf("LID %d: no arrival after 8 hops (loop): %v", lid, path)
}

func peerOfHost(h *Host) (endpoint, int) {
	if h.tx == &h.link.dir[0] {
		return h.link.dir[0].to, h.link.dir[0].toPort
	}
	return h.link.dir[1].to, h.link.dir[1].toPort
}

// checkFabric verifies unique LIDs, active ports, reachability of every
// host pair along loop-free LFT paths, and the spread of each leaf's
// remote destinations over both spines.
func checkFabric(t *testing.T, s *Sim, label string) {
	t.Helper()
	owner := map[uint16]string{}
	for _, name := range s.order {
		var a *mad.Agent
		if h := s.Host(name); h != nil {
			a = h.SMA()
			if a.PortState(1) != mad.PortStateActive {
				t.Errorf("%s: %s port state %s", label, name, mad.PortStateName(a.PortState(1)))
			}
			if h.cfg.LID != a.LID() {
				t.Errorf("%s: host %s sends with LID %d, its port has %d", label, name, h.cfg.LID, a.LID())
			}
		} else {
			a = s.Switch(name).SMA()
		}
		lid := a.LID()
		if lid == 0 || lid >= 0xC000 {
			t.Errorf("%s: %s has LID %d", label, name, lid)
		}
		if o, dup := owner[lid]; dup {
			t.Errorf("%s: LID %d given to %s and %s", label, lid, o, name)
		}
		owner[lid] = name
	}
	for _, src := range s.hosts {
		for _, dst := range s.hosts {
			if src == dst {
				continue
			}
			path, err := walk(s, src, dst)
			if err != nil {
				t.Errorf("%s: %s -> %s: %v (path %v)", label, src.cfg.Name, dst.cfg.Name, err, path)
			} else if len(path) != 1 && len(path) != 3 {
				t.Errorf("%s: %s -> %s: path %v is not minimal", label, src.cfg.Name, dst.cfg.Name, path)
			}
		}
	}
}

// spread counts, per leaf, the remote host LIDs routed out each uplink.
func spread(s *Sim) map[string][2]int {
	out := map[string][2]int{}
	for l := 1; l <= 4; l++ {
		name := fmt.Sprintf("l%d", l)
		sw := s.Switch(name)
		var c [2]int
		for _, h := range s.hosts {
			if p := sw.LFTEntry(h.SMA().LID()); p == 4 || p == 5 {
				c[p-4]++
			}
		}
		out[name] = c
	}
	return out
}

// allPairs adds one 8 KiB RDMA WRITE message from every host to every
// other host, offered from start on (the hosts hold it until the SM has
// made their port Active).
func allPairs(n *net, start clock.Time, count int, stop clock.Time) {
	for i := 1; i <= 16; i++ {
		for j := 1; j <= 16; j++ {
			if i == j {
				continue
			}
			n.flow(FlowConfig{
				Name: fmt.Sprintf("h%d-h%d", i, j), Src: fmt.Sprintf("h%d", i), Dst: []string{fmt.Sprintf("h%d", j)},
				Size: SizeDist{Kind: Fixed, Bytes: 8192}, Count: count, Start: start, Stop: stop,
				Rate: 1e9, PMTU: 4096,
			})
		}
	}
}

// TestSMFatTree: the SM on h1 sweeps the 2-spine, 4-leaf, 16-HCA fat tree
// from scratch (no LIDs, empty LFTs, ports in Init): unique LIDs, every
// port Active, every host pair reachable over loop-free minimal LFT paths,
// each leaf's remote destinations split evenly over both spines, and real
// traffic between all 240 pairs delivered in full.
func TestSMFatTree(t *testing.T) {
	n := fatTree(t, Options{Seed: 1, Duration: 2 * clock.Millisecond}, nil)
	allPairs(n, 0, 1, 0)
	d, err := n.s.ManageIB(IBManagement{SMHost: "h1", SM: sm.Config{LightSweep: 100 * clock.Microsecond}})
	n.must(err)
	// Every SMP on every link is a valid QP0 packet (ICRC and VCRC too).
	var smps, badSMPs int
	n.s.SetTap(func(_ *Link, _ int, f *frame.Frame) {
		if len(f.Data) > wire.IBLinkSize && wire.LRH(f.Data).VL() == 15 {
			smps++
			var p mad.Packet
			if err := mad.DecodePacket(f.Data, &p, bth.VerifyICRC|bth.VerifyVCRC); err != nil {
				badSMPs++
				t.Errorf("SMP on a link: %v", err)
			}
		}
	})
	r := n.run()
	t.Logf("%d SMP packets crossed links (%d bad)", smps, badSMPs)
	if smps == 0 {
		t.Error("no SMP crossed a link")
	}
	st := d.SM().Stats()
	t.Logf("fat tree sweep: %d nodes (%d switches), %d SMPs, %.1f µs simulated; %d light sweeps, %d retries, %d timeouts, errors %v",
		st.Nodes, st.Switches, st.LastSweepSMPs, float64(st.LastSweepTime)/float64(clock.Microsecond),
		st.LightSweeps, st.Retries, st.Timeouts, d.SM().Errors())
	if st.HeavySweeps != 1 || st.Nodes != 22 || st.Switches != 6 || st.Timeouts != 0 || st.ErrorStatus != 0 {
		t.Fatalf("sweep stats %+v, errors %v", st, d.SM().Errors())
	}
	if st.LightSweeps == 0 {
		t.Errorf("no light sweep ran after the heavy sweep")
	}
	checkFabric(t, n.s, "first sweep")
	for leaf, c := range spread(n.s) {
		t.Logf("%s: remote destinations via s1 %d, via s2 %d", leaf, c[0], c[1])
		if c[0]+c[1] != 12 || c[0] != c[1] {
			t.Errorf("%s: 12 remote hosts split %d/%d over the spines", leaf, c[0], c[1])
		}
	}
	// The SM's own view of the LFTs matches what the switches forward by.
	topo := d.SM().Topology()
	for _, w := range n.s.switches {
		lft := topo.LFT[IBGUID(w.name)]
		for lid := range lft {
			want := -1
			if p := lft[lid]; p != 0 && p != mad.LFTNoPort {
				want = int(p) - 1
			}
			if got := w.sw.LFTEntry(uint16(lid)); got != want {
				t.Errorf("%s LID %d: switch forwards to %d, SM programmed %d", w.name, lid, got, want)
			}
		}
	}
	var rx, tx uint64
	for _, f := range r.Flows {
		tx += f.TxBytes
		rx += f.RxBytes
		if f.RxBytes != 8192 || f.MessagesDone != 1 {
			t.Errorf("flow %s: received %d bytes, %d messages", f.Name, f.RxBytes, f.MessagesDone)
		}
	}
	drops, _ := r.SwitchDrops()
	first := clock.Never
	for _, f := range r.Flows {
		first = min(first, f.Start)
	}
	t.Logf("traffic: %d flows, %d of %d bytes delivered, switch drops %d, first data at %.1f µs (sweep ended at %.1f µs)",
		len(r.Flows), rx, tx, drops, float64(first)/float64(clock.Microsecond), float64(st.LastSweepEnd)/float64(clock.Microsecond))
	if drops != 0 {
		t.Errorf("switch drops %d", drops)
	}
	if first < st.LastSweepEnd-st.LastSweepTime {
		t.Errorf("data at %v before the sweep started", first)
	}
	var sb strings.Builder
	if err := topo.WriteIBNetDiscover(&sb); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(sb.String(), "\nSwitch\t"); c != 6 {
		t.Errorf("ibnetdiscover output has %d switch blocks:\n%s", c, sb.String())
	}
	if c := strings.Count(sb.String(), "\nCa\t"); c != 16 {
		t.Errorf("ibnetdiscover output has %d CA blocks:\n%s", c, sb.String())
	}
	t.Logf("ibnetdiscover (first lines):\n%s", firstLines(sb.String(), 24))
	var is strings.Builder
	if err := topo.WriteIBStat(&is); err != nil {
		t.Fatal(err)
	}
	if a, r := strings.Count(is.String(), "\t\tState: Active\n"), strings.Count(is.String(), "\t\tRate: 100\n"); a != 16 || r != 16 {
		t.Errorf("ibstat: %d active ports, %d at rate 100:\n%s", a, r, is.String())
	}
	t.Logf("ibstat (first CA):\n%s", firstLines(is.String(), 18))
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// TestSMLinkCut: after the first sweep the l1-s1 link goes down. The light
// sweep sees SwitchInfo.PortStateChange, a heavy sweep reroutes l1's
// traffic over s2 (and every other leaf's traffic to l1's hosts), LIDs do
// not change, and traffic between l1's hosts and the rest recovers; when
// the link comes back a third sweep activates its ports again and spreads
// routes over both spines.
func TestSMLinkCut(t *testing.T) {
	const cutAt, upAt = 600 * clock.Microsecond, 1400 * clock.Microsecond
	n := fatTree(t, Options{Seed: 2, Duration: 2200 * clock.Microsecond},
		[]LinkEvent{{At: cutAt, Up: false}, {At: upAt, Up: true}})
	// Steady traffic both ways between l1's hosts and l3's hosts.
	for _, pair := range [][2]int{{1, 9}, {2, 10}, {3, 11}, {4, 12}, {9, 1}, {10, 2}, {11, 3}, {12, 4}} {
		n.flow(FlowConfig{
			Name: fmt.Sprintf("h%d-h%d", pair[0], pair[1]), Src: fmt.Sprintf("h%d", pair[0]), Dst: []string{fmt.Sprintf("h%d", pair[1])},
			Size: SizeDist{Kind: Fixed, Bytes: 4096}, Rate: 2e9, PMTU: 4096, Stop: 2100 * clock.Microsecond,
		})
	}
	d, err := n.s.ManageIB(IBManagement{SMHost: "h1", SM: sm.Config{LightSweep: 50 * clock.Microsecond}})
	n.must(err)
	lidsBefore := map[string]uint16{}
	var sweepsBefore int
	var rxAtCut, rxAtResweep map[string]uint64
	snapshot := func() map[string]uint64 {
		m := map[string]uint64{}
		for _, f := range n.s.flows {
			for _, sk := range f.dsts[0].sinks {
				if sk != nil && sk.f == f {
					m[f.cfg.Name] = sk.rxB
				}
			}
		}
		return m
	}
	n.s.At(cutAt-clock.Nanosecond, func() {
		checkFabric(t, n.s, "before the cut")
		for _, name := range n.s.order {
			if h := n.s.Host(name); h != nil {
				lidsBefore[name] = h.SMA().LID()
			} else {
				lidsBefore[name] = n.s.Switch(name).SMA().LID()
			}
		}
		sweepsBefore = d.SM().Stats().HeavySweeps
		rxAtCut = snapshot()
	})
	var resweepEnd clock.Time
	n.s.At(upAt-clock.Nanosecond, func() {
		st := d.SM().Stats()
		if st.HeavySweeps != sweepsBefore+1 {
			t.Errorf("heavy sweeps %d after the cut, want %d", st.HeavySweeps, sweepsBefore+1)
		}
		resweepEnd = st.LastSweepEnd
		t.Logf("re-sweep after the cut: done %.1f µs after it, %d SMPs, %.1f µs",
			float64(st.LastSweepEnd-cutAt)/float64(clock.Microsecond), st.LastSweepSMPs, float64(st.LastSweepTime)/float64(clock.Microsecond))
		checkFabric(t, n.s, "after the cut")
		c := spread(n.s)["l1"]
		if c[0] != 0 || c[1] != 12 {
			t.Errorf("l1 routes %d/%d over s1/s2 with its s1 link down", c[0], c[1])
		}
		rxAtResweep = snapshot()
	})
	r := n.run()
	st := d.SM().Stats()
	if st.HeavySweeps != sweepsBefore+2 {
		t.Errorf("heavy sweeps %d at the end, want %d (initial, cut, restore)", st.HeavySweeps, sweepsBefore+2)
	}
	checkFabric(t, n.s, "after the link came back")
	for leaf, c := range spread(n.s) {
		if c[0] != c[1] {
			t.Errorf("%s: %d/%d over the spines after restore", leaf, c[0], c[1])
		}
	}
	for name, lid := range lidsBefore {
		var now uint16
		if h := n.s.Host(name); h != nil {
			now = h.SMA().LID()
		} else {
			now = n.s.Switch(name).SMA().LID()
		}
		if now != lid {
			t.Errorf("%s: LID %d became %d in a re-sweep", name, lid, now)
		}
	}
	end := snapshot()
	for _, f := range r.Flows {
		cut := rxAtCut[f.Name]
		mid := rxAtResweep[f.Name]
		if cut == 0 || end[f.Name] <= mid {
			t.Errorf("flow %s: %d bytes before the cut, %d after the re-sweep, %d at the end: no recovery", f.Name, cut, mid, end[f.Name])
		}
		if f.LastRx <= upAt {
			t.Errorf("flow %s: last packet at %v", f.Name, f.LastRx)
		}
	}
	drops, by := r.SwitchDrops()
	t.Logf("link cut: %d switch drops (link_down %d, no_route %d) during the outage; re-sweep ended %.1f µs after the cut; %d light sweeps, %d SMPs in all",
		drops, by[switchcore.DropLinkDown], by[switchcore.DropNoRoute], float64(resweepEnd-cutAt)/float64(clock.Microsecond), st.LightSweeps, st.SMPsSent)
}

// BenchmarkSMFatTreeSweep: building the 22-node fat tree and running the
// SM's first heavy sweep to completion in simulated time.
func BenchmarkSMFatTreeSweep(b *testing.B) {
	b.ReportAllocs()
	var st sm.Stats
	for b.Loop() {
		n := fatTree(b, Options{Seed: 1, Duration: clock.Millisecond}, nil)
		d, err := n.s.ManageIB(IBManagement{SMHost: "h1"})
		if err != nil {
			b.Fatal(err)
		}
		for t := clock.Time(0); d.SM().Stats().HeavySweeps == 0 && t < clock.Millisecond; {
			t += 50 * clock.Microsecond
			if err := n.s.RunUntil(t); err != nil {
				b.Fatal(err)
			}
		}
		st = d.SM().Stats()
		if st.HeavySweeps != 1 {
			b.Fatalf("sweep unfinished: %+v", st)
		}
	}
	b.ReportMetric(float64(st.LastSweepSMPs), "SMPs/sweep")
	b.ReportMetric(float64(st.LastSweepTime)/float64(clock.Microsecond), "sim-µs/sweep")
}
