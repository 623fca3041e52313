package switchcore

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// TestDropReasons: every drop lands on exactly one typed reason.
func TestDropReasons(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(3, 100e9))
	for i := range 3 {
		s.Attach(i, &sink{clk: clk})
	}
	big := roce(26)
	big.size = 1600 // IP packet 1586 > MTU 1500
	deliver(s, clk, 0, big.build(pool))
	bad := roce(26).build(pool)
	bad.Data[14+10] ^= 0xFF // IPv4 header checksum
	deliver(s, clk, 0, bad)
	short := pool.Get(10)
	deliver(s, clk, 0, short)
	s.SetPortUp(1, false)
	deliver(s, clk, 0, roce(26).build(pool)) // to macB on the down port
	deliver(s, clk, 1, roce(26).build(pool)) // arriving on the down port
	c := s.Counters(0)
	want := map[DropReason]uint64{DropMTUExceeded: 1, DropMalformed: 2}
	for r, n := range want {
		if c.Drops[r] != n {
			t.Errorf("%v: %d, want %d", r, c.Drops[r], n)
		}
	}
	if c1 := s.Counters(1); c1.Drops[DropLinkDown] != 2 || c1.LinkDownEvents != 1 {
		t.Errorf("link_down drops %d events %d", c1.Drops[DropLinkDown], c1.LinkDownEvents)
	}
	if sh, h := s.PGOccupancy(0, 3); sh != 0 || h != 0 {
		t.Errorf("buffer not released after egress drop: %d %d", sh, h)
	}
	if pool.Outstanding != 0 {
		t.Errorf("%d frames leaked", pool.Outstanding)
	}
}

// TestTTL: routed packets lose one TTL with a valid checksum; TTL 1 drops.
func TestTTL(t *testing.T) {
	c := testConfig(2, 100e9)
	c.L2 = nil
	c.DecrementTTL = true
	c.Routes = []Route{{Prefix: mustPrefix("10.0.0.0/8"), Ports: []int{1}}}
	s, clk, pool := newTestSwitch(t, c)
	out := &sink{clk: clk, keep: true}
	s.Attach(1, out)
	deliver(s, clk, 0, roce(26).build(pool))
	f := roce(26).build(pool)
	wire.IPv4(f.Data[14:]).SetTTLWithChecksumUpdate(1)
	deliver(s, clk, 0, f)
	clk.runUntil(clock.Microsecond)
	ip := wire.IPv4(out.frames[0].data[14:])
	if ip.TTL() != 63 || !ip.IsChecksumValid() || len(out.frames) != 1 {
		t.Errorf("TTL %d checksum ok %v frames %d", ip.TTL(), ip.IsChecksumValid(), len(out.frames))
	}
	if s.Counters(0).Drops[DropTTLExpired] != 1 {
		t.Error("ttl_expired not counted")
	}
}

// TestCounterNames: the dump uses the mlx5 / SONiC names.
func TestCounterNames(t *testing.T) {
	s, _, _ := newTestSwitch(t, testConfig(1, 100e9))
	var names []string
	s.Counters(0).Each(func(n string, _ uint64) { names = append(names, n) })
	all := strings.Join(names, " ")
	for _, n := range []string{"rx_prio3_pause", "tx_prio3_pause_duration", "rx_prio3_pause_duration",
		"pg3_shared_watermark", "pg3_headroom_watermark", "queue3_watermark", "prio3_drop_lossy_threshold",
		"pfcwd_prio3_storm_detected", "pfcwd_prio3_rx_drop", "tx_prio3_ecn_marked", "headroom_overflow", "pg3_headroom_overflow"} {
		if !strings.Contains(all, n) {
			t.Errorf("counter %s missing", n)
		}
	}
	// Admitted beyond the headroom is not a drop, and not named one.
	if strings.Contains(all, "drop_headroom_overflow") {
		t.Error("headroom overflow named as a drop")
	}
}

// TestConfigValidation: bad configurations are refused with the field named.
func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		mod  func(c *Config)
		want string
	}{
		{func(c *Config) { c.BufferProfiles[LosslessPGProfile].DynamicTh = 8 }, "dynamic_th"},
		{func(c *Config) { c.Ports[0].BufferPG[3] = "nope" }, "BUFFER_PG"},
		{func(c *Config) { c.BufferProfiles["x"] = &BufferProfile{Pool: "nopool"} }, "unknown pool"},
		{func(c *Config) { c.WREDProfiles["w"] = &WREDProfile{GreenMinThreshold: 2, GreenMaxThreshold: 1} }, "WRED_PROFILE"},
		{func(c *Config) { c.Ports[0].Speed = 0 }, "speed"},
		{func(c *Config) { c.Routes = []Route{{Prefix: mustPrefix("10.0.0.0/8"), Ports: []int{9}}} }, "out of range"},
		{func(c *Config) { c.PFCWD.Enabled = true; c.PFCWD.PollInterval = 0 }, "PFC_WD"},
		{func(c *Config) { c.PFCQuanta = 100; c.PFCRefresh = clock.Microsecond }, "PFC refresh"},
		{func(c *Config) { c.Fabric = FabricIB; c.IB.SL2VL[0] = 9 }, "SL2VL"},
		{func(c *Config) { c.Fabric = FabricIB; c.IB.BufferBlocks = 4000 }, "buffer blocks"},
	} {
		c := testConfig(2, 100e9)
		tc.mod(c)
		_, err := New(c, &manualClock{}, poolForTest())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
}

// TestStartPortDown: a port taken down before it ever carried a link has
// lost no link (link_down_events_phy 0); once up, each loss counts.
func TestStartPortDown(t *testing.T) {
	s, clk, pool := newTestSwitch(t, testConfig(2, 100e9))
	for i := range 2 {
		s.Attach(i, &sink{clk: clk})
	}
	s.StartPortDown(1)
	s.StartPortDown(1)
	deliver(s, clk, 0, roce(26).build(pool)) // to the port not yet up
	c := s.Counters(1)
	if c.LinkDownEvents != 0 || c.Drops[DropLinkDown] != 1 {
		t.Fatalf("after StartPortDown: events %d, link_down drops %d; want 0, 1", c.LinkDownEvents, c.Drops[DropLinkDown])
	}
	s.SetPortUp(1, true)
	s.SetPortUp(1, false)
	s.SetPortUp(1, false)
	s.SetPortUp(1, true)
	s.SetPortUp(1, false)
	s.StartPortDown(1)
	if c := s.Counters(1); c.LinkDownEvents != 2 {
		t.Errorf("two links lost: events %d", c.LinkDownEvents)
	}
}
