package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
)

// TestWriteLinkResult: link set says a switch port's link as status says
// it (lab.SwitchPortLink), and names the far end when the link is down
// because of it: a port set up whose far end is set down is "down
// (peer)", not "down (no peer)".
func TestWriteLinkResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		port swd.PortStatus
		want string
	}{
		{"up", swd.PortStatus{Connected: true, AdminUp: true, Up: true},
			"sw2:p2: link up, rate 100G (port speed 100G), delay 1us, loss 0, corrupt 0\n"},
		{"admin", swd.PortStatus{Connected: true},
			"sw2:p2: link down (admin), rate 100G (port speed 100G), delay 1us, loss 0, corrupt 0\n"},
		{"peer", swd.PortStatus{Connected: true, AdminUp: true, PeerDown: true},
			"sw2:p2: link down (peer), rate 100G (port speed 100G), delay 1us, loss 0, corrupt 0; the far end, pc-link/sw1:p3, is set down: emulab link set pc-link/sw1:p3 up\n"},
		{"silent", swd.PortStatus{Connected: true, AdminUp: true, PeerDown: true, PeerSilent: true},
			"sw2:p2: link down (peer silent), rate 100G (port speed 100G), delay 1us, loss 0, corrupt 0; the far end, pc-link/sw1:p3, sends nothing (is its daemon running? emulab status)\n"},
		{"waiting", swd.PortStatus{AdminUp: true},
			"sw2:p2: link waiting, rate 100G (port speed 100G), delay 1us, loss 0, corrupt 0; nothing is connected from the far end, pc-link/sw1:p3, yet\n"},
	} {
		p := tc.port
		p.Port, p.Rate, p.Speed, p.Delay = "p2", "100G", "100G", "1us"
		raw, err := json.Marshal(swd.StatusResponse{OK: true, Port: &p})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if err := writeLinkResult(&sb, lab.DefaultStateRoot, "sw2:p2", "pc-link/sw1:p3", "emulab status", &lab.LinkChange{State: "up"}, raw); err != nil {
			t.Fatal(err)
		}
		if sb.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, sb.String(), tc.want)
		}
		if !strings.Contains(tc.want, "link "+lab.SwitchPortLink(p.AdminUp, p.Connected, p.Up, p.PeerDown, p.PeerSilent)+",") {
			t.Errorf("%s: not status's word", tc.name)
		}
	}
}
