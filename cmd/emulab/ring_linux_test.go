package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
)

// TestUpRingNoBroadcastStorm brings up three switches in a ring with a
// host on each (root; CI runs as root). The switch links form a cycle, so
// a flooded broadcast would circulate for ever between the emuswitch
// processes unless flooding follows a spanning tree, which each switch
// computes, and again when a link goes down. Pings cross the ring, broadcasts
// from a host are flooded to the other hosts a bounded number of times,
// and no switch receives a flood on a port it blocks (both ends of a
// blocked link agree). Both host modes: TAP ports of the switches, and
// emunic hosts (whose kernels' broadcasts cross the NIC first).
func TestUpRingNoBroadcastStorm(t *testing.T) {
	e := newUpEnv(t)
	needTool(t, "ping")
	t.Run("tap", func(t *testing.T) { testUpRing(t, e, "tap") })
	t.Run("nic", func(t *testing.T) { testUpRing(t, e, "nic") })
}

func testUpRing(t *testing.T, e *upEnv, hosts string) {
	l := e.lab(t, "testdata/up/ring3.yaml")
	socks := e.up(t, l, hosts)

	// The tree is a BFS from sw1: sw1-sw2 and sw1-sw3 (sw3:p2-sw1:p3)
	// are in it, sw2:p2-sw3:p3 is not. Each switch computes it (no
	// --no-flood on the command line) and says so in its status.
	blockedPorts := func() map[string]bool {
		out := map[string]bool{}
		for _, sw := range []string{"sw1", "sw2", "sw3"} {
			var st swd.StatusResponse
			ctl := filepath.Join(e.state, l.name, "sock", "ctl-"+sw+".sock")
			if err := lab.ControlRequest(ctl, swd.Request{Op: "status"}, &st, 5*time.Second); err != nil {
				t.Fatalf("status of %s: %v", sw, err)
			}
			for _, p := range st.Ports {
				if p.NoFlood {
					out[sw+":"+p.Port] = true
				}
			}
		}
		return out
	}
	// The switches' advertisements as their links came up settle within
	// milliseconds of up.
	waitFor(t, "the tree over every link (sw2:p2 and sw3:p3 out of flooding)", func() bool {
		got := blockedPorts()
		return len(got) == 2 && got["sw2:p2"] && got["sw3:p3"]
	})
	for _, sw := range []string{"sw1", "sw2", "sw3"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.pid(t, l, lab.SwitchBinary+"-"+sw)))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("--no-flood")) {
			t.Errorf("emuswitch %s command line %q: the daemon computes its tree", sw, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}

	e.ping(t, l, "h1", "h2")
	e.ping(t, l, "h1", "h3")
	e.ping(t, l, "h2", "h3")

	// Broadcasts from h1 to its /24 (the kernel sends them to
	// ff:ff:ff:ff:ff:ff, or ARPs for the address by broadcast). Nobody
	// answers an echo to a broadcast address by default, so the exit
	// status is not looked at; what matters is what the switches flood.
	a := netip.MustParseAddr(l.ip("h1")).As4()
	bcast := netip.AddrFrom4([4]byte{a[0], a[1], a[2], 255}).String()
	e.run(t, "exec", l.node("h1"), "--", "ping", "-b", "-c", "5", "-i", "0.2", "-W", "1", bcast)
	// More unicast afterwards: a storm, had one started, would be
	// counting for all this time.
	e.ping(t, l, "h3", "h1")

	var floodTx, floodRx, blocked uint64
	for _, sw := range []string{"sw1", "sw2", "sw3"} {
		var r swd.CountersResponse
		ctl := filepath.Join(e.state, l.name, "sock", "ctl-"+sw+".sock")
		if err := lab.ControlRequest(ctl, swd.Request{Op: "counters"}, &r, 5*time.Second); err != nil {
			t.Fatalf("counters of %s: %v", sw, err)
		}
		for _, p := range r.Ports {
			floodTx += p.Counters["flood_tx"]
			floodRx += p.Counters["flood_rx"]
			blocked += p.Counters["flood_blocked_rx"]
			t.Logf("%s:%s flood_rx %d flood_tx %d flood_blocked_rx %d", sw, p.Port, p.Counters["flood_rx"], p.Counters["flood_tx"], p.Counters["flood_blocked_rx"])
		}
	}
	// Each broadcast from h1 is flooded 4 times along the tree (sw1 to
	// sw2 and sw3, each of them to its host); a handful of them stays far
	// below 100, a storm does not.
	if floodTx == 0 || floodRx == 0 {
		t.Errorf("flood_tx %d flood_rx %d: the broadcasts were not flooded at all", floodTx, floodRx)
	}
	if floodTx >= 100 || floodRx >= 100 {
		t.Errorf("flood_tx %d flood_rx %d after a handful of broadcasts: a broadcast storm", floodTx, floodRx)
	}
	if blocked != 0 {
		t.Errorf("flood_blocked_rx %d: a switch flooded onto a link its peer blocks", blocked)
	}

	// The sw3-sw1 link goes down: the switches learn it from each other
	// (link-state advertisements), route h3 -> h1 the long way round and
	// take the link that was out of the tree into it, so a host that must
	// ARP again still reaches the other (both were black-holed before:
	// static routes, a tree fixed at up).
	e.mustOps(t, "link", "set", l.name+"/sw1:p3", "down")
	waitFor(t, "the tree over the links left", func() bool {
		got := blockedPorts()
		return len(got) == 2 && got["sw1:p3"] && got["sw3:p2"]
	})
	for _, h := range []string{"h1", "h3"} {
		e.run(t, "exec", l.node(h), "--", "ip", "neigh", "flush", "dev", "eth0")
	}
	e.ping(t, l, "h3", "h1")
	e.ping(t, l, "h1", "h3")
	e.mustOps(t, "link", "set", l.name+"/sw1:p3", "up")
	waitFor(t, "the tree back as it was", func() bool {
		got := blockedPorts()
		return len(got) == 2 && got["sw2:p2"] && got["sw3:p3"]
	})
	e.ping(t, l, "h3", "h1")

	// Between two switches each end emulates what it sends: a delay set
	// on one end is set on both, and holds both ways.
	out := e.mustOps(t, "link", "set", l.name+"/sw1:p2", "delay", "20ms")
	for _, end := range []string{"sw1:p2", "sw2:p3"} {
		if !regexp.MustCompile(end + `: link up, rate 10G \(port speed 10G\), delay 20ms`).MatchString(out) {
			t.Errorf("link set sw1:p2 delay 20ms printed %q, want %s with the delay", out, end)
		}
	}
	if rtt, err := e.pingRTT(t, l, "h1", "h2"); err != nil || rtt < 40 {
		t.Errorf("ping h1 -> h2 across 20 ms each way: %v ms, %v; want at least 40 ms", rtt, err)
	}
	e.down(t, l, socks)
}
