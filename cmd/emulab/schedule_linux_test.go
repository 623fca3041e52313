package main

import (
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
)

// TestUpLinkSchedule: a link's schedule in the lab file runs in a real
// lab too, counted from the moment up has brought the lab up: the switch
// port goes down and comes back, with emunic hosts and with TAP hosts
// (whose links are TAP ports of the switch), and traffic crosses it
// again afterwards.
func TestUpLinkSchedule(t *testing.T) {
	e := newUpEnv(t)
	for _, hosts := range []string{"nic", "tap"} {
		t.Run(hosts, func(t *testing.T) {
			l := e.lab(t, "testdata/up/schedule.yaml")
			socks := e.up(t, l, hosts)
			st, err := lab.ReadStatus(e.state, l.name)
			if err != nil || st.Info == nil {
				t.Fatalf("status: %v", err)
			}
			var control string
			for _, n := range st.Info.Nodes {
				if n.Name == "sw1" {
					control = n.Control
				}
			}
			p2 := func() swd.PortStatus {
				var r swd.StatusResponse
				if err := lab.ControlRequest(control, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Ports {
					if p.Port == "p2" {
						return p
					}
				}
				t.Fatalf("sw1 has no p2: %+v", r.Ports)
				return swd.PortStatus{}
			}
			if p := p2(); !p.AdminUp || p.SchedulePending == 0 {
				t.Fatalf("right after up: sw1:p2 %+v, want up with the schedule pending", p)
			}
			var sawDown bool
			deadline := time.Now().Add(20 * time.Second)
			for {
				p := p2()
				sawDown = sawDown || !p.AdminUp
				if sawDown && p.AdminUp && p.SchedulePending == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("sw1:p2 %+v after 20 s (down seen: %v)", p, sawDown)
				}
				time.Sleep(10 * time.Millisecond)
			}
			e.ping(t, l, "h1", "h2")
			e.down(t, l, socks)
		})
	}
}
