package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/wire/capture"
)

// Tests of emulab stats, capture, extcap and link: argument handling and
// output layouts without a lab, then (root) the commands against real labs
// in namespaces, run as a user runs them.

func TestParseLinkChange(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		words []string
		want  lab.LinkChange
		err   string
	}{
		{words: []string{"down"}, want: lab.LinkChange{State: "down"}},
		{words: []string{"up", "delay", "5ms"}, want: lab.LinkChange{State: "up", Delay: "5ms"}},
		{words: []string{"rate", "10G", "loss", "1%", "corrupt", "0.001"}, want: lab.LinkChange{Rate: "10G", Loss: f(0.01), Corrupt: f(0.001)}},
		{words: []string{"delay", "0"}, want: lab.LinkChange{Delay: "0"}},
		{words: nil, err: "no change given"},
		{words: []string{"sideways"}, err: `"sideways": not a change`},
		{words: []string{"rate"}, err: "rate: no value given"},
		{words: []string{"rate", "10X"}, err: `rate "10X"`},
		{words: []string{"rate", "0"}, err: `rate "0"`},
		{words: []string{"rate", "1"}, err: `rate "1": 1 is out of the link rates the emulator runs, 1M to 1.6T`},
		{words: []string{"rate", "2T"}, err: `rate "2T"`},
		{words: []string{"rate", "1M"}, want: lab.LinkChange{Rate: "1M"}},
		{words: []string{"delay", "5"}, err: `delay: time "5": needs a unit`},
		{words: []string{"delay", "-1ms"}, err: "delay"},
		{words: []string{"loss", "2"}, err: `loss: "2" is not a probability in [0, 1]`},
		{words: []string{"loss", "150%"}, err: "loss:"},
		{words: []string{"corrupt", "x"}, err: `corrupt: "x" is not a probability`},
		{words: []string{"up", "down"}, err: "state given twice"},
		{words: []string{"delay", "1ms", "delay", "2ms"}, err: "delay given twice"},
	} {
		got, err := parseLinkChange(tc.words)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.words, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.words, err)
			continue
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(tc.want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%q: got %s, want %s", tc.words, gb, wb)
		}
	}
}

func TestParseLiveAutostop(t *testing.T) {
	for _, tc := range []struct {
		conds []string
		count int
		want  liveStop
		err   string
	}{
		{want: liveStop{}},
		{count: 5, want: liveStop{packets: 5}},
		{conds: []string{"duration:2"}, want: liveStop{duration: 2 * time.Second}},
		{conds: []string{"duration:0.5", "packets:7"}, count: 9, want: liveStop{packets: 7, duration: 500 * time.Millisecond}},
		{conds: []string{"packets:9"}, count: 3, want: liveStop{packets: 3}},
		{count: -1, err: "-c -1"},
		{conds: []string{"duration"}, err: "want duration:SECONDS"},
		{conds: []string{"duration:0"}, err: "-a duration:0"},
		{conds: []string{"duration:x"}, err: "-a duration:x"},
		{conds: []string{"packets:0"}, err: "-a packets:0"},
		{conds: []string{"filesize:10"}, err: `unknown condition "filesize"`},
	} {
		got, err := parseLiveAutostop(tc.conds, tc.count)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q -c %d: error %v, want %q", tc.conds, tc.count, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q -c %d: %+v, %v; want %+v", tc.conds, tc.count, got, err, tc.want)
		}
	}
}

// TestWriteEthtoolOrder: a switch port prints as ethtool -S does, the
// engine's counters in the engine's order, then the daemon's by name.
func TestWriteEthtoolOrder(t *testing.T) {
	var sb strings.Builder
	err := writeEthtool(&sb, map[string]uint64{"transport_rx_frames": 3, "tx_packets_phy": 2, "rx_prio3_pause": 9,
		"rx_packets_phy": 1, "link_loss_rx": 4}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "NIC statistics:\n     rx_packets_phy: 1\n     tx_packets_phy: 2\n     rx_prio3_pause: 9\n" +
		"     link_loss_rx: 4\n     transport_rx_frames: 3\n"
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}
	// An IB port's in EachIB's order: the port's, then VL 0's, then VL 1's.
	sb.Reset()
	err = writeEthtool(&sb, map[string]uint64{"vl1_rx_packets": 5, "vl0_fc_tx": 6, "port_xmit_wait": 7, "vl0_rx_packets": 8, "link_loss_rx": 4}, true)
	if err != nil {
		t.Fatal(err)
	}
	want = "NIC statistics:\n     port_xmit_wait: 7\n     vl0_rx_packets: 8\n     vl0_fc_tx: 6\n     vl1_rx_packets: 5\n     link_loss_rx: 4\n"
	if sb.String() != want {
		t.Errorf("IB: got\n%s\nwant\n%s", sb.String(), want)
	}
}

// TestWriteSwitchTable: the port table sums ECN marks and drops; the
// priority table lists the priorities that counted, with their pauses.
func TestWriteSwitchTable(t *testing.T) {
	n := &lab.NodeInfo{Name: "sw1", Kind: lab.KindSwitch, Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:eth0"}}}
	ports := []lab.PortCounterSet{
		{Port: "p1", Counters: map[string]uint64{"rx_packets_phy": 11, "tx_packets_phy": 12, "tx_prio3_ecn_marked": 4, "tx_prio5_ecn_marked": 1,
			"drop_no_route": 2, "prio3_drop_no_route": 2, "headroom_overflow": 7, "pg3_headroom_overflow": 7, "tx_prio3_pause": 6, "tx_prio3_pause_duration": 70, "rx_prio3_packets": 10,
			"link_loss_tx": 1, "link_queue_drop": 2}},
		{Port: "p2", Counters: map[string]uint64{}},
	}
	var sb strings.Builder
	if err := writeSwitchTable(&sb, n, ports); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, re := range []string{
		`PORT\s+PEER\s+RX_PACKETS\s+RX_BYTES\s+TX_PACKETS\s+TX_BYTES\s+RX_PAUSE\s+TX_PAUSE\s+ECN_MARKED\s+DROPS\s+WIRE_DROPS`,
		`\n\s*p1\s+h1:eth0\s+11\s+0\s+12\s+0\s+0\s+0\s+5\s+2\s+3\s*\n`,
		`\n\s*p2\s+-\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s*\n`,
		`\n\s*p1\s+3\s+10\s+0\s+0\s+0\s+6\s+70\s+4\s+2\s+0\s*\n`,
		`\n\s*p1\s+5\s+0\s+0\s+0\s+0\s+0\s+0\s+1\s+0\s+0\s*\n`,
		// Headroom overflow is admitted, not dropped: outside DROPS, said apart.
		`\np1: 7 lossless frames arrived beyond the PG's headroom`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("table lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "\n   p2      0") || regexp.MustCompile(`\n\s*p2\s+\d\s`).MatchString(out) {
		t.Errorf("an idle port has priority rows:\n%s", out)
	}
	sb.Reset()
	if err := writeSwitchTable(&sb, n, ports[1:]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "no priority of any port counted anything yet") {
		t.Errorf("idle switch:\n%s", sb.String())
	}
}

// TestWriteIBSwitchTable: an IB switch's summary has no PAUSE, ECN or
// priority: FECN marks and credit waits per port, then flow control and
// credit stalls per VL that counted.
func TestWriteIBSwitchTable(t *testing.T) {
	n := &lab.NodeInfo{Name: "sw1", Kind: lab.KindSwitch, Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:ib0"}}}
	ports := []lab.PortCounterSet{
		{Port: "p1", Counters: map[string]uint64{"rx_packets_phy": 11, "tx_packets_phy": 12, "port_rcv_packets": 9, "port_rcv_data": 100, "port_xmit_packets": 10, "vl0_fecn_marked": 3, "vl1_fecn_marked": 1,
			"port_xmit_wait": 900, "vl0_fc_rx": 5, "vl0_fc_tx": 6, "vl0_credit_stalls": 2, "vl0_xmit_wait": 900, "drop_malformed": 1, "link_loss_rx": 2,
			"loop_late": 4, "loop_lag_max_ns": 25_300_000}},
		{Port: "p2", Counters: map[string]uint64{}},
	}
	var sb strings.Builder
	if err := writeIBSwitchTable(&sb, n, ports); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, re := range []string{
		`PORT\s+PEER\s+RX_PACKETS\s+RX_BYTES\s+TX_PACKETS\s+TX_BYTES\s+FECN_MARKED\s+XMIT_WAIT_US\s+DROPS\s+WIRE_DROPS`,
		// IB packets (IBA PortRcvPkts ...), not the link packets the _phy ones include.
		`\n\s*p1\s+h1:ib0\s+9\s+400\s+10\s+0\s+4\s+900\s+1\s+2\s*\n`,
		`PORT\s+VL\s+FC_RX\s+FC_TX\s+CREDIT_STALLS\s+XMIT_WAIT_US\s+FECN_MARKED`,
		`\n\s*p1\s+0\s+5\s+6\s+2\s+900\s+3\s*\n`,
		`\n\s*p1\s+1\s+0\s+0\s+0\s+0\s+1\s*\n`,
		// The loop's lag, as on a RoCE switch.
		`\nsw1: the daemon ran up to 25\.3 ms late, 4 times 1 ms or more \(loop_lag_max_ns, loop_late`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("table lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "PAUSE") || strings.Contains(out, "PRIO") {
		t.Errorf("an IB switch's table speaks of pauses or priorities:\n%s", out)
	}
}

// fakeLab writes the state files of a lab as up leaves them (state.json,
// up.json), enough for the commands that only read them.
func fakeLab(t *testing.T, root string, li *lab.LabInfo) {
	t.Helper()
	dir := filepath.Join(root, li.Lab)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(li)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "up.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runEmulab runs the emulab command tree in-process with args and returns
// its standard output and error.
func runEmulab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	rootCmd.SetArgs(args)
	defer func() {
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
		rootCmd.SetArgs(nil)
	}()
	// Flags keep their values between executions of the same tree; a
	// fresh set per run is what a process gets.
	resetFlags(t, "extcap")
	err := rootCmd.Execute()
	return out.String(), err
}

// resetFlags puts a subcommand's flags back to their defaults (name: its
// path under emulab, "ib nodes").
func resetFlags(t *testing.T, name string) {
	t.Helper()
	cmd, _, err := rootCmd.Find(strings.Fields(name))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			if err := f.Value.Set(f.DefValue); err != nil {
				t.Fatalf("reset --%s: %v", f.Name, err)
			}
			f.Changed = false
		}
	})
}

// TestExtcapArguments runs the extcap phases as Wireshark does, against a
// state directory with two labs (one with dashes in its names, one whose
// up has not finished), without Wireshark and without a running lab.
func TestExtcapArguments(t *testing.T) {
	root := t.TempDir()
	fakeLab(t, root, &lab.LabInfo{Lab: "a-b", Nodes: []lab.NodeInfo{
		{Name: "sw-1", Kind: lab.KindSwitch, Control: "/nonexistent/ctl-sw-1.sock", Ports: []lab.PortInfo{{Name: "p1", Peer: "h-1:eth0"}, {Name: "p2", Peer: "h2:eth0"}}},
		{Name: "h-1", Kind: lab.KindNIC, Control: "/nonexistent/ctl-h-1.sock", Ports: []lab.PortInfo{{Name: "eth0", Peer: "sw-1:p1"}}},
		// A TAP host: its link is the switch's port, listed there.
		{Name: "h2", Kind: lab.KindNIC, Ports: []lab.PortInfo{{Name: "eth0", Peer: "sw-1:p2"}}},
	}})
	// A lab whose up has not finished has state.json but no up.json.
	if err := os.MkdirAll(filepath.Join(root, "half"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "half", "state.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := runEmulab(t, "extcap", "--state-dir", root, "--extcap-interfaces", "--extcap-version=4.0.17")
	if err != nil {
		t.Fatal(err)
	}
	want := "extcap {version=1.0}{display=emufabric lab ports}\n" +
		"interface {value=emulab-a-b-sw-1-p1}{display=emufabric lab a-b: switch sw-1 port p1 (to h-1:eth0)}\n" +
		"interface {value=emulab-a-b-sw-1-p2}{display=emufabric lab a-b: switch sw-1 port p2 (to h2:eth0)}\n" +
		"interface {value=emulab-a-b-h-1-eth0}{display=emufabric lab a-b: nic h-1 port eth0 (to sw-1:p1)}\n"
	if out != want {
		t.Errorf("--extcap-interfaces:\n%s\nwant\n%s", out, want)
	}
	// No lab at all is not an error: Wireshark asks at start-up.
	out, err = runEmulab(t, "extcap", "--state-dir", filepath.Join(root, "none"), "--extcap-interfaces")
	if err != nil || out != "extcap {version=1.0}{display=emufabric lab ports}\n" {
		t.Errorf("no labs: %q, %v", out, err)
	}

	for _, tc := range []struct {
		args []string
		want string // exact standard output
		err  string // or an error containing this
	}{
		{args: []string{"--extcap-interface", "emulab-a-b-h-1-eth0", "--extcap-dlts"}, want: "dlt {number=1}{name=EN10MB}{display=Ethernet}\n"},
		{args: []string{"--extcap-dlts", "--extcap-interface=emulab-a-b-sw-1-p2"}, want: "dlt {number=1}{name=EN10MB}{display=Ethernet}\n"},
		{args: []string{"--extcap-interface", "emulab-a-b-sw-1-p1", "--extcap-config"},
			want: "arg {number=0}{call=--packets}{display=Stop after packets}{type=unsigned}{default=0}{tooltip=Stop the capture after this many packets (0: run until Wireshark stops it)}\n"},
		// Filter validation: empty output is a valid filter.
		{args: []string{"--extcap-capture-filter", "", "--extcap-interface", "emulab-a-b-sw-1-p1"}, want: ""},
		{args: []string{"--extcap-capture-filter", "icmp", "--extcap-interface", "emulab-a-b-sw-1-p1"},
			want: "capture filters are not supported: emulab-a-b-sw-1-p1 captures every frame; use a display filter\n"},
		{args: []string{"--extcap-version"}, want: "extcap {version=1.0}{display=emufabric lab ports}\n"},
		// Options of later Wireshark versions are ignored.
		{args: []string{"--extcap-interface", "emulab-a-b-sw-1-p1", "--extcap-dlts", "--some-new-option"}, want: "dlt {number=1}{name=EN10MB}{display=Ethernet}\n"},
		{args: []string{"--extcap-interface", "emulab-a-b-h2-eth0", "--extcap-dlts"}, err: "no such port"},
		{args: []string{"--extcap-interface", "eth0", "--extcap-dlts"}, err: "not an emulab interface"},
		{args: []string{"--extcap-interface", "emulab-half-sw1-p1", "--extcap-dlts"}, err: "no such port"},
		{args: []string{"--extcap-interface", "emulab-a-b-sw-1-p1"}, err: "give --extcap-dlts, --extcap-config or --capture"},
		{args: nil, err: "give --extcap-interfaces"},
		{args: []string{"--capture", "--extcap-interface", "emulab-a-b-sw-1-p1"}, err: "--capture needs --fifo"},
		{args: []string{"--capture", "--extcap-interface", "emulab-a-b-sw-1-p1", "--fifo", "/nonexistent/f", "--extcap-capture-filter", "tcp"}, err: "capture filters are not supported"},
		// The lab's namespaces are gone (a lab killed under us): the
		// capture fails naming what is missing.
		{args: []string{"--capture", "--extcap-interface", "emulab-a-b-sw-1-p1", "--fifo", filepath.Join(root, "fifo")}, err: "no namespace emu-a-b-sw-1"},
	} {
		out, err := runEmulab(t, append([]string{"extcap", "--state-dir", root}, tc.args...)...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q (output %q)", tc.args, err, tc.err, out)
			}
			continue
		}
		if err != nil || out != tc.want {
			t.Errorf("%q:\n got %q, %v\nwant %q", tc.args, out, err, tc.want)
		}
	}
}

// TestOpsLab brings the two-host lab up with emulated NICs and with TAP
// hosts, and runs stats, capture, extcap and link set against it.
func TestOpsLab(t *testing.T) {
	e := newUpEnv(t)
	needTool(t, "ping")
	t.Run("nic", func(t *testing.T) { testOpsNIC(t, e) })
	t.Run("tap", func(t *testing.T) { testOpsTAP(t, e) })
	t.Run("back-to-back", func(t *testing.T) { testOpsBackToBack(t, e) })
}

// testOpsBackToBack: two NICs cabled to each other, no switch. The lab
// file's delay holds in real time (each emunic emulates the wire toward
// itself), and link set changes the wire on both ends: a delay both ways,
// a loss that stops every ping, then none.
func testOpsBackToBack(t *testing.T, e *upEnv) {
	l := e.lab(t, "testdata/up/back-to-back.yaml")
	// With --metrics every daemon serves /metrics in this namespace,
	// though it runs in the lab's: h1 on the port given, h2 on the next.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	out := e.mustRun(t, "up", "--hosts", "nic", "--metrics", fmt.Sprintf("127.0.0.1:%d", base), l.file)
	socks := recordedSockets(t, e.state, l.name)
	for i, h := range []string{"h1", "h2"} {
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", base+i)
		if !strings.Contains(out, "metrics "+h+": "+url) {
			t.Errorf("up --metrics printed no %s endpoint %s:\n%s", h, url, out)
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("%s's metrics: %v", h, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`emu_port_received_packets_total{lab=%q,node=%q,port="eth0"}`, l.name, h); !strings.Contains(string(body), want) {
			t.Errorf("%s's /metrics lacks %s:\n%.600s", h, want, body)
		}
	}
	if st := e.mustRun(t, "status", l.name); !strings.Contains(st, fmt.Sprintf("metrics h2: http://127.0.0.1:%d/metrics", base+1)) {
		t.Errorf("status lists no metrics endpoint:\n%s", st)
	}
	e.ping(t, l, "h1", "h2")
	if rtt, err := e.pingRTT(t, l, "h1", "h2"); err != nil || rtt < 10 {
		t.Errorf("ping across 5 ms each way: %v ms, %v; want at least 10 ms", rtt, err)
	}
	out = e.mustOps(t, "link", "set", "h1", "delay", "20ms")
	if !strings.Contains(out, "h1:eth0: link delay 20ms") || !strings.Contains(out, "h2:eth0: link delay 20ms") {
		t.Errorf("link set h1 delay 20ms printed %q, want both ends", out)
	}
	if rtt, err := e.pingRTT(t, l, "h1", "h2"); err != nil || rtt < 40 {
		t.Errorf("ping across 20 ms each way: %v ms, %v; want at least 40 ms", rtt, err)
	}
	// status shows each end's wire, and the link socket the listening
	// emunic closed once its peer connected is not missing.
	st := e.mustRun(t, "status", l.name)
	if !strings.Contains(st, "sockets: 3 recorded, 2 present, 1 closed by an emunic whose peer connected") {
		t.Errorf("status of a back-to-back lab counts its sockets wrong:\n%s", st)
	}
	for _, end := range []string{`h1:eth0\s+h2:eth0`, `h2:eth0\s+h1:eth0`} {
		if !regexp.MustCompile(`(?m)^\s+` + end + `\s+up\s+rate 10G, delay 20ms\s`).MatchString(st) {
			t.Errorf("status after delay 20ms lacks %s's wire:\n%s", end, st)
		}
	}
	e.mustOps(t, "link", "set", "h2:eth0", "loss", "100%")
	if _, err := e.pingRTT(t, l, "h1", "h2"); err == nil {
		t.Errorf("ping across a wire that loses every frame got a reply")
	}
	var js struct {
		Transport map[string]uint64
	}
	// The ping never reached h2, so h2 never answered: the loss is all
	// on the wire toward h2.
	if err := json.Unmarshal([]byte(e.mustOps(t, "stats", "h2", "--json")), &js); err != nil {
		t.Fatal(err)
	}
	if js.Transport["link_loss_rx"] == 0 {
		t.Errorf("stats h2: link_loss_rx 0 after a lost ping (%v)", js.Transport)
	}
	e.mustOps(t, "link", "set", "h1:eth0", "loss", "0", "delay", "0")
	e.ping(t, l, "h1", "h2")
	e.down(t, l, socks)
}

// runOps runs `emulab SUB args... --state-dir S` (the flag last, so that a
// command with subcommands, link set, takes it as its own).
func (e *upEnv) runOps(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "emulab"), append(args, "--state-dir", e.state)...)
	var o, er strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("emulab %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return o.String(), er.String(), code
}

func (e *upEnv) mustOps(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := e.runOps(t, args...)
	if code != 0 {
		t.Fatalf("emulab %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	return out
}

// failOps runs emulab expecting a failure whose message contains want.
func (e *upEnv) failOps(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, code := e.runOps(t, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("emulab %v: exit %d, stderr %q, stdout %q; want a failure saying %q", args, code, errOut, out, want)
	}
}

// pingRTT pings once and returns the round-trip time in ms, or an error
// if no reply came.
func (e *upEnv) pingRTT(t *testing.T, l *upLab, src, dst string) (float64, error) {
	t.Helper()
	out, _, code := e.run(t, "exec", l.node(src), "--", "ping", "-c", "1", "-W", "2", l.ip(dst))
	if code != 0 {
		return 0, errors.New("no reply:\n" + out)
	}
	m := regexp.MustCompile(`time=([0-9.]+) ms`).FindStringSubmatch(out)
	if m == nil {
		return 0, errors.New("no time in:\n" + out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// ethtoolCounters parses the ethtool -S layout, checking its shape.
func ethtoolCounters(t *testing.T, s string) map[string]uint64 {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "NIC statistics:" {
		t.Fatalf("not the ethtool -S layout:\n%s", s)
	}
	m := map[string]uint64{}
	re := regexp.MustCompile(`^     ([a-z0-9_]+): (\d+)$`)
	for _, l := range lines[1:] {
		sm := re.FindStringSubmatch(l)
		if sm == nil {
			t.Fatalf("line %q is not \"     name: value\"", l)
		}
		v, _ := strconv.ParseUint(sm[2], 10, 64)
		m[sm[1]] = v
	}
	return m
}

// capProc is a running emulab capture.
type capProc struct {
	cmd  *exec.Cmd
	msgs *syncBuffer // its standard error
	done chan error
}

// wait waits for the capture to exit (once).
func (p *capProc) wait() error { return <-p.done }

// startCapture starts emulab capture and waits until it captures (its
// "Capturing on" line).
func (e *upEnv) startCapture(t *testing.T, stdout io.Writer, args ...string) *capProc {
	t.Helper()
	p := &capProc{msgs: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(filepath.Join(e.bin, "emulab"), append(append([]string{"capture"}, args...), "--state-dir", e.state)...)
	p.cmd.Stdout, p.cmd.Stderr = stdout, p.msgs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	for !strings.Contains(p.msgs.String(), "Capturing on ") {
		select {
		case err := <-p.done:
			t.Fatalf("capture %v did not start: %v\n%s", args, err, p.msgs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p
}

// readCapture reads a pcapng stream and returns its records' comments and
// how many are ICMP echo frames; progress, if not nil, gets the ICMP
// count after each record.
func readCapture(r io.Reader, progress func(icmp int)) (n, icmp int, comments []string, err error) {
	rd, err := capture.Open(bufio.NewReader(r))
	if err != nil {
		return 0, 0, nil, err
	}
	if rd.Format() != capture.FormatPcapNG {
		return 0, 0, nil, errors.New("format " + rd.Format().String() + ", want pcapng")
	}
	var rec capture.Record
	for {
		err := rd.Next(&rec)
		if errors.Is(err, io.EOF) {
			return n, icmp, comments, nil
		}
		if err != nil {
			return n, icmp, comments, err
		}
		n++
		comments = append(comments, rec.Comment)
		d := rec.Data
		// Ethernet, IPv4, protocol 1 (ICMP), type 8 or 0 (echo).
		if rec.LinkType == capture.LinkTypeEthernet && len(d) >= 35 && d[12] == 0x08 && d[13] == 0x00 && d[23] == 1 {
			ihl := int(d[14]&0x0f) * 4
			if len(d) > 14+ihl && (d[14+ihl] == 8 || d[14+ihl] == 0) {
				icmp++
			}
		}
		if progress != nil {
			progress(icmp)
		}
	}
}

// readFile reads a capture file with readCapture.
// eachRecord calls fn with each record of the capture file at path.
func eachRecord(t *testing.T, path string, fn func(*capture.Record)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := capture.Open(bufio.NewReader(f))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var rec capture.Record
	for {
		err := rd.Next(&rec)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fn(&rec)
	}
}

func readFile(t *testing.T, path string) (n, icmp int, comments []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, icmp, comments, err = readCapture(f, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n, icmp, comments
}

// streamResult is what a reader of a live stream saw.
type streamResult struct {
	n, icmp int
	err     error
}

// readLive reads a live pcapng stream in the background: reached is
// closed once want ICMP echo frames arrived (while the writer still runs,
// so they were flushed as written), done gets the whole result at the
// end of the stream.
func readLive(r io.Reader, want int) (reached chan struct{}, done chan streamResult) {
	reached, done = make(chan struct{}), make(chan streamResult, 1)
	go func() {
		closed := false
		n, icmp, _, err := readCapture(r, func(icmp int) {
			if icmp >= want && !closed {
				closed = true
				close(reached)
			}
		})
		done <- streamResult{n, icmp, err}
	}()
	return reached, done
}

// waitReached waits for a live stream to show the frames; a capture that
// buffers instead of flushing never gets there (the generous bound only
// keeps a broken build from hanging the test run).
func waitReached(t *testing.T, what string, reached chan struct{}, done chan streamResult) {
	t.Helper()
	select {
	case <-reached:
	case r := <-done:
		t.Fatalf("%s: the stream ended early: %d records, %d ICMP, %v", what, r.n, r.icmp, r.err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the frames never reached the reader (not flushed per packet?)", what)
	}
}

func testOpsNIC(t *testing.T, e *upEnv) {
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	socks := e.up(t, l, "nic")
	e.ping(t, l, "h1", "h2")

	// stats of a NIC: the ethtool -S layout with mlx5 names, counting
	// the pings both ways; --hw the RDMA counters; --json both.
	m := ethtoolCounters(t, e.mustOps(t, "stats", "h1"))
	for _, k := range []string{"rx_packets_phy", "tx_packets_phy", "rx_bytes_phy", "tx_bytes_phy", "rx_prio0_packets", "tx_prio0_packets"} {
		if m[k] == 0 {
			t.Errorf("stats h1: %s is 0 after ping (%v)", k, m)
		}
	}
	for _, k := range []string{"rx_prio3_pause", "tx_prio3_pause", "rx_pause_ctrl_phy", "link_down_events_phy", "rx_out_of_buffer"} {
		if _, ok := m[k]; !ok {
			t.Errorf("stats h1 lacks %s", k)
		}
	}
	// --hw: what `rdma statistic show link emu_eth0/1` prints, one line,
	// with no IB-only counter on this RoCE NIC.
	hw := e.mustOps(t, "stats", l.node("h1"), "--hw")
	if !strings.HasPrefix(hw, "link emu_eth0/1 rx_write_requests ") || strings.Count(hw, "\n") != 1 {
		t.Errorf("stats --hw is not an rdma statistic line:\n%s", hw)
	}
	for _, k := range []string{"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "out_of_sequence", "packet_seq_err"} {
		if !regexp.MustCompile(` ` + k + ` \d+( |\n)`).MatchString(hw) {
			t.Errorf("stats --hw lacks %q:\n%s", k, hw)
		}
	}
	for _, k := range []string{"ib_fc_rx", "ipoib_rx_packets", "smp_rx", "gsi_rx"} {
		if strings.Contains(hw, " "+k+" ") {
			t.Errorf("stats --hw of a RoCE NIC lists %s:\n%s", k, hw)
		}
	}
	var js struct {
		Lab, Node  string
		Kind       string
		Ports      []lab.PortCounterSet
		HWCounters map[string]uint64 `json:"hw_counters"`
	}
	if err := json.Unmarshal([]byte(e.mustOps(t, "stats", "h2", "--json", "--lab", l.name)), &js); err != nil {
		t.Fatal(err)
	}
	if js.Lab != l.name || js.Node != "h2" || js.Kind != "nic" || len(js.Ports) != 1 || js.Ports[0].Counters["rx_packets_phy"] == 0 {
		t.Errorf("stats --json: %+v", js)
	}
	// --json keeps every counter, the other fabric's too.
	for _, k := range []string{"np_cnp_sent", "rx_unknown_qp", "ib_fc_rx"} {
		if _, ok := js.HWCounters[k]; !ok {
			t.Errorf("stats --json lacks hw_counters %s: %+v", k, js.HWCounters)
		}
	}

	// stats of a switch: the port table, and one port in the ethtool -S
	// layout with the PFC and ECN counters.
	st := e.mustOps(t, "stats", "sw1")
	for _, p := range []string{"p1", "p2"} {
		sm := regexp.MustCompile(`\n\s*` + p + `\s+h\d:eth0\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s`).FindStringSubmatch(st)
		if sm == nil || sm[1] == "0" || sm[3] == "0" {
			t.Errorf("stats sw1: %s lacks nonzero rx/tx packets:\n%s", p, st)
		}
	}
	if !regexp.MustCompile(`\n\s*p1\s+0\s+[1-9]\d*\s+[1-9]\d*\s`).MatchString(st) {
		t.Errorf("stats sw1: no priority 0 row with packets for p1:\n%s", st)
	}
	pm := ethtoolCounters(t, e.mustOps(t, "stats", "sw1:p1"))
	for _, k := range []string{"rx_packets_phy", "tx_packets_phy", "transport_rx_frames"} {
		if pm[k] == 0 {
			t.Errorf("stats sw1:p1: %s is 0", k)
		}
	}
	for p := range 8 {
		for _, f := range []string{"rx_prio%d_pause", "tx_prio%d_pause", "rx_prio%d_pause_duration", "tx_prio%d_ecn_marked"} {
			if k := strings.Replace(f, "%d", strconv.Itoa(p), 1); !hasKey(pm, k) {
				t.Errorf("stats sw1:p1 lacks %s", k)
			}
		}
	}

	// Errors name what is wrong.
	e.failOps(t, "has no node h7", "stats", "h7")
	e.failOps(t, "sw1 has no port p9 (ports: p1, p2)", "stats", "sw1:p9")
	e.failOps(t, "h1 has no port eth5", "stats", "h1:eth5")
	e.failOps(t, "--hw: sw1 is a switch", "stats", "sw1", "--hw")
	e.failOps(t, "names its lab and --lab", "stats", l.node("h1"), "--lab", l.name)

	// capture while pinging: -c N ends it; the file holds ICMP frames
	// with the daemon's comments.
	file := filepath.Join(t.TempDir(), "p1.pcapng")
	cp := e.startCapture(t, nil, "sw1:p1", "-w", file, "-c", "4")
	msgs := cp.msgs
	e.ping(t, l, "h1", "h2")
	if err := cp.wait(); err != nil {
		t.Fatalf("capture: %v\n%s", err, msgs)
	}
	if !strings.Contains(msgs.String(), "4 packets captured") {
		t.Errorf("capture said:\n%s", msgs)
	}
	n, icmp, comments := readFile(t, file)
	if n != 4 || icmp != 4 {
		t.Errorf("capture -c 4: %d records, %d ICMP echo", n, icmp)
	}
	for _, c := range comments {
		if c != "rx" && c != "tx" && !strings.HasPrefix(c, "rx:") && !strings.HasPrefix(c, "tx:") {
			t.Errorf("record comment %q: want the switch's rx/tx note", c)
		}
	}

	// Two daemons' records merge in time order: a frame's tx at h1 comes
	// before its rx at sw1:p1, though the streams arrive as they do. The
	// merge waits for a late stream up to a second; a machine loaded past
	// that can still invert two records, so a capture may be taken three
	// times.
	inversion := func() string {
		file := filepath.Join(t.TempDir(), "both.pcapng")
		cp := e.startCapture(t, nil, "h1:eth0", "sw1:p1", "-w", file, "-c", "12")
		e.ping(t, l, "h1", "h2")
		if err := cp.wait(); err != nil {
			t.Fatalf("capture h1:eth0 sw1:p1: %v\n%s", err, cp.msgs)
		}
		inv := ""
		var last time.Time
		k := 0
		eachRecord(t, file, func(rec *capture.Record) {
			if inv == "" && rec.Timestamp.Before(last) {
				inv = fmt.Sprintf("record %d at %v, before the one ahead of it (%v)", k, rec.Timestamp, last)
			}
			last = rec.Timestamp
			k++
		})
		return inv
	}
	var inv string
	for range 3 {
		if inv = inversion(); inv == "" {
			break
		}
		t.Logf("capture h1:eth0 sw1:p1 out of order (%s): again", inv)
	}
	if inv != "" {
		t.Errorf("capture h1:eth0 sw1:p1, three times out of order: %s", inv)
	}

	// capture to a pipe: every packet arrives while the capture runs
	// (flushed per packet); SIGINT ends it cleanly. Two daemons merge
	// into one stream.
	pr, pw := io.Pipe()
	cp = e.startCapture(t, pw, "sw1:p2", "h2:eth0", "-w", "-")
	msgs = cp.msgs
	// 3 requests and 3 replies on each port.
	reached, done := readLive(pr, 12)
	e.ping(t, l, "h1", "h2")
	waitReached(t, "capture -w -", reached, done)
	cp.cmd.Process.Signal(os.Interrupt)
	if err := cp.wait(); err != nil {
		t.Errorf("capture -w - after SIGINT: %v\n%s", err, msgs)
	}
	pw.Close()
	// At least 12: a late reply makes ping (-w) send a fourth request.
	if r := <-done; r.err != nil || r.icmp < 12 {
		t.Errorf("capture sw1:p2 h2:eth0 -w - of 3 pings: %d records, %d ICMP echo, %v; want 12\n%s", r.n, r.icmp, r.err, msgs)
	}
	if !strings.Contains(msgs.String(), "Capturing on 'sw1:p2', 'h2:eth0'") {
		t.Errorf("capture said:\n%s", msgs)
	}
	// A reader that goes away ends the capture even while no frame
	// comes (Wireshark closed): exit 0.
	rp, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cp = e.startCapture(t, wp, "sw1:p1", "-w", "-")
	wp.Close()
	rp.Close()
	if err := cp.wait(); err != nil {
		t.Errorf("capture -w - after its reader closed: %v\n%s", err, cp.msgs)
	}

	e.failOps(t, "-w: give the file", "capture", "sw1:p1")
	e.failOps(t, `no port "p9" on sw1`, "capture", "sw1:p9", "-w", filepath.Join(t.TempDir(), "x"))
	e.failOps(t, "h1 has no port eth1", "capture", "h1:eth1", "-w", filepath.Join(t.TempDir(), "x"))

	// extcap lists the lab's ports and captures one into a FIFO until
	// SIGTERM, as Wireshark runs it.
	out := e.mustOps(t, "extcap", "--extcap-interfaces")
	for _, ifc := range []string{"sw1-p1", "sw1-p2", "h1-eth0", "h2-eth0"} {
		if !strings.Contains(out, "interface {value=emulab-"+l.name+"-"+ifc+"}") {
			t.Errorf("extcap interfaces lack %s:\n%s", ifc, out)
		}
	}
	testExtcapCapture(t, e, l, "emulab-"+l.name+"-h1-eth0")

	// link set: down stops the pings, up brings them back; a delay shows
	// in the round trip.
	if out := e.mustOps(t, "link", "set", "sw1:p1", "down"); !strings.Contains(out, "sw1:p1: link down (admin)") {
		t.Errorf("link set down printed %q", out)
	}
	if _, err := e.pingRTT(t, l, "h1", "h2"); err == nil {
		t.Errorf("ping through sw1:p1 while it is down got a reply")
	}
	// The far end sees it as a cable's carrier: h1's NIC takes its link
	// down, and its host shows NO-CARRIER.
	waitFor(t, "h1's carrier to go", func() bool { return !hostCarrier(t, l, "h1") })
	if out := e.mustRun(t, "status", l.name); !regexp.MustCompile(`(?m)^\s+sw1:p1\s+h1:eth0\s+down \(admin\)`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+h1:eth0\s+sw1:p1\s+down \(peer\)`).MatchString(out) {
		t.Errorf("status with sw1:p1 set down:\n%s", out)
	}
	e.mustOps(t, "link", "set", "sw1:p1", "up")
	waitFor(t, "h1's carrier to come back", func() bool { return hostCarrier(t, l, "h1") })
	e.ping(t, l, "h1", "h2")
	if out := e.mustOps(t, "link", "set", "sw1:p1", "delay", "5ms"); !strings.Contains(out, "delay 5ms") {
		t.Errorf("link set delay printed %q", out)
	}
	rtt, err := e.pingRTT(t, l, "h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if rtt < 5 {
		t.Errorf("RTT %.3f ms with 5 ms delay on sw1:p1", rtt)
	}
	e.mustOps(t, "link", "set", "sw1:p1", "delay", "0", "loss", "0", "rate", "100G")
	// A rate is the link's both ways: set on the switch port, the NIC's
	// transmitter takes it too, so neither direction beats it (the
	// average cannot exceed what the wire serializes; it used to apply
	// to the switch port's egress only, and h1 kept sending at 100G).
	if out := e.mustOps(t, "link", "set", "sw1:p1", "rate", "1G"); !strings.Contains(out, "sw1:p1: link up, rate 1G") || !strings.Contains(out, "h1:eth0: link") {
		t.Errorf("link set sw1:p1 rate 1G printed %q", out)
	}
	for _, dir := range [][2]string{{"h1", "h2"}, {"h2", "h1"}} {
		out := e.mustOps(t, "perf", "write_bw", dir[0], dir[1], "-s", "65536", "-n", "300", "--report_gbits")
		if f := perfRow(t, out, perfHeadBWGbits); perfFloat(t, f[3]) > 1.05 {
			t.Errorf("write_bw %s -> %s across a 1G link: average %s Gb/s", dir[0], dir[1], f[3])
		}
	}
	// Set on the NIC's end, both ends take it back.
	if out := e.mustOps(t, "link", "set", "h1", "rate", "100G"); !strings.Contains(out, "h1:eth0: link") || !strings.Contains(out, "sw1:p1: link up, rate 100G") {
		t.Errorf("link set h1 rate 100G printed %q", out)
	}
	// The NIC's own link: down, up and rate.
	e.mustOps(t, "link", "set", "h2", "down")
	if _, err := e.pingRTT(t, l, "h1", "h2"); err == nil {
		t.Errorf("ping to h2 while its NIC link is down got a reply")
	}
	if out := e.mustRun(t, "status", l.name); !regexp.MustCompile(`(?m)^\s+h2:eth0\s+sw1:p2\s+down \(admin\)`).MatchString(out) {
		t.Errorf("status with h2's link set down:\n%s", out)
	}
	// The host sees its NIC's link go, as a real NIC's PHY shows it, and
	// so does the switch port at the other end of the cable.
	if hostCarrier(t, l, "h2") {
		t.Errorf("h2's eth0 has carrier while its NIC's link is set down")
	}
	waitFor(t, "sw1:p2 to see its peer down", func() bool {
		return regexp.MustCompile(`(?m)^\s+sw1:p2\s+h2:eth0\s+down \(peer\)`).MatchString(e.mustRun(t, "status", l.name))
	})
	e.mustOps(t, "link", "set", "h2:eth0", "up")
	if !hostCarrier(t, l, "h2") {
		t.Errorf("h2's eth0 has no carrier after its NIC's link came up")
	}
	e.ping(t, l, "h1", "h2")
	e.failOps(t, "changes only its link state (down, up) and rate", "link", "set", "h1:eth0", "delay", "5ms")
	e.failOps(t, lab.LinkSetCommand(e.state, l.name+"/sw1:p1", "delay 5ms"), "link", "set", "h1:eth0", "delay", "5ms")
	e.failOps(t, `rate "10X"`, "link", "set", "sw1:p1", "rate", "10X")
	e.failOps(t, "delay: time \"5\"", "link", "set", "sw1:p1", "delay", "5")
	e.failOps(t, "loss: \"2\"", "link", "set", "sw1:p1", "loss", "2")
	e.failOps(t, "-1G: a negative value", "link", "set", "sw1:p1", "rate", "-1G")
	e.failOps(t, `no port "p7" on sw1`, "link", "set", "sw1:p7", "down")
	e.failOps(t, "say which port", "link", "set", "sw1", "down")
	e.failOps(t, "has no node h7", "link", "set", "h7:eth0", "down")
	e.failOps(t, `"sideways": not a change`, "link", "set", "sw1:p1", "sideways")
	e.down(t, l, socks)
}

func hasKey(m map[string]uint64, k string) bool { _, ok := m[k]; return ok }

// testExtcapCapture runs the extcap capture phase into a FIFO while h1
// pings, and stops it with SIGTERM as Wireshark does.
func testExtcapCapture(t *testing.T, e *upEnv, l *upLab, iface string) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(e.bin, "emulab"), "extcap", "--state-dir", e.state, "--capture",
		"--extcap-interface", iface, "--fifo", fifo, "--debug")
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wireshark opens the FIFO for reading; the extcap opens it for
	// writing and streams. Opening blocks until both ends are open.
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			f = nil
		}
		opened <- f
	}()
	var f *os.File
	select {
	case f = <-opened:
		if f == nil {
			t.Fatal("open FIFO failed")
		}
	case err := <-exited:
		t.Fatalf("extcap --capture exited before opening the FIFO: %v\n%s", err, errOut.String())
	}
	defer f.Close()
	reached, done := readLive(f, 6)
	// Wait until it captures before pinging.
	for !strings.Contains(errOut.String(), "emulab extcap: capturing") {
		select {
		case err := <-exited:
			t.Fatalf("extcap --capture exited: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	e.ping(t, l, "h1", "h2")
	waitReached(t, "extcap --capture", reached, done)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("extcap --capture after SIGTERM: %v\n%s", err, errOut.String())
	}
	if r := <-done; r.err != nil || r.icmp < 6 { // 6, or more after a late reply (ping -w)
		t.Errorf("extcap capture of %s over 3 pings: %d records, %d ICMP echo, %v; want 6\n%s", iface, r.n, r.icmp, r.err, errOut.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testOpsTAP: with TAP hosts the host has no daemon; its port is its
// switch's, so capture and link set go to the switch port, and stats says
// where to look.
func testOpsTAP(t *testing.T, e *upEnv) {
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	socks := e.up(t, l, "tap")
	e.ping(t, l, "h1", "h2")
	e.failOps(t, "h1 has no daemon", "stats", "h1")
	e.failOps(t, "sw1:p1", "stats", "h1")
	st := e.mustOps(t, "stats", "sw1")
	if !regexp.MustCompile(`\n\s*p1\s+h1:eth0\s+[1-9]\d*\s+\d+\s+[1-9]\d*\s`).MatchString(st) {
		t.Errorf("stats sw1 with TAP hosts:\n%s", st)
	}
	if out := e.mustOps(t, "extcap", "--extcap-interfaces"); strings.Contains(out, "-h1-eth0") || !strings.Contains(out, "-sw1-p1}") {
		t.Errorf("extcap interfaces with TAP hosts:\n%s", out)
	}

	file := filepath.Join(t.TempDir(), "h1.pcapng")
	cp := e.startCapture(t, nil, "h1:eth0", "-w", file, "-c", "2")
	msgs := cp.msgs
	if !strings.Contains(msgs.String(), "capturing sw1:p1") {
		t.Errorf("capture h1:eth0 did not say it captures sw1:p1:\n%s", msgs)
	}
	e.ping(t, l, "h1", "h2")
	if err := cp.wait(); err != nil {
		t.Fatalf("capture: %v\n%s", err, msgs)
	}
	n, icmp, _ := readFile(t, file)
	if n != 2 || icmp != 2 {
		t.Errorf("capture h1:eth0 -c 2: %d records, %d ICMP", n, icmp)
	}

	_, errOut, code := e.runOps(t, "link", "set", "h1", "down")
	if code != 0 || !strings.Contains(errOut, "setting sw1:p1") {
		t.Errorf("link set h1 down: exit %d, %s", code, errOut)
	}
	if _, err := e.pingRTT(t, l, "h1", "h2"); err == nil {
		t.Errorf("ping while h1's link is down got a reply")
	}
	if hostCarrier(t, l, "h1") {
		t.Errorf("h1's eth0 has carrier while its switch port is down")
	}
	e.mustOps(t, "link", "set", "h1:eth0", "up", "delay", "5ms")
	if !hostCarrier(t, l, "h1") {
		t.Errorf("h1's eth0 has no carrier after its switch port came up")
	}
	rtt, err := e.pingRTT(t, l, "h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if rtt < 5 {
		t.Errorf("RTT %.3f ms with 5 ms delay on h1's link", rtt)
	}

	// A capture running when the lab goes down ends with the reason, and
	// what it wrote is a whole pcapng file.
	file = filepath.Join(t.TempDir(), "down.pcapng")
	cp = e.startCapture(t, nil, "sw1", "-w", file)
	e.ping(t, l, "h1", "h2")
	e.down(t, l, socks)
	err = cp.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(cp.msgs.String(), "the daemon ended the capture") {
		t.Errorf("capture across down: %v\n%s", err, cp.msgs)
	}
	if n, icmp, _ := readFile(t, file); icmp == 0 || n < icmp {
		t.Errorf("capture across down wrote %d records, %d ICMP", n, icmp)
	}
}

// hostCarrier reports whether node's eth0 has carrier, as its namespace's
// `ip link` shows it (NO-CARRIER when not).
func hostCarrier(t *testing.T, l *upLab, node string) bool {
	t.Helper()
	ns, err := lab.NamespaceName(l.name, node)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "-n", ns, "link", "show", "eth0").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s link show eth0: %v\n%s", ns, err, out)
	}
	return !strings.Contains(string(out), "NO-CARRIER")
}

// waitFor polls cond every 20 ms for up to 30 s (the daemons act on a
// link op asynchronously) and fails the test naming what it waited for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestExtcapPadLinks: an InfiniBand port's capture options offer padding
// its link packets (Wireshark 4.0 shows an unpadded one as Malformed), as
// emulab capture --pad-links does; a RoCE port's do not, and a capture of
// one with --pad-links is refused rather than the flag ignored.
func TestExtcapPadLinks(t *testing.T) {
	root := t.TempDir()
	fakeLab(t, root, &lab.LabInfo{Lab: "ib", Fabric: lab.FabricIB, Nodes: []lab.NodeInfo{
		{Name: "sw1", Kind: lab.KindSwitch, Control: "/nonexistent/ctl-sw1.sock", Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:ib0"}}},
		{Name: "h1", Kind: lab.KindNIC, Control: "/nonexistent/ctl-h1.sock", Ports: []lab.PortInfo{{Name: "ib0", Peer: "sw1:p1"}}},
	}})
	fakeLab(t, root, &lab.LabInfo{Lab: "roce", Nodes: []lab.NodeInfo{
		{Name: "sw1", Kind: lab.KindSwitch, Control: "/nonexistent/ctl-sw1.sock", Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:eth0"}}},
	}})
	for _, iface := range []string{"emulab-ib-sw1-p1", "emulab-ib-h1-ib0"} {
		out, err := runEmulab(t, "extcap", "--state-dir", root, "--extcap-interface", iface, "--extcap-config")
		if err != nil || !strings.Contains(out, "{call=--pad-links}") || !strings.Contains(out, "{type=boolflag}") {
			t.Errorf("%s --extcap-config: %q, %v; want a --pad-links boolflag", iface, out, err)
		}
	}
	out, err := runEmulab(t, "extcap", "--state-dir", root, "--extcap-interface", "emulab-roce-sw1-p1", "--extcap-config")
	if err != nil || strings.Contains(out, "pad-links") {
		t.Errorf("RoCE --extcap-config: %q, %v; want no --pad-links", out, err)
	}
	_, err = runEmulab(t, "extcap", "--state-dir", root, "--extcap-interface", "emulab-roce-sw1-p1", "--capture", "--fifo", filepath.Join(root, "fifo"), "--pad-links")
	if err == nil || !strings.Contains(err.Error(), "--pad-links: emulab-roce-sw1-p1 is not a port of an InfiniBand lab") {
		t.Errorf("RoCE capture --pad-links: %v", err)
	}
}

// TestSetPadLinks: emulab capture --pad-links asks every daemon of an
// InfiniBand capture to pad, and refuses a RoCE lab's ports.
func TestSetPadLinks(t *testing.T) {
	ib := []*liveSource{{node: "sw1", lab: "a", link: capture.LinkTypeERF}, {node: "h1", lab: "a", link: capture.LinkTypeERF}}
	if err := setPadLinks(ib); err != nil || !ib[0].padLinks || !ib[1].padLinks {
		t.Errorf("IB sources: %v, pad %v %v", err, ib[0].padLinks, ib[1].padLinks)
	}
	roce := []*liveSource{{node: "sw1", lab: "r", link: capture.LinkTypeEthernet}}
	if err := setPadLinks(roce); err == nil || !strings.Contains(err.Error(), "lab r is not InfiniBand") {
		t.Errorf("RoCE source: %v", err)
	}
}

// TestIBLiveNoSMHint: ib nodes on a running lab without a subnet manager
// points at the static view of its lab file.
func TestIBLiveNoSMHint(t *testing.T) {
	root := t.TempDir()
	fakeLab(t, root, &lab.LabInfo{Lab: "ibs", Fabric: lab.FabricIB, File: "/labs/ib-two-hosts.yaml", Nodes: []lab.NodeInfo{
		{Name: "sw1", Kind: lab.KindSwitch, Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:ib0"}}},
	}})
	resetFlags(t, "ib nodes") // other tests' ib flags
	_, err := runEmulab(t, "ib", "nodes", "--state-dir", root, "ibs")
	if err == nil || !strings.Contains(err.Error(), "no emunic runs a subnet manager") || !strings.Contains(err.Error(), "`emulab ib nodes /labs/ib-two-hosts.yaml`") {
		t.Errorf("ib nodes: %v", err)
	}
	_, err = runEmulab(t, "ib", "nodes", "-l", "--state-dir", root, "ibs")
	if err == nil || !strings.Contains(err.Error(), "`emulab ib nodes --list /labs/ib-two-hosts.yaml`") {
		t.Errorf("ib nodes -l: %v", err)
	}
}

// TestWriteLoopLag: a daemon whose loop ran late says so, in its kind's
// terms; one on time says nothing.
func TestWriteLoopLag(t *testing.T) {
	var sb strings.Builder
	writeLoopLag(&sb, &lab.NodeInfo{Name: "h1", Kind: lab.KindNIC}, map[string]uint64{"loop_late": 0, "loop_lag_max_ns": 900_000})
	if sb.Len() != 0 {
		t.Errorf("on time: %q", sb.String())
	}
	writeLoopLag(&sb, &lab.NodeInfo{Name: "h1", Kind: lab.KindNIC}, map[string]uint64{"loop_late": 1, "loop_lag_max_ns": 2_000_000})
	if want := "h1: the daemon ran up to 2.0 ms late, once 1 ms or more (loop_lag_max_ns, loop_late: the machine is short of CPU, or the daemon was stopped; its frames, ACKs and CNPs went that late, and RC timeouts shorter than it fire)\n"; sb.String() != want {
		t.Errorf("got %q\nwant %q", sb.String(), want)
	}
}
