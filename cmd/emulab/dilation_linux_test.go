package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nicd"
	"github.com/emufabric/emufabric/swd"
)

// TestPerfTimeDilation brings up a lab file with time_dilation: 4 and
// checks that every daemon runs the dilated clock and that `emulab perf`
// reports in the lab's time. The checks are bounds that hold on any
// machine, however loaded: the engine paces its frames at the link rate in
// the lab's time, so a reported average can never exceed the 10G link; and
// the lab's time of the measurement is at most the command's wall time
// divided by 4, so the average reported in it is at least the bytes moved
// times 4 over the command's wall time (a report in wall time would be
// about a quarter of that).
func TestPerfTimeDilation(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/dilated.yaml")
	if l.spec.TimeDilation != 4 {
		t.Fatalf("lab file's time_dilation decoded as %d", l.spec.TimeDilation)
	}
	out := e.mustRun(t, "up", "--hosts", "nic", l.file)
	if !strings.Contains(out, "time dilation 4: the emulated fabric runs 4 times slower than the wall clock") {
		t.Errorf("up does not say the lab is dilated:\n%s", out)
	}
	st, err := lab.ReadStatus(e.state, l.name)
	if err != nil || st.Info == nil {
		t.Fatalf("status: %v", err)
	}
	if st.Info.TimeDilation != 4 {
		t.Errorf("state records time_dilation %d", st.Info.TimeDilation)
	}
	for _, n := range st.Info.Nodes {
		switch n.Kind {
		case lab.KindSwitch:
			var r swd.StatusResponse
			if err := lab.ControlRequest(n.Control, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil || r.TimeDilation != 4 {
				t.Errorf("%s: status time_dilation %d, %v", n.Name, r.TimeDilation, err)
			}
		case lab.KindNIC:
			var r nicd.Response
			if err := lab.ControlRequest(n.Control, map[string]string{"op": "status"}, &r, 5*time.Second); err != nil || r.Status == nil || r.Status.TimeDilation != 4 {
				t.Errorf("%s: status %+v, %v", n.Name, r.Status, err)
			}
		}
	}
	if out := e.mustRun(t, "status", l.name); !strings.Contains(out, ", time dilation 4\n") {
		t.Errorf("status does not say the lab is dilated:\n%s", out)
	}
	// Kernel traffic crosses a dilated lab too, four times slower.
	e.ping(t, l, "h1", "h2")

	const size, iters = 65536, 1000
	js := filepath.Join(t.TempDir(), "w.json")
	t0 := time.Now()
	out = e.mustRun(t, "perf", "write_bw", l.node("h1"), l.node("h2"), "-s", "65536", "-n", "1000", "--report_gbits", "--out_json_file", js)
	wall := time.Since(t0)
	if !strings.Contains(out, " Time dilation   : 4 (rates and times in the lab's time") || !strings.Contains(out, "data check: the destination memory") {
		t.Errorf("write_bw output:\n%s", out)
	}
	f := perfRow(t, out, perfHeadBWGbits)
	avg := perfFloat(t, f[3])
	floor := float64(size*iters) * 8 / 1e9 * 4 / wall.Seconds()
	t.Logf("write_bw on a 10G link dilated 4x: %.2f Gb/s in the lab's time (command took %v: at least %.2f)", avg, wall.Round(time.Millisecond), floor)
	if avg > 10 {
		t.Errorf("average %.2f Gb/s exceeds the 10G link", avg)
	}
	if avg+0.01 < floor { // the table rounds to 0.01
		t.Errorf("average %.2f Gb/s is below %.2f, the bytes over a quarter of the command's wall time: not in the lab's time", avg, floor)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TestInfo struct {
			TimeDilation int `json:"time_dilation"`
		} `json:"test_info"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.TestInfo.TimeDilation != 4 {
		t.Errorf("--out_json test_info.time_dilation %d, %v:\n%s", doc.TestInfo.TimeDilation, err, b)
	}
	e.mustRun(t, "down", l.name)
}
