package nicd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/rt"
)

func ptr[T any](v T) *T { return &v }

// TestNICWire: between two NICs each emunic emulates the wire toward
// itself. Loss drops every frame before the NIC sees it (link_loss_rx),
// corruption damages it on the way (link_corrupt_rx), a delay holds it at
// least that long, status shows the wire, and what is on the wire when
// the cable is pulled is gone (link_rx_admin_down). An emunic across from
// a switch port leaves the wire to the switch and refuses to change it.
func TestNICWire(t *testing.T) {
	d, ctl := pairOfDaemons(t, testLab(t, ""))
	c := dial(t, ctl[1])
	var times [8]uint16
	times[3] = 10
	pfc := func(n int) {
		for range n {
			d[0].Do(func() { d[0].NIC().SendPFC(1<<3, &times) })
		}
	}
	counts := func() (pause, rx uint64, tr map[string]uint64) {
		r, err := c.Counters()
		if err != nil {
			t.Fatal(err)
		}
		return r.Ports[0].Counters["rx_pause_ctrl_phy"], r.Ports[0].Counters["rx_packets_phy"], r.Transport
	}
	set := func(req Request) {
		t.Helper()
		req.Op = "link"
		if _, err := c.Call(&req, -1); err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
	}

	set(Request{Loss: ptr(1.0)})
	if st, err := c.Status(); err != nil || st.Wire == nil || st.Wire.Loss != 1 || st.Wire.Delay != "1us" {
		t.Fatalf("status with loss 1: %+v %v", st.Wire, err)
	}
	pfc(3)
	waitFor(t, "three frames lost on the wire", func() bool { _, _, tr := counts(); return tr["link_loss_rx"] == 3 })
	if pause, rx, _ := counts(); pause != 0 || rx != 0 {
		t.Errorf("the NIC saw frames the wire lost: %d pauses, %d frames", pause, rx)
	}

	set(Request{Loss: ptr(0.0), Corrupt: ptr(1.0)})
	pfc(2)
	waitFor(t, "two frames damaged on the wire", func() bool { _, rx, tr := counts(); return tr["link_corrupt_rx"] == 2 && rx == 2 })

	set(Request{Corrupt: ptr(0.0), Delay: "30ms"})
	if st, err := c.Status(); err != nil || st.Wire == nil || st.Wire.Delay != "30ms" || st.Wire.Corrupt != 0 {
		t.Fatalf("status with delay 30ms: %+v %v", st.Wire, err)
	}
	before, _, _ := counts()
	t0 := time.Now()
	pfc(1)
	waitFor(t, "the pause across 30 ms of wire", func() bool { p, _, _ := counts(); return p == before+1 })
	if el := time.Since(t0); el < 30*time.Millisecond-rt.ReleaseSlack.Duration() {
		t.Errorf("the frame crossed a 30 ms wire in %v", el)
	}

	// A frame on the wire when the cable is pulled never arrives.
	set(Request{Delay: "10s"})
	pfc(1)
	waitFor(t, "a frame on the wire", func() bool {
		held := 0
		d[1].Do(func() { held = d[1].wire.line.Held() })
		return held == 1
	})
	set(Request{State: "down"})
	set(Request{State: "up", Delay: "0"})
	if p, _, tr := counts(); p != before+1 || tr["link_rx_admin_down"] != 1 {
		t.Errorf("after the cable was pulled under a frame: %d pauses (want %d), link_rx_admin_down %d (want 1)", p, before+1, tr["link_rx_admin_down"])
	}

	// Toward a switch the wire is the switch port's.
	spec := specFrom(t, `name: sw
topology:
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
`)
	a, _, err := rt.SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "h1.sock")
	h1, err := Start(Options{Spec: spec, Node: "h1", Link: a, Control: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	sc := dial(t, sock)
	if _, err := sc.Call(&Request{Op: "link", Loss: ptr(0.1)}, -1); err == nil || !strings.Contains(err.Error(), "set on the switch port") {
		t.Errorf("loss on an emunic across from a switch: %v", err)
	}
	if st, err := sc.Status(); err != nil || st.Wire != nil {
		t.Errorf("status of an emunic across from a switch shows a wire: %+v %v", st.Wire, err)
	}
}
