package sim

import (
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/switchcore"
)

// incast builds N senders -> 1 receiver on one switch, each sender sending
// count messages of size bytes on priority 3 (DSCP 26).
func incast(t testing.TB, senders int, rate uint64, count, size int, pfc bool, dur clock.Time) *net {
	n := newNet(t, Options{Seed: 1, Duration: dur, SampleInterval: 10 * clock.Microsecond})
	n.sw("sw", senders+1, rate, func(c *switchcore.Config) {
		if !pfc {
			for i := range c.Ports {
				c.Ports[i].PFCEnable = 0
			}
		}
	})
	for i := 0; i <= senders; i++ {
		name := "h" + itoa(i)
		n.host(name, FabricRoCE)
		n.link(name, 0, "sw", i, rate, clock.Microsecond)
	}
	for _, fc := range Incast("incast", hostNames("h", 1, senders), "h0", FlowConfig{
		Size: SizeDist{Kind: Fixed, Bytes: size}, Count: count, DSCP: 26, Priority: -1, PMTU: 4096, ECT: true,
	}) {
		n.flow(fc)
	}
	return n
}

// Scenario a: 8:1 incast on lossless priority 3. With PFC: zero drops,
// pauses sent, the bottleneck busy >= 95%. Without PFC: drops counted.
func TestScenarioIncastPFC(t *testing.T) {
	const size, count = 256 << 10, 4 // 1 MiB per sender
	r := incast(t, 8, 100e9, count, size, true, 2*clock.Millisecond).run()
	drops, _ := r.SwitchDrops()
	pauses := sumPrio(r, "sw", func(pc *switchcore.PrioCounters) uint64 { return pc.TxPause })
	bott := dirStats(r, "sw", "h0")
	u := busy(bott)
	var got uint64
	for _, f := range r.Flows {
		got += f.RxBytes
		if f.MessagesDone != count {
			t.Errorf("%s: %d/%d messages", f.Name, f.MessagesDone, count)
		}
	}
	h0 := r.Host("h0").Stats
	t.Logf("8:1 incast 100G PFC on: drops %d, PFC XOFF sent %d, bottleneck busy %.2f%%, delivered %d B, last byte %v, max queue %d B",
		drops, pauses, 100*u, got, bott.LastDataTail, maxQueue(r, "sw"))
	if drops != 0 || h0.ICRCErrors != 0 || h0.OutOfOrder != 0 {
		t.Fatalf("lossless incast dropped: switch %d, icrc %d, psn gaps %d", drops, h0.ICRCErrors, h0.OutOfOrder)
	}
	if pauses == 0 {
		t.Fatal("no PFC sent")
	}
	if u < 0.95 {
		t.Fatalf("bottleneck busy %.2f%% < 95%%", 100*u)
	}
	if got != 8*count*size {
		t.Fatalf("delivered %d, want %d", got, 8*count*size)
	}
	if r.FramesOutstanding != 0 {
		t.Fatalf("%d frames not returned to the pool", r.FramesOutstanding)
	}
	// ECN: every packet the switch CE-marked (WRED AZURE_LOSSLESS at
	// 1-2 MiB) arrives marked: the receivers count exactly the switch's marks.
	marked := sumPrio(r, "sw", func(pc *switchcore.PrioCounters) uint64 { return pc.ECNMarked })
	var ce uint64
	for _, f := range r.Flows {
		ce += f.CEMarked
	}
	t.Logf("ECN: switch marked %d packets, receivers saw %d CE", marked, ce)
	if marked == 0 || ce != marked {
		t.Fatalf("switch marked %d, receivers saw %d CE", marked, ce)
	}

	r2 := incast(t, 8, 100e9, count, size, false, 2*clock.Millisecond).run()
	drops2, by := r2.SwitchDrops()
	pauses2 := sumPrio(r2, "sw", func(pc *switchcore.PrioCounters) uint64 { return pc.TxPause })
	gaps := r2.Host("h0").Stats.OutOfOrder
	t.Logf("8:1 incast 100G PFC off: drops %d (lossy_threshold %d), PFC sent %d, receiver PSN gaps %d",
		drops2, by[switchcore.DropLossyThreshold], pauses2, gaps)
	if drops2 == 0 || pauses2 != 0 || gaps == 0 {
		t.Fatalf("PFC off: drops %d, pauses %d, gaps %d", drops2, pauses2, gaps)
	}
}

func maxQueue(r *Results, sw string) int {
	m := 0
	for i := range r.Ports {
		if r.Ports[i].Switch == sw {
			for p := range r.Ports[i].Prio {
				m = max(m, r.Ports[i].Prio[p].QueueWatermark)
			}
		}
	}
	return m
}

// Scenario h: per hop, cut-through saves exactly ser(len) - ser(header)
// against store-and-forward (the egress is idle and not slower).
func TestScenarioCutThroughVsSAF(t *testing.T) {
	const hops = 3
	const rate = 100e9
	const delay = 500 * clock.Nanosecond
	lastByte := func(ct bool, size int) (clock.Time, int) {
		n := newNet(t, Options{Seed: 1, Duration: 100 * clock.Microsecond})
		for i := 0; i < hops; i++ {
			n.sw("s"+itoa(i), 2, rate, func(c *switchcore.Config) { c.CutThrough = ct })
		}
		n.host("a", FabricRoCE)
		n.host("b", FabricRoCE)
		n.link("a", 0, "s0", 0, rate, delay)
		for i := 0; i+1 < hops; i++ {
			n.link("s"+itoa(i), 1, "s"+itoa(i+1), 0, rate, delay)
		}
		n.link("s"+itoa(hops-1), 1, "b", 0, rate, delay)
		n.flow(FlowConfig{Name: "f", Src: "a", Dst: []string{"b"}, Size: SizeDist{Kind: Fixed, Bytes: size},
			Count: 1, DSCP: 26, Priority: -1, PMTU: 4096})
		r := n.run()
		f := r.Flow("f")
		if f.MessagesDone != 1 {
			t.Fatalf("ct=%v size %d: not delivered", ct, size)
		}
		return f.LastRx, int(f.TxWireBytes)
	}
	for _, size := range []int{64, 1000, 4096} {
		ct, n := lastByte(true, size)
		saf, _ := lastByte(false, size)
		perHop := clock.SerializationTime(n, rate) - clock.SerializationTime(64, rate)
		if n <= 64 {
			perHop = 0
		}
		t.Logf("frame %d B over %d hops at 100G: SAF %v, cut-through %v, difference %v = %d x %v", n, hops, saf, ct, saf-ct, hops, perHop)
		if saf-ct != hops*perHop {
			t.Fatalf("frame %d B: difference %v, want %d x (ser(%d) - ser(64)) = %v", n, saf-ct, hops, n, hops*perHop)
		}
	}
}

// Scenario d: parking lot, PFC only (no congestion control). H1, H2 on S1
// share S1's uplink into S2, where H3 joins; all send to R. R's port is
// shared per ingress port at S2: H3 ~ 50%, H1 ~ H2 ~ 25%.
func TestScenarioParkingLot(t *testing.T) {
	const rate = 100e9
	n := newNet(t, Options{Seed: 1, Duration: 3 * clock.Millisecond})
	n.sw("s1", 3, rate, nil)
	n.sw("s2", 3, rate, nil)
	for _, h := range []string{"h1", "h2", "h3", "r"} {
		n.host(h, FabricRoCE)
	}
	n.link("h1", 0, "s1", 0, rate, clock.Microsecond)
	n.link("h2", 0, "s1", 1, rate, clock.Microsecond)
	n.link("s1", 2, "s2", 0, rate, clock.Microsecond)
	n.link("h3", 0, "s2", 1, rate, clock.Microsecond)
	n.link("r", 0, "s2", 2, rate, clock.Microsecond)
	for _, h := range []string{"h1", "h2", "h3"} {
		n.flow(FlowConfig{Name: h, Src: h, Dst: []string{"r"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, DSCP: 26, Priority: -1, PMTU: 4096})
	}
	// Measure the shares after a 1 ms warm-up.
	n.must(n.s.RunUntil(clock.Millisecond))
	base := make(map[string]uint64)
	for _, f := range n.s.flows {
		base[f.cfg.Name] = n.s.Host("r").sinks[f.id].rxB
	}
	r := n.run()
	drops, _ := r.SwitchDrops()
	var tot float64
	got := map[string]float64{}
	for _, f := range r.Flows {
		got[f.Name] = float64(f.RxBytes - base[f.Name])
		tot += got[f.Name]
	}
	share := func(h string) float64 { return 100 * got[h] / tot }
	util := float64(tot) * 8 / (2 * clock.Millisecond).Seconds() / rate
	t.Logf("parking lot PFC only: h1 %.1f%%, h2 %.1f%%, h3 %.1f%% of R's link (used %.1f%%), drops %d",
		share("h1"), share("h2"), share("h3"), 100*util, drops)
	if drops != 0 {
		t.Fatalf("%d drops", drops)
	}
	for h, want := range map[string]float64{"h1": 25, "h2": 25, "h3": 50} {
		if d := share(h) - want; d > 5 || d < -5 {
			t.Errorf("%s share %.1f%%, want %v%% +-5", h, share(h), want)
		}
	}
}

// Scenario e: the victim flow V -> VR never crosses the hot port S2 -> R,
// yet it is slowed because S2 pauses S1's uplink for priority 3 (pause
// spreading): compare with the same run without the hot flows.
func TestScenarioVictimFlow(t *testing.T) {
	const rate = 100e9
	run := func(hot bool) (*Results, float64) {
		n := newNet(t, Options{Seed: 1, Duration: 2 * clock.Millisecond})
		// A 400G uplink: S1 is never the bottleneck, so any slowdown of
		// the victim comes from S2's pauses.
		const up = 4 * rate
		n.sw("s1", 4, rate, func(c *switchcore.Config) { c.Ports[3].Speed = up })
		n.sw("s2", 3, rate, func(c *switchcore.Config) { c.Ports[0].Speed = up })
		for _, h := range []string{"h1", "h2", "v", "r", "vr"} {
			n.host(h, FabricRoCE)
		}
		n.link("h1", 0, "s1", 0, rate, clock.Microsecond)
		n.link("h2", 0, "s1", 1, rate, clock.Microsecond)
		n.link("v", 0, "s1", 2, rate, clock.Microsecond)
		n.link("s1", 3, "s2", 0, up, clock.Microsecond)
		n.link("r", 0, "s2", 1, rate, clock.Microsecond)
		n.link("vr", 0, "s2", 2, rate, clock.Microsecond)
		mk := func(name, src, dst string) FlowConfig {
			return FlowConfig{Name: name, Src: src, Dst: []string{dst}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, DSCP: 26, Priority: -1, PMTU: 4096}
		}
		n.flow(mk("victim", "v", "vr"))
		if hot {
			// h1 and h2 to r: the hot port S2 -> R is oversubscribed 2:1.
			n.flow(mk("hot1", "h1", "r"))
			n.flow(mk("hot2", "h2", "r"))
		}
		r := n.run()
		v := r.Flow("victim")
		return r, v.Throughput
	}
	_, alone := run(false)
	r, withHot := run(true)
	s2up := r.Port("s2", 0).Prio[3].TxPause
	s1up := r.Port("s1", 3).Prio[3].RxPause
	s1v := r.Port("s1", 2).Prio[3].TxPause
	vr := dirStats(r, "s2", "vr")
	t.Logf("victim flow: alone %.1f Gb/s, with the hot incast %.1f Gb/s (%.0f%%); s2 uplink XOFF sent %d, s1 uplink XOFF received %d, s1 -> victim host XOFF %d; vr link busy %.0f%%",
		alone/1e9, withHot/1e9, 100*withHot/alone, s2up, s1up, s1v, 100*busy(vr))
	if alone < 0.95*rate {
		t.Fatalf("victim alone only %.1f Gb/s", alone/1e9)
	}
	if withHot > 0.7*alone {
		t.Fatalf("victim not slowed: %.1f vs %.1f Gb/s", withHot/1e9, alone/1e9)
	}
	if s2up == 0 || s1up == 0 || s1v == 0 {
		t.Fatalf("pause spreading not visible in counters: %d %d %d", s2up, s1up, s1v)
	}
}

// Scenario g: native IB 8:1 incast: credit flow control with real link
// packets; no packet is dropped, no receiver ever sees more blocks than it
// granted (credits never negative), and the bottleneck stays busy.
func TestScenarioIBIncast(t *testing.T) {
	const senders, size, count = 8, 256 << 10, 4
	const rate = 100e9
	n := newNet(t, Options{Seed: 1, Duration: 2 * clock.Millisecond})
	n.sw("sw", senders+1, rate, func(c *switchcore.Config) {
		c.Fabric = switchcore.FabricIB
		for i := range c.Ports {
			c.Ports[i].MTU = 4096 + ibOverhead
		}
	})
	for i := 0; i <= senders; i++ {
		name := "h" + itoa(i)
		n.host(name, FabricIB)
		n.link(name, 0, "sw", i, rate, clock.Microsecond)
	}
	for _, fc := range Incast("ib", hostNames("h", 1, senders), "h0", FlowConfig{
		Size: SizeDist{Kind: Fixed, Bytes: size}, Count: count, PMTU: 4096,
	}) {
		n.flow(fc)
	}
	// Watch the switch's view every 100 ns: the credits it may still
	// send and its free receive blocks never go below zero.
	n.must(n.s.Start())
	sw := n.s.Switch("sw")
	minCredit, minFree := 1<<30, 1<<30
	var watch clock.Timer
	watch = n.s.NewTimer(func() {
		for p := 0; p <= senders; p++ {
			if c, ok := sw.Credits(p, 0); ok {
				minCredit = min(minCredit, c)
			}
			minFree = min(minFree, sw.RxFreeBlocks(p, 0))
		}
		watch.Reset(n.s.Now() + 100*clock.Nanosecond)
	})
	watch.Reset(0)
	r := n.run()
	drops, by := r.SwitchDrops()
	bott := dirStats(r, "sw", "h0")
	u := busy(bott)
	var got uint64
	var overrun, waits, fc uint64
	for _, h := range r.Hosts {
		overrun += h.Stats.CreditOverrun
		waits += h.Stats.CreditWaits
		fc += h.Stats.FCRx
	}
	for _, f := range r.Flows {
		got += f.RxBytes
	}
	stalls := sumPrio(r, "sw", func(pc *switchcore.PrioCounters) uint64 { return pc.CreditStalls })
	swFC := sumPrio(r, "sw", func(pc *switchcore.PrioCounters) uint64 { return pc.FCTx })
	t.Logf("IB 8:1 incast 100G: drops %d, bottleneck busy %.2f%%, delivered %d B by %v, host credit waits %d, switch credit stalls %d, FC packets switch->hosts %d (hosts received %d), receiver overruns %d",
		drops, 100*u, got, bott.LastDataTail, waits, stalls, swFC, fc, overrun)
	if drops != 0 {
		t.Fatalf("drops %d %v", drops, by)
	}
	t.Logf("switch minimum over the run (sampled every 100 ns): send credits %d blocks, free receive blocks %d", minCredit, minFree)
	if overrun != 0 || minCredit < 0 || minFree < 0 {
		t.Fatalf("credits went negative: host overruns %d, switch credits %d, switch free blocks %d", overrun, minCredit, minFree)
	}
	if got != senders*count*size {
		t.Fatalf("delivered %d, want %d", got, senders*count*size)
	}
	if u < 0.95 {
		t.Fatalf("bottleneck busy %.2f%%", 100*u)
	}
	if waits == 0 {
		t.Fatal("senders never waited for credit: the incast did not back-pressure")
	}
	for _, h := range r.Hosts {
		if h.Stats.ICRCErrors+h.Stats.VCRCErrors+h.Stats.Malformed+h.Stats.OutOfOrder != 0 {
			t.Fatalf("%s: receive errors %+v", h.Name, h.Stats)
		}
	}
}

// Scenario c: PFC storm (sonic-mgmt PFCWD test 1, times scaled from the
// 200 ms defaults to milliseconds). h1 <-> h2 and h2 <-> h3 exchange
// lossless traffic at 50% line rate; h3's NIC floods XOFF for priority 3.
// The watchdog must detect the stuck queue within detection + poll, drop
// its traffic, keep h1 <-> h2 lossless at full rate, and restore after
// restoration time of quiet.
func TestScenarioPFCStorm(t *testing.T) {
	const rate = 100e9
	const det, rest, poll = 2 * clock.Millisecond, 2 * clock.Millisecond, clock.Millisecond
	const stormOn, stormOff = clock.Millisecond, 6 * clock.Millisecond
	const iv = 100 * clock.Microsecond
	n := newNet(t, Options{Seed: 1, Duration: 12 * clock.Millisecond, SampleInterval: iv})
	n.sw("sw", 3, rate, func(c *switchcore.Config) {
		c.PFCWD = switchcore.PFCWatchdog{Enabled: true, DetectionTime: det, RestorationTime: rest, PollInterval: poll, Action: switchcore.PFCWDDrop}
	})
	n.host("h1", FabricRoCE)
	n.host("h2", FabricRoCE)
	n.must(n.s.AddHost(HostConfig{Name: "h3", Storm: &PFCStorm{Priority: 3, Start: stormOn, Stop: stormOff}}))
	for i, h := range []string{"h1", "h2", "h3"} {
		n.link(h, 0, "sw", i, rate, clock.Microsecond)
	}
	for _, p := range [][2]string{{"h1", "h2"}, {"h2", "h1"}, {"h2", "h3"}, {"h3", "h2"}} {
		n.flow(FlowConfig{Name: p[0] + "-" + p[1], Src: p[0], Dst: []string{p[1]}, Rate: rate / 2,
			Size: SizeDist{Kind: Fixed, Bytes: 64 << 10}, DSCP: 26, Priority: -1, PMTU: 4096})
	}
	n.must(n.s.Start())
	var detected, restored clock.Time
	n.s.Switch("sw").SetTrace(func(ev switchcore.TraceEvent) {
		switch ev.Kind {
		case switchcore.TracePFCWDStorm:
			if detected == 0 && ev.Port == 2 && ev.Prio == 3 {
				detected = n.s.Now()
			}
		case switchcore.TracePFCWDRestore:
			if restored == 0 && ev.Port == 2 && ev.Prio == 3 {
				restored = n.s.Now()
			}
		}
	})
	// Snapshot the watchdog drops 1 ms after restoration.
	var dropsAtRestore uint64
	n.s.At(stormOff+rest+poll+clock.Millisecond, func() {
		c := n.s.Switch("sw").Counters(2).Prio[3]
		dropsAtRestore = c.PFCWDTxDrop + c.PFCWDRxDrop
	})
	r := n.run()
	c3 := r.Port("sw", 2).Prio[3]
	wdDrops := c3.PFCWDTxDrop + c3.PFCWDRxDrop
	// Average rate of a flow over [from, to) from the series.
	avg := func(flow string, from, to clock.Time) float64 {
		for _, fs := range r.Series.Flows {
			if fs.Flow != flow {
				continue
			}
			var sum float64
			k := 0
			for i, at := range r.Series.Times {
				if at > from && at <= to {
					sum += fs.Bps[i]
					k++
				}
			}
			return sum / float64(k)
		}
		return 0
	}
	h12 := avg("h1-h2", stormOn, stormOff)
	h21 := avg("h2-h1", detected+iv, stormOff)
	h23after := avg("h2-h3", restored+iv, r.End)
	t.Logf("PFC storm from %v to %v: detected %v (after %v; bound detection+poll = %v), restored %v (%v after the storm; bound %v), watchdog drops %d (after restoration +1ms: %d more)",
		stormOn, stormOff, detected, detected-stormOn, det+poll, restored, restored-stormOff, rest+poll, wdDrops, wdDrops-dropsAtRestore)
	t.Logf("payload rates: h1->h2 during the storm %.1f Gb/s, h2->h1 after detection %.1f Gb/s, h2->h3 after restoration %.1f Gb/s",
		h12/1e9, h21/1e9, h23after/1e9)
	if detected == 0 || detected-stormOn > det+poll {
		t.Fatalf("storm detected at %v", detected)
	}
	if restored == 0 || restored < stormOff+rest || restored-stormOff > rest+poll {
		t.Fatalf("storm restored at %v", restored)
	}
	if wdDrops == 0 || wdDrops != dropsAtRestore {
		t.Fatalf("watchdog drops %d, %d at restoration", wdDrops, dropsAtRestore)
	}
	for _, f := range []string{"h1-h2", "h2-h1"} {
		if g := r.Flow(f).PSNGaps; g != 0 {
			t.Fatalf("%s lost traffic: %d PSN gaps", f, g)
		}
	}
	t.Logf("storming port's flows: h2->h3 PSN gaps %d, h3->h2 PSN gaps %d", r.Flow("h2-h3").PSNGaps, r.Flow("h3-h2").PSNGaps)
	if h12 < 0.95*0.5*rate*4096/4170 || h21 < 0.95*0.5*rate*4096/4170 {
		t.Fatalf("bystander flows slowed: %.1f, %.1f Gb/s", h12/1e9, h21/1e9)
	}
	if h23after < 0.95*0.5*rate*4096/4170 {
		t.Fatalf("h2->h3 did not recover: %.1f Gb/s", h23after/1e9)
	}
}

// ring builds three switches in a ring, one host each, with routes that
// send every host's traffic two hops clockwise (ha -> hc via B, hb -> ha via
// C, hc -> hb via A): each ring link carries a first-hop and a second-hop
// flow, a cyclic buffer dependency.
func ring(t testing.TB, wd bool, stop, dur clock.Time) *net {
	const rate = 100e9
	n := newNet(t, Options{Seed: 1, Duration: dur, SampleInterval: 50 * clock.Microsecond, DeadlockWindow: 200 * clock.Microsecond})
	hosts := []string{"ha", "hb", "hc"}
	sws := []string{"A", "B", "C"}
	for _, h := range hosts {
		n.host(h, FabricRoCE)
	}
	for i, s := range sws {
		// Clockwise port 1 reaches the destination two hops away.
		dst := n.s.Host(hosts[(i+2)%3]).cfg.IP
		n.sw(s, 3, rate, func(c *switchcore.Config) {
			c.Routes = append(c.Routes, switchcore.Route{Prefix: netip.PrefixFrom(netip.AddrFrom4(dst), 32), Ports: []int{1}})
			if wd {
				c.PFCWD = switchcore.PFCWatchdog{Enabled: true, DetectionTime: 400 * clock.Microsecond,
					RestorationTime: 400 * clock.Microsecond, PollInterval: 100 * clock.Microsecond, Action: switchcore.PFCWDDrop}
			}
		})
	}
	for i := range sws {
		n.link(hosts[i], 0, sws[i], 0, rate, clock.Microsecond)
		n.link(sws[i], 1, sws[(i+1)%3], 2, rate, clock.Microsecond)
	}
	for i, h := range hosts {
		n.flow(FlowConfig{Name: h, Src: h, Dst: []string{hosts[(i+2)%3]}, Size: SizeDist{Kind: Fixed, Bytes: 64 << 10},
			Stop: stop, DSCP: 26, Priority: -1, PMTU: 4096})
	}
	return n
}

// Scenario f: the cyclic buffer dependency deadlocks: after the sources
// stop, the ring queues stay non-empty and constant; the run ends at its
// end time and reports the deadlock. With the PFC watchdog the deadlock is
// broken and the queues drain.
func TestScenarioDeadlockRing(t *testing.T) {
	const stop, dur = clock.Millisecond, 4 * clock.Millisecond
	n := ring(t, false, stop, dur)
	r := n.run()
	d := r.Deadlock
	if d == nil {
		t.Fatalf("no deadlock reported; queued at end %d B", n.s.queuedBytes())
	}
	var stuck int
	for _, q := range d.Queues {
		stuck += q.Bytes
	}
	t.Logf("ring without watchdog: deadlock detected at %v (no data moved since %v), %d queues stuck holding %d B, resolved %v, run ended at %v after %d events",
		d.DetectedAt, d.Since, len(d.Queues), stuck, d.ResolvedAt, r.End, r.Events)
	for _, q := range d.Queues {
		t.Logf("  stuck: %s port %d prio %d: %d B, paused %v", q.Switch, q.Port, q.Prio, q.Bytes, q.Paused)
	}
	if d.ResolvedAt != 0 || r.End != dur {
		t.Fatalf("deadlock resolved at %v / run ended at %v", d.ResolvedAt, r.End)
	}
	if n.s.queuedBytes() != stuck {
		t.Fatalf("queues changed after detection: %d -> %d", stuck, n.s.queuedBytes())
	}
	ringPorts := 0
	for _, q := range d.Queues {
		if q.Port == 1 && q.Prio == 3 && q.Paused {
			ringPorts++
		}
	}
	if ringPorts != 3 {
		t.Fatalf("want the three clockwise ring queues stuck and paused, got %d", ringPorts)
	}
	// Queue depth constant in the series after the detection.
	for _, qs := range r.Series.Queues {
		var first = -1
		for i, at := range r.Series.Times {
			if at < d.DetectedAt {
				continue
			}
			if first < 0 {
				first = qs.Bytes[i]
			} else if qs.Bytes[i] != first {
				t.Fatalf("%s port %d prio %d changed after detection", qs.Switch, qs.Port, qs.Prio)
			}
		}
	}

	nw := ring(t, true, stop, dur)
	rw := nw.run()
	var storms uint64
	for _, p := range rw.Ports {
		storms += p.Prio[3].PFCWDStormDetected
	}
	t.Logf("ring with watchdog (400us/400us/poll 100us): storms detected %d, queued at end %d B, deadlock %v", storms, nw.s.queuedBytes(), rw.Deadlock != nil)
	if storms == 0 || nw.s.queuedBytes() != 0 {
		t.Fatalf("watchdog did not break the deadlock: storms %d, queued %d", storms, nw.s.queuedBytes())
	}
	if rw.Deadlock != nil && rw.Deadlock.ResolvedAt == 0 {
		t.Fatal("deadlock persisted with the watchdog")
	}
}

// Scenario b end to end: one congested lossless PG (100G in, 10G out).
// The switch sends XOFF when the PG's shared occupancy reaches the dynamic
// threshold's fixed point S*a/(1+a) of the pool (a = 2^dynamic_th), within
// one MTU.
func TestScenarioDynamicThreshold(t *testing.T) {
	const pool = 1 << 20
	for _, dth := range []int{-3, 0} {
		n := newNet(t, Options{Seed: 1, Duration: 500 * clock.Microsecond})
		n.sw("sw", 2, 100e9, func(c *switchcore.Config) {
			c.BufferPools[switchcore.IngressLosslessPool].Size = pool
			c.BufferProfiles[switchcore.LosslessPGProfile].DynamicTh = dth
			c.Ports[1].Speed = 10e9
		})
		n.host("h1", FabricRoCE)
		n.host("h2", FabricRoCE)
		n.link("h1", 0, "sw", 0, 100e9, clock.Microsecond)
		n.link("h2", 0, "sw", 1, 10e9, clock.Microsecond)
		n.flow(FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, DSCP: 26, Priority: -1, PMTU: 4096})
		n.must(n.s.Start())
		sw := n.s.Switch("sw")
		xoffAt := -1
		sw.SetTrace(func(ev switchcore.TraceEvent) {
			if ev.Kind == switchcore.TraceXoff && ev.Port == 0 && xoffAt < 0 {
				xoffAt, _ = sw.PGOccupancy(0, 3)
			}
		})
		r := n.run()
		a := 1.0
		for i := 0; i < dth; i++ {
			a *= 2
		}
		for i := 0; i > dth; i-- {
			a /= 2
		}
		want := int(pool * a / (1 + a))
		mtu := 4096 + 100
		drops, _ := r.SwitchDrops()
		t.Logf("dynamic_th %d (alpha %v): XOFF at shared occupancy %d B, S*a/(1+a) = %d B, difference %d B (one MTU %d), drops %d",
			dth, a, xoffAt, want, xoffAt-want, mtu, drops)
		if xoffAt < 0 || xoffAt < want-mtu || xoffAt > want+mtu {
			t.Fatalf("dynamic_th %d: XOFF at %d, want %d +- %d", dth, xoffAt, want, mtu)
		}
		if drops != 0 {
			t.Fatalf("%d drops", drops)
		}
	}
}

// TestLeafSpineSmall: a small two-tier fabric under 50% Poisson load is
// lossless, delivers every packet in order, and repeats with its seed.
func TestLeafSpineSmall(t *testing.T) {
	run := func() *Results { return leafSpine(t, 4, 2, 4, 100e9, 0.5, clock.Millisecond).run() }
	r := run()
	drops, _ := r.SwitchDrops()
	var tx, rx, gaps uint64
	var msgs int
	for _, f := range r.Flows {
		tx += f.TxBytes
		rx += f.RxBytes
		gaps += f.PSNGaps
		msgs += f.MessagesDone
	}
	t.Logf("leaf-spine 16 hosts, 50%% load, 1 ms: %d messages done, sent %d B, received %d B (in flight at the end %d B), drops %d, PSN gaps %d, %d events",
		msgs, tx, rx, tx-rx, drops, gaps, r.Events)
	if drops != 0 || gaps != 0 || msgs == 0 {
		t.Fatalf("drops %d gaps %d messages %d", drops, gaps, msgs)
	}
	if !equalResults(r, run()) {
		t.Fatal("same seed, different results")
	}
}
