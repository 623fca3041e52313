package swd

import (
	"testing"
	"time"
)

// TestNICLinkBothWays: on a link to an emunic (which paces its frames but
// emulates no wire) the switch emulates the wire in both directions: a
// frame from h1 to h2 crosses two delays (h1's link into the switch and
// h2's out of it), and loss set on h1's port drops what h1 sends too.
// Before, only the switch's egress was emulated: one delay, and a lossy
// link lost frames in one direction only.
func TestNICLinkBothWays(t *testing.T) {
	td := startTestDaemon(t, true)
	var st Response
	const delay = 20 * time.Millisecond
	for _, p := range []string{"p1", "p2"} {
		td.call(t, Request{Op: "link", Port: p, Delay: "20ms"}, &st)
		if !st.OK {
			t.Fatalf("link %s delay: %+v", p, st)
		}
	}
	f := udpFrame(100, 0)
	t0 := time.Now()
	send(t, td.link[0], f)
	recv(t, td.link[1], 1)
	// A lower bound only: the wall clock may add, never take away.
	if d := time.Since(t0); d < 2*delay {
		t.Errorf("h1 -> h2 took %v, want at least %v (two links of %v)", d, 2*delay, delay)
	}

	one := 1.0
	td.call(t, Request{Op: "link", Port: "p1", Loss: &one}, &st)
	send(t, td.link[0], f, f, f)
	waitFor(t, "losses on the way in", func() bool { return td.counters(t, "p1")["link_loss_rx"] == 3 })
	if c := td.counters(t, "p2"); c["tx_packets_phy"] != 1 {
		t.Errorf("p2 sent %d frames, want the first one only", c["tx_packets_phy"])
	}
}
