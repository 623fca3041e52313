package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// `emulab perf` against a two-hosts lab brought up with emunic hosts, as
// a user runs it: every test kind, each flag that changes what runs, the
// data check, --out_json, and the errors for bad nodes and flags.

// perfRow finds the one result row after the table header and returns
// its fields.
func perfRow(t *testing.T, out, header string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, ln := range lines {
		if ln == header && i+1 < len(lines) {
			return strings.Fields(lines[i+1])
		}
	}
	t.Fatalf("no table with header %q:\n%s", header, out)
	return nil
}

func perfFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func TestPerfLab(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	socks := e.up(t, l, "nic")
	h1, h2 := l.node("h1"), l.node("h2")
	dir := t.TempDir()

	t.Run("write_bw", func(t *testing.T) {
		js := filepath.Join(dir, "write_bw.json")
		out := e.mustRun(t, "perf", "write_bw", h1, h2, "-s", "65536", "-m", "4096", "-n", "2000", "--report_gbits", "--out_json", "--out_json_file", js)
		for _, want := range []string{perfLine, "RDMA_Write BW Test", " Mtu             : 4096[B]", " TX depth        : 128", " CQ Moderation   : 100",
			"GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01", "GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:02", "data check: the destination memory"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// perftest's %#04x, %#06x, %#08x and %#016Lx: a LID of 0 is 0000.
		if !regexp.MustCompile(`(?m)^ local address: LID 0000 QPN 0x[0-9a-f]{4,} PSN 0x[0-9a-f]{4,6} RKey 0x[0-9a-f]{6,} VAddr 0x[0-9a-f]{14}$`).MatchString(out) {
			t.Errorf("no local address line:\n%s", out)
		}
		f := perfRow(t, out, perfHeadBWGbits)
		if len(f) != 5 || f[0] != "65536" || f[1] != "2000" {
			t.Fatalf("row %q", f)
		}
		avg := perfFloat(t, f[3])
		if avg <= 0 || perfFloat(t, f[2]) < avg {
			t.Errorf("peak %s below average %s", f[2], f[3])
		}
		// MsgRate agrees with the average: Gb/s = Mpps x 65536 x 8 / 1000.
		if r := perfFloat(t, f[4]) * 65536 * 8 / 1000; r < avg*0.95 || r > avg*1.05 {
			t.Errorf("MsgRate %s Mpps is %.2f Gb/s, the average says %.2f", f[4], r, avg)
		}
		t.Logf("write_bw -s 65536 -m 4096 -n 2000: average %.2f Gb/s, peak %s Gb/s (issue target >= 10)", avg, f[2])
		// What limits it, for the log: frames the switch's transport could
		// not take (each costs a go-back-N retransmission) and the
		// retransmissions themselves.
		if st, err := lab.ReadStatus(e.state, l.name); err == nil && st.Info != nil {
			for _, n := range st.Info.Nodes {
				switch n.Name {
				case "sw1":
					c := switchCounters(t, n.Control)
					t.Logf("  sw1:p2 transport_tx_queue_drop %d of %d frames", c["p2"]["transport_tx_queue_drop"], c["p2"]["tx_packets_phy"])
					// The links are shared-memory rings, whose readers
					// slept at least before the first frame.
					if c["p1"]["transport_rx_ring_sleeps"] == 0 || c["p2"]["transport_rx_ring_sleeps"] == 0 {
						t.Errorf("sw1: no ring sleeps counted on p1 (%d) or p2 (%d)", c["p1"]["transport_rx_ring_sleeps"], c["p2"]["transport_rx_ring_sleeps"])
					}
					t.Logf("  sw1:p2 transport_tx_ring_full %d (the ring toward h2 was full)", c["p2"]["transport_tx_ring_full"])
				case "h1":
					c := nicCounters(t, n.Control)
					t.Logf("  h1 roce_adp_retrans %d, packet_seq_err %d, local_ack_timeout_err %d", c["hw.roce_adp_retrans"], c["hw.packet_seq_err"], c["hw.local_ack_timeout_err"])
					if c["transport.link_rx_ring_sleeps"] == 0 {
						t.Errorf("h1: no ring sleeps counted (transport.link_rx_ring_sleeps)")
					}
					t.Logf("  h1 link_tx_ring_full %d (the ring toward sw1 was full)", c["transport.link_tx_ring_full"])
				}
			}
		}

		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TestInfo struct {
				Test   string `json:"test"`
				Mtu    int    `json:"Mtu"`
				BWUnit string `json:"BW_unit"`
			} `json:"test_info"`
			Results struct {
				MsgSize     int     `json:"MsgSize"`
				NIterations int     `json:"n_iterations"`
				BWPeak      float64 `json:"BW_peak"`
				BWAverage   float64 `json:"BW_average"`
				MsgRate     float64 `json:"MsgRate"`
				Verified    bool    `json:"data_verified"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("--out_json: %v\n%s", err, b)
		}
		r := doc.Results
		if doc.TestInfo.Test != "RDMA_Write BW Test" || doc.TestInfo.Mtu != 4096 || doc.TestInfo.BWUnit != "Gb/sec" ||
			r.MsgSize != 65536 || r.NIterations != 2000 || r.BWAverage != avg || strconv.FormatFloat(r.BWPeak, 'f', 2, 64) != f[2] ||
			strconv.FormatFloat(r.MsgRate, 'f', 6, 64) != f[4] || !r.Verified {
			t.Errorf("--out_json does not say what the table says (%q):\n%s", f, b)
		}
	})

	t.Run("read_bw", func(t *testing.T) {
		out := e.mustRun(t, "perf", "read_bw", h1, h2, "-s", "16384", "-n", "500", "-Q", "10", "-t", "64", "-u", "16")
		if !strings.Contains(out, "RDMA_Read BW Test") || !strings.Contains(out, " CQ Moderation   : 10\n") || !strings.Contains(out, "data check") {
			t.Errorf("read_bw:\n%s", out)
		}
		if f := perfRow(t, out, perfHeadBW); f[0] != "16384" || f[1] != "500" || perfFloat(t, f[3]) <= 0 {
			t.Errorf("read_bw row %q", f)
		}
	})

	t.Run("send_bw-qps", func(t *testing.T) {
		out := e.mustRun(t, "perf", "send_bw", h1, h2, "-s", "8192", "-n", "400", "-q", "3", "-m", "1024", "--report_gbits")
		if !strings.Contains(out, "Send BW Test") || !strings.Contains(out, " Number of qps   : 3\t\t") || !strings.Contains(out, " Mtu             : 1024[B]") {
			t.Errorf("send_bw:\n%s", out)
		}
		// One address pair per QP; SEND names no remote memory.
		if n := strings.Count(out, " local address:"); n != 3 || strings.Contains(out, "RKey") {
			t.Errorf("%d local addresses (want 3), RKey printed %v:\n%s", n, strings.Contains(out, "RKey"), out)
		}
		if f := perfRow(t, out, perfHeadBWGbits); f[0] != "8192" || f[1] != "400" || perfFloat(t, f[3]) <= 0 {
			t.Errorf("send_bw row %q", f)
		}
	})

	t.Run("write_bw-duration", func(t *testing.T) {
		out := e.mustRun(t, "perf", "write_bw", h1, h2, "-D", "1", "-s", "4096", "-Q", "1")
		f := perfRow(t, out, perfHeadBW)
		// perftest does not measure a peak in duration mode.
		if f[0] != "4096" || f[2] != "0.00" || perfFloat(t, f[1]) < 10 || perfFloat(t, f[3]) <= 0 {
			t.Errorf("duration row %q", f)
		}
		// perftest's defaults, -t 128 -Q 100: time mostly runs out between
		// two signaled requests, and the run must close with one of its
		// own (it used to wait ten seconds for a completion and fail).
		for _, test := range []string{"write_bw", "send_bw"} {
			out := e.mustRun(t, "perf", test, h1, h2, "-D", "1")
			if f := perfRow(t, out, perfHeadBW); f[0] != "65536" || perfFloat(t, f[1]) < 1 || perfFloat(t, f[3]) <= 0 {
				t.Errorf("%s -D 1 row %q:\n%s", test, f, out)
			}
		}
	})

	t.Run("write_bw-all", func(t *testing.T) {
		js := filepath.Join(dir, "all.json")
		out := e.mustRun(t, "perf", "write_bw", h1, h2, "-a", "-n", "5", "--out_json_file", js)
		var sizes []string
		for _, ln := range strings.Split(out, "\n") {
			if f := strings.Fields(ln); len(f) == 5 && f[1] == "5" {
				sizes = append(sizes, f[0])
			}
		}
		if len(sizes) != 23 || sizes[0] != "2" || sizes[22] != "8388608" {
			t.Errorf("-a sizes %v:\n%s", sizes, out)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			MsgSize  int  `json:"MsgSize"`
			Verified bool `json:"data_verified"`
		}
		var doc struct {
			Results    result   `json:"results"`
			AllResults []result `json:"all_results"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.AllResults) != 23 || doc.AllResults[0].MsgSize != 2 ||
			doc.AllResults[22].MsgSize != 1<<23 || !doc.AllResults[22].Verified || doc.Results != doc.AllResults[22] {
			t.Errorf("-a --out_json: %v\n%s", err, b)
		}
	})

	for _, c := range []struct{ test, title string }{
		{"write_lat", "RDMA_Write Latency Test"}, {"read_lat", "RDMA_Read Latency Test"}, {"send_lat", "Send Latency Test"},
	} {
		t.Run(c.test, func(t *testing.T) {
			js := filepath.Join(dir, c.test+".json")
			out := e.mustRun(t, "perf", c.test, h1, h2, "-n", "200", "-s", "64", "--out_json", "--out_json_file="+js)
			if !strings.Contains(out, c.title) || !strings.Contains(out, " TX depth        : 1\n") {
				t.Errorf("%s:\n%s", c.test, out)
			}
			f := perfRow(t, out, perfHeadLat)
			if len(f) != 9 || f[0] != "64" || f[1] != "200" {
				t.Fatalf("row %q", f)
			}
			v := make([]float64, 7)
			for i := range v {
				v[i] = perfFloat(t, f[2+i])
			}
			// min <= typical <= max, min <= avg <= max, 99% <= 99.9% <= max.
			if !(v[0] > 0 && v[0] <= v[2] && v[2] <= v[1] && v[0] <= v[3] && v[3] <= v[1] && v[5] <= v[6] && v[6] <= v[1]) {
				t.Errorf("latency statistics out of order: %q", f)
			}
			b, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Results map[string]any `json:"results"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			for i, k := range []string{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"} {
				if got, ok := doc.Results[k].(float64); !ok || strconv.FormatFloat(got, 'f', 2, 64) != f[2+i] {
					t.Errorf("results.%s = %v, the table says %s", k, doc.Results[k], f[2+i])
				}
			}
			if doc.Results["data_verified"] != true {
				t.Errorf("data_verified: %v", doc.Results["data_verified"])
			}
		})
	}
	t.Run("send_lat-duration", func(t *testing.T) {
		out := e.mustRun(t, "perf", "send_lat", h1, h2, "-D", "1")
		if f := perfRow(t, out, perfHeadLatDur); len(f) != 4 || f[0] != "2" || perfFloat(t, f[1]) < 10 || perfFloat(t, f[2]) <= 0 || perfFloat(t, f[3]) <= 0 {
			t.Errorf("duration latency row %q:\n%s", f, out)
		}
	})

	t.Run("bidirectional", func(t *testing.T) {
		// -b: both ways at once, each way's memory checked, the row the
		// sum of the two directions. -u 18 gives the daemons room on a
		// busy machine: two loops share its CPUs.
		for _, c := range []struct{ test, title string }{
			{"write_bw", "RDMA_Write Bidirectional BW Test"}, {"read_bw", "RDMA_Read Bidirectional BW Test"}, {"send_bw", "Send Bidirectional BW Test"},
		} {
			out := e.mustRun(t, "perf", c.test, h1, h2, "-b", "-s", "16384", "-n", "400", "-u", "18")
			if !strings.Contains(out, c.title) || strings.Count(out, " local address:") != 2 || !strings.Contains(out, "(1 size(s), both ways)") {
				t.Errorf("%s -b:\n%s", c.test, out)
			}
			if f := perfRow(t, out, perfHeadBW); f[0] != "16384" || f[1] != "400" || perfFloat(t, f[3]) <= 0 {
				t.Errorf("%s -b row %q", c.test, f)
			}
		}
	})

	t.Run("run_infinitely", func(t *testing.T) {
		// A row every -D seconds until Ctrl-C, which ends the run with
		// perftest's exit status (130, its death by SIGINT) and a closed
		// table; the JSON file holds every period reported.
		js := filepath.Join(dir, "inf.json")
		out, errOut, err := e.interruptAt(t, " 8192 ", "perf", "write_bw", h1, h2, "--run_infinitely", "-D", "1", "-s", "8192", "-u", "18", "-b", "--out_json_file", js)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errOut, "--run_infinitely ended after") {
			t.Fatalf("interrupted --run_infinitely: %v, stderr %q\n%s", err, errOut, out)
		}
		if f := perfRow(t, out, perfHeadBW); f[0] != "8192" || f[2] != "0.00" || perfFloat(t, f[1]) < 1 || perfFloat(t, f[3]) <= 0 {
			t.Errorf("--run_infinitely row %q", f)
		}
		if !strings.HasSuffix(out, perfLine+"\n") {
			t.Errorf("--run_infinitely: the table is not closed:\n%s", out)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TestInfo struct {
				Test          string `json:"test"`
				RunInfinitely bool   `json:"run_infinitely"`
				Duration      int    `json:"Duration"`
			} `json:"test_info"`
			AllResults []struct {
				MsgSize  int  `json:"MsgSize"`
				Verified bool `json:"data_verified"`
			} `json:"all_results"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || !doc.TestInfo.RunInfinitely || doc.TestInfo.Duration != 1 ||
			doc.TestInfo.Test != "RDMA_Write Bidirectional BW Test" || len(doc.AllResults) < 1 || !doc.AllResults[0].Verified || doc.AllResults[0].MsgSize != 8192 {
			t.Errorf("--run_infinitely --out_json_file: %v\n%s", err, b)
		}
		e.mustRun(t, "perf", "write_bw", h1, h2, "-n", "100")
	})

	t.Run("post_list-histogram", func(t *testing.T) {
		out := e.mustRun(t, "perf", "send_bw", h1, h2, "-l", "8", "-n", "800")
		if !strings.Contains(out, "Send Post List BW Test") || !strings.Contains(out, " Post List       : 8\n CQ Moderation   : 8\n") {
			t.Errorf("send_bw -l 8:\n%s", out)
		}
		if f := perfRow(t, out, perfHeadBW); f[1] != "800" || perfFloat(t, f[3]) <= 0 {
			t.Errorf("send_bw -l 8 row %q", f)
		}
		out = e.mustRun(t, "perf", "write_lat", h1, h2, "-n", "50", "-H", "-U")
		if n := strings.Count(out, "#, usec\n"); n != 2 || !regexp.MustCompile(`(?m)^50, [0-9.e+-]+$`).MatchString(out) {
			t.Errorf("write_lat -H -U: %d sample lists:\n%s", n, out)
		}
		// The row follows the header printed again after the samples.
		if f := perfRow(t, out[strings.LastIndex(out, perfLine+"\n"+perfHeadLat):], perfHeadLat); f[1] != "50" {
			t.Errorf("write_lat -H -U row %q", f)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		// Ctrl-C ends a run at once with a line that says so; the emunics
		// stop their loops with the closed connections, and the next run
		// works.
		// The table's header comes once the QPs are connected and the
		// handler is in place: the run is under way.
		_, errOut, err := e.interruptAt(t, "#bytes", "perf", "write_bw", h1, h2, "-D", "30")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errOut, "emulab perf: interrupted (interrupt)") {
			t.Errorf("interrupted run: %v, stderr %q", err, errOut)
		}
		e.mustRun(t, "perf", "write_bw", h1, h2, "-n", "100")
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"atomic_bw", h1, h2}, `unknown test "atomic_bw"`},
			{[]string{"write_bw", l.node("h7"), h2}, "SRC " + l.node("h7") + ": lab " + l.name + " has no node h7"},
			{[]string{"write_bw", h1, l.node("sw1")}, "DST " + l.node("sw1") + ": node sw1 of lab " + l.name + " is a switch, not a NIC host"},
			{[]string{"write_bw", h1, h1}, "SRC and DST are the same host (h1)"},
			{[]string{"write_bw", "nolab/h1", h2}, "SRC nolab/h1: lab nolab has no node h1"},
			{[]string{"write_bw", h1, "a;b"}, `has ';'`},
			{[]string{"write_bw", h1, h2, "-m", "1000"}, "-m/--mtu 1000"},
			{[]string{"write_bw", h1, h2, "-s", "0"}, "-s/--size 0"},
			{[]string{"write_bw", h1, h2, "-q", "0"}, "-q/--qp 0"},
			{[]string{"write_bw", h1, h2, "-Q", "2000"}, "-Q/--cq-mod 2000"},
			{[]string{"write_bw", h1, h2, "-D", "0"}, "-D/--duration 0"},
			{[]string{"write_bw", h1, h2, "-n", "100", "-D", "1"}, "-n/--iters 100 and -D/--duration 1"},
			{[]string{"write_lat", h1, h2, "-q", "2"}, "-q/--qp 2"},
			{[]string{"write_bw", h1, h2, "-u", "40"}, "-u/--qp-timeout 40"},
			{[]string{"write_bw", h1, h2, "-s", "x"}, "-s/--size x: a whole number of bytes"},
			{[]string{"write_bw", h1, h2, "--bogus"}, "unknown flag: --bogus"},
			{[]string{"write_lat", h1, h2, "-C"}, "-C/--report-cycles"},
			{[]string{"write_lat", h1, h2, "--run_infinitely"}, "--run_infinitely: the bandwidth tests only"},
			{[]string{"write_bw", h1}, "accepts 3 arg(s), received 2"},
			{[]string{"write_bw", h1, h2, "--out_json_file", filepath.Join(dir, "no", "such", "dir.json")}, "--out_json_file " + filepath.Join(dir, "no", "such", "dir.json")},
			{[]string{"write_bw", h1, h2, "--out_json", filepath.Join(dir, "r.json")}, "--out_json is a switch (perftest's) and takes no file"},
		} {
			out, errOut, code := e.run(t, "perf", c.args...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("emulab perf %q: exit %d, stderr %q; want an error with %q\n%s", c.args, code, errOut, c.want, out)
			}
		}
	})
	e.down(t, l, socks)

	// A lab whose hosts are plain TAPs of the switch has no NIC to drive.
	socks = e.up(t, l, "tap")
	if _, errOut, code := e.run(t, "perf", "write_bw", h1, h2); code == 0 || !strings.Contains(errOut, "--hosts tap") || !strings.Contains(errOut, "--hosts nic") {
		t.Errorf("perf in a --hosts tap lab: exit %d, %s", code, errOut)
	}
	e.down(t, l, socks)
}
