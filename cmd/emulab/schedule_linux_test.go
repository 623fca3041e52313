package main

import (
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
)

// TestUpLinkSchedule: with --schedule a link's schedule in the lab file
// runs in a real lab too, counted from the moment up has brought the lab
// up: the switch port goes down and comes back, with emunic hosts and with
// TAP hosts (whose links are TAP ports of the switch), and traffic crosses
// it again afterwards. Without --schedule up leaves it to the simulator and
// says so.
func TestUpLinkSchedule(t *testing.T) {
	e := newUpEnv(t)
	for _, hosts := range []string{"nic", "tap"} {
		t.Run(hosts, func(t *testing.T) {
			l := e.lab(t, "testdata/up/schedule.yaml")
			out, errOut, code := e.run(t, "up", "--hosts", hosts, "--schedule", l.file)
			if code != 0 || !strings.Contains(errOut, "schedule of 2 change(s) armed on sw1:p2") || strings.Contains(errOut, "note: link") {
				t.Fatalf("up --schedule: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			socks := recordedSockets(t, e.state, l.name)
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
			// The down step is due 300 ms after up armed it: a loaded
			// machine may get here later, so only the pending up step is
			// certain.
			if p := p2(); p.SchedulePending == 0 {
				t.Fatalf("right after up: sw1:p2 %+v, want the schedule pending", p)
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
	t.Run("without --schedule", func(t *testing.T) {
		l := e.lab(t, "testdata/up/schedule.yaml")
		out, errOut, code := e.run(t, "up", "--hosts", "tap", l.file)
		if code != 0 || !strings.Contains(errOut, "note: link h2:eth0-sw1:p2 has a schedule (2 change(s)); it runs in the simulator") || strings.Contains(errOut, "armed") {
			t.Fatalf("up: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		socks := recordedSockets(t, e.state, l.name)
		time.Sleep(500 * time.Millisecond) // past the schedule's first step
		e.ping(t, l, "h1", "h2")
		e.down(t, l, socks)
	})
}
