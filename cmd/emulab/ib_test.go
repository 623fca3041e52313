package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/switchcore"
)

var updateIB = flag.Bool("update-ib", false, "rewrite testdata/ib golden files")

// runIBCmd runs "emulab ib ARGS" with every ib flag back at its default
// and returns standard output and standard error apart.
func runIBCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSubcommand(t, "ib", args...)
}

// TestIBGolden pins the infiniband-diags-shaped output of both IB
// examples: the sweep is deterministic, so LIDs, GUIDs, routes and the
// sweep figures on standard error are the same on every run.
func TestIBGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"two-hosts-nodes", []string{"nodes", "../../examples/ib-two-hosts.yaml"}},
		{"two-hosts-ports", []string{"ports", "../../examples/ib-two-hosts.yaml"}},
		{"two-hosts-routes", []string{"routes", "../../examples/ib-two-hosts.yaml"}},
		{"fat-tree-nodes", []string{"nodes", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-list", []string{"nodes", "-l", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-ports", []string{"ports", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-routes", []string{"routes", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-leaf1-routes-cut", []string{"routes", "--node", "leaf1", "--cut", "leaf1:p5", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-spine1-nodes-cut", []string{"nodes", "--node", "spine1", "--cut", "leaf1:p5", "../../examples/ib-fat-tree.yaml"}},
		{"fat-tree-h16-ports", []string{"ports", "--node", "h16", "../../examples/ib-fat-tree.yaml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := runIBCmd(t, c.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			got := out + "--- stderr\n" + errOut
			path := filepath.Join("testdata", "ib", c.name+".txt")
			if *updateIB {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-ib to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (-update-ib rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestIBShapes checks what the goldens hold rather than only that they
// did not change: block and line counts, Active ports, unique LIDs, and
// that a cut moves leaf1's routes off the dead uplink.
func TestIBShapes(t *testing.T) {
	out, _, err := runIBCmd(t, "nodes", "../../examples/ib-fat-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\nSwitch\t"); n != 6 {
		t.Errorf("%d Switch blocks, want 6", n)
	}
	if n := strings.Count(out, "\nCa\t"); n != 16 {
		t.Errorf("%d Ca blocks, want 16", n)
	}
	// 16 host links + 8 uplinks, each listed from both ends.
	if n := strings.Count(out, " 4xEDR\n"); n != 48 {
		t.Errorf("%d port lines at 4xEDR, want 48", n)
	}

	out, _, err = runIBCmd(t, "ports", "../../examples/ib-fat-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\t\tState: Active\n", "\t\tPhysical state: LinkUp\n", "\t\tRate: 100\n", "\t\tSM lid: 1\n", "\t\tLink layer: InfiniBand\n"} {
		if n := strings.Count(out, want); n != 16 {
			t.Errorf("%q on %d ports, want 16", strings.TrimSpace(want), n)
		}
	}

	// JSON: every node once, LIDs unique and non-zero, every port Active.
	out, _, err = runIBCmd(t, "nodes", "--json", "../../examples/ib-fat-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sweep struct {
			Nodes, Switches int
			SMPs            uint64
			MaxLID          int `json:"max_lid"`
		}
		Nodes []ibJSONNode
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Nodes) != 22 || doc.Sweep.Nodes != 22 || doc.Sweep.Switches != 6 || doc.Sweep.SMPs == 0 || doc.Sweep.MaxLID != 22 {
		t.Errorf("sweep %+v, %d nodes", doc.Sweep, len(doc.Nodes))
	}
	lids := map[uint16]string{}
	for _, n := range doc.Nodes {
		if o, dup := lids[n.LID]; dup || n.LID == 0 {
			t.Errorf("%s: LID %d (also %q)", n.Name, n.LID, o)
		}
		lids[n.LID] = n.Name
		for _, p := range n.Ports {
			if p.Peer != "" && (p.State != "Active" || p.PhysicalState != "LinkUp" || p.RateGbps != 100) {
				t.Errorf("%s port %d: %+v", n.Name, p.Port, p)
			}
		}
	}

	// After cutting leaf1:p5 (to spine1), leaf1 sends nothing out port 5
	// and the 12 remote hosts all leave by port 6.
	out, errOut, err := runIBCmd(t, "routes", "--json", "--node", "leaf1", "--cut", "leaf1:p5", "../../examples/ib-fat-tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rdoc struct {
		Sweep    ibJSONSweep
		Switches []ibJSONSwitch
	}
	if err := json.Unmarshal([]byte(out), &rdoc); err != nil {
		t.Fatal(err)
	}
	if len(rdoc.Switches) != 1 || rdoc.Switches[0].Switch != "leaf1" {
		t.Fatalf("switches %+v", rdoc.Switches)
	}
	via := map[int]int{}
	for _, r := range rdoc.Switches[0].Routes {
		via[r.Port]++
	}
	if via[5] != 0 || via[6] != 17 || via[0] != 1 || via[1]+via[2]+via[3]+via[4] != 4 {
		t.Errorf("leaf1 routes by port after the cut: %v", via)
	}
	c := rdoc.Sweep.Cut
	if c == nil || c.Link != "leaf1:p5 - spine1:p1" || c.RecoveryUS <= 0 || c.ResweepUS <= c.AtUS {
		t.Errorf("cut %+v", c)
	}
	if !strings.Contains(errOut, "re-sweep") {
		t.Errorf("stderr: %s", errOut)
	}
}

func TestIBErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"nodes", "../../examples/incast.yaml"}, exitBadLabFile, "fabric: ib"},
		{[]string{"nodes", "--node", "nosuch", "../../examples/ib-two-hosts.yaml"}, exitRunFailed, "not in the swept fabric"},
		{[]string{"ports", "--node", "sw1", "../../examples/ib-two-hosts.yaml"}, exitRunFailed, "is a switch"},
		{[]string{"routes", "--node", "h1", "../../examples/ib-two-hosts.yaml"}, exitRunFailed, "is an HCA"},
		{[]string{"nodes", "--cut", "sw1", "../../examples/ib-two-hosts.yaml"}, exitBadLabFile, "NODE:PORT"},
		{[]string{"nodes", "--cut", "sw1:p9", "../../examples/ib-two-hosts.yaml"}, exitBadLabFile, "no link on that port"},
	} {
		_, _, err := runIBCmd(t, c.args...)
		if err == nil || exitCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: err %v (exit %d), want exit %d and %q", c.args, err, exitCode(err), c.code, c.msg)
		}
	}
}

// TestExampleIBTwoHosts checks what docs/examples/ib-two-hosts.md says:
// both flows complete at about 93 Gb/s, nothing is dropped, and the data
// waits for the SM's sweep.
func TestExampleIBTwoHosts(t *testing.T) {
	_, r := runExample(t, "ib-two-hosts.yaml", nil)
	drops, _ := r.SwitchDrops()
	if drops != 0 {
		t.Errorf("switch drops %d", drops)
	}
	for _, f := range r.Flows {
		gbps := float64(f.RxBytes) * 8 / float64(f.LastRx-f.Start) * 1e3 // bytes per ps -> Gb/s
		t.Logf("%s: %d/%d messages, %.1f Gb/s, first packet at %v", f.Name, f.MessagesDone, f.MessagesSent, gbps, f.Start)
		if f.MessagesDone != 4 || f.RxBytes != 256<<10 || gbps < 90 || gbps > 100 {
			t.Errorf("%s: %d messages, %d bytes, %.1f Gb/s", f.Name, f.MessagesDone, f.RxBytes, gbps)
		}
		if f.Start < 30*clock.Microsecond {
			t.Errorf("%s: data at %v, before the sweep could have activated the ports", f.Name, f.Start)
		}
	}
}

// TestExampleIBFatTree checks docs/examples/ib-fat-tree.md's traffic: the
// four flows whose routes crossed the cut link lose messages (dropped as
// link_down) and the other four lose none.
func TestExampleIBFatTree(t *testing.T) {
	_, r := runExample(t, "ib-fat-tree.yaml", nil)
	cut := map[string]bool{"east/h1-h9": true, "east/h3-h11": true, "west/h9-h1": true, "west/h11-h3": true}
	for _, f := range r.Flows {
		lost := f.MessagesSent - f.MessagesDone
		t.Logf("%s: %d/%d messages", f.Name, f.MessagesDone, f.MessagesSent)
		if cut[f.Name] && (lost < 50 || lost > 120) || !cut[f.Name] && lost > 1 {
			t.Errorf("%s: %d of %d messages lost", f.Name, lost, f.MessagesSent)
		}
	}
	drops, by := r.SwitchDrops()
	if drops == 0 || drops != by[switchcore.DropLinkDown] {
		t.Errorf("switch drops %d, by reason %v: want link_down only", drops, by)
	}
}

// TestWritePerfQuery: perfquery's layout: the header with the PerfMgt
// CapabilityMask, every PortCounters field in the attribute's order, each
// value at column 34 (libibmad pads the name and colon with dots to 33).
func TestWritePerfQuery(t *testing.T) {
	var b strings.Builder
	writePerfQuery(&b, 3, &mad.PortCountersFields{PortSelect: 1, XmitData: 1185, RcvPkts: 1607})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if lines[0] != "# Port counters: Lid 3 port 1 (CapMask: 0x1000)" {
		t.Errorf("header %q", lines[0])
	}
	var names []string
	for _, l := range lines[1:] {
		i := strings.LastIndex(l, ".") + 1 // the value follows the last dot
		if i != 33 {
			t.Errorf("%q: value at column %d, want 34", l, i+1)
		}
		names = append(names, l[:strings.Index(l, ":")])
	}
	want := []string{"PortSelect", "CounterSelect", "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
		"PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
		"PortXmitConstraintErrors", "PortRcvConstraintErrors", "CounterSelect2", "LocalLinkIntegrityErrors",
		"ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("fields %v, want %v", names, want)
	}
	if !strings.Contains(b.String(), "PortSelect:......................1\n") || !strings.Contains(b.String(), "PortXmitData:....................1185\n") {
		t.Errorf("layout:\n%s", b.String())
	}
}

// TestIBCountersLabFile: given the lab file, counters reads the lab it
// brings up, as down and status do, and when that lab is not up it says
// so by its name, not by the file's path taken for a 15-byte lab name.
func TestIBCountersLabFile(t *testing.T) {
	_, _, err := runIBCmd(t, "counters", "--state-dir", t.TempDir(), "--node", "h2", filepath.Join("..", "..", "examples", "ib-two-hosts.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), "lab ib-two-hosts (") || !strings.Contains(err.Error(), "not up") ||
		strings.Contains(err.Error(), "bytes long") {
		t.Errorf("counters FILE of a lab that is down: %v", err)
	}
}

// TestIBCountersRefusesSweepFlags: --json and --cut, ib's flags for a
// lab file's sweep, are refused by counters instead of being dropped.
func TestIBCountersRefusesSweepFlags(t *testing.T) {
	for _, c := range []struct{ flag, val, want string }{
		{"--json", "", "--json: counters prints perfquery's text"},
		{"--cut", "sw1:p1", "--cut sw1:p1: counters reads a running lab"},
	} {
		args := []string{"counters", "--state-dir", t.TempDir(), "--node", "h2", c.flag}
		if c.val != "" {
			args = append(args, c.val)
		}
		_, _, err := runIBCmd(t, append(args, "ib-two-hosts")...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.flag, err, c.want)
		}
	}
}
