package lab

import (
	"bufio"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseProbability(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{in: "0", want: 0},
		{in: "1", want: 1},
		{in: "0.01", want: 0.01},
		{in: " 0.5 ", want: 0.5},
		{in: "1%", want: 0.01},
		{in: "0.5%", want: 0.005},
		{in: "100%", want: 1},
		{in: "0%", want: 0},
		{in: "2", err: `"2" is not a probability in [0, 1] (write 2% for a percentage)`},
		{in: "-0.1", err: "not a probability in [0, 1]"},
		{in: "101%", err: `"101%" is not a percentage in [0%, 100%]`},
		{in: "-1%", err: "not a percentage"},
		{in: "", err: "is not a probability"},
		{in: "%", err: "is not a probability"},
		{in: "x", err: "is not a probability"},
		{in: "NaN", err: "is not a probability"},
		{in: "Inf", err: "is not a probability"},
		{in: "1e-3", want: 0.001},
	} {
		got, err := ParseProbability(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseProbability(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ParseProbability(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseProbability: any input is a probability in [0, 1] or an
// error, never a panic, NaN or a value out of range.
func FuzzParseProbability(f *testing.F) {
	for _, s := range []string{"0", "1", "0.01", "1%", "100%", "101%", "2", "-0", "NaN", "Inf", "1e-300", "0x1p-2", "%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProbability(s)
		if err != nil {
			return
		}
		if !(p >= 0 && p <= 1) {
			t.Fatalf("ParseProbability(%q) = %v", s, p)
		}
	})
}

func TestSplitEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, node, port string }{
		{"sw1:p1", "sw1", "p1"},
		{"lab/sw1:p1", "lab/sw1", "p1"},
		{"h1", "h1", ""},
		{"h1:", "h1", ""},
	} {
		if n, p := SplitEndpoint(tc.in); n != tc.node || p != tc.port {
			t.Errorf("SplitEndpoint(%q) = %q, %q", tc.in, n, p)
		}
	}
}

func TestReadInfo(t *testing.T) {
	root := t.TempDir()
	li := &LabInfo{Lab: "x", Nodes: []NodeInfo{
		{Name: "sw1", Kind: KindSwitch, Control: "/c", Ports: []PortInfo{{Name: "p1", Peer: "h1:eth0"}, {Name: "p2", Peer: "h2:eth0"}}},
		{Name: "h1", Kind: KindNIC},
	}}
	if err := os.MkdirAll(filepath.Join(root, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(li)
	if err := os.WriteFile(filepath.Join(root, "x", upInfoFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInfo(root, "x")
	if err != nil {
		t.Fatal(err)
	}
	sw := got.Node("sw1")
	if sw == nil || sw.Control != "/c" || sw.Port("p2") == nil || sw.Port("p2").Peer != "h2:eth0" || sw.Port("p3") != nil {
		t.Errorf("ReadInfo: %+v", got)
	}
	if got.Node("h9") != nil {
		t.Error("Node(h9) found")
	}
	if s := sw.PortNames(); s != "p1, p2" {
		t.Errorf("PortNames = %q", s)
	}
	if s := got.Node("h1").PortNames(); s != "none" {
		t.Errorf("PortNames of a node without ports = %q", s)
	}
	if _, err := ReadInfo(root, "y"); err == nil || !strings.Contains(err.Error(), "lab y is not up") {
		t.Errorf("ReadInfo of a missing lab: %v", err)
	}
	if _, err := ReadInfo(root, "../x"); err == nil {
		t.Error("ReadInfo accepted a name with a slash")
	}
}

// fakeDaemon serves a control socket with canned answers: one response
// line per request, and for capture the OK line followed by stream.
func fakeDaemon(t *testing.T, answer func(req map[string]any) string, stream string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadBytes('\n')
					if err != nil {
						return
					}
					var req map[string]any
					json.Unmarshal(line, &req)
					c.Write([]byte(answer(req) + "\n"))
					if req["op"] == "capture" {
						c.Write([]byte(stream))
						return
					}
				}
			}()
		}
	}()
	return path
}

func TestOpsClient(t *testing.T) {
	var mu sync.Mutex
	var reqs []map[string]any
	got := func(i int) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return reqs[i]
	}
	last := func() map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return reqs[len(reqs)-1]
	}
	ctl := fakeDaemon(t, func(req map[string]any) string {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		switch req["op"] {
		case "counters":
			return `{"ok":true,"ports":[{"port":"eth0","counters":{"rx_packets_phy":7}}],"hw_counters":{"np_cnp_sent":2},"ethtool":"NIC statistics:\n     rx_packets_phy: 7\n","rdma":"np_cnp_sent 2\n"}`
		case "link":
			if req["delay"] == "bad" {
				return `{"ok":false,"error":"delay \"bad\": nope"}`
			}
			return `{"ok":true,"port":{"port":"p1","admin_up":false}}`
		case "capture":
			if ports, _ := req["ports"].([]any); len(ports) == 1 && ports[0] == "p9" {
				return `{"ok":false,"error":"no port \"p9\""}`
			}
			return `{"ok":true,"ports":["p1"]}`
		}
		return `{"ok":false,"error":"unknown op"}`
	}, "PCAPNG-BYTES")

	c, err := QueryCounters(ctl, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ports) != 1 || c.Ports[0].Counters["rx_packets_phy"] != 7 || c.HWCounters["np_cnp_sent"] != 2 ||
		c.Ethtool != "NIC statistics:\n     rx_packets_phy: 7\n" || c.RDMA != "np_cnp_sent 2\n" {
		t.Errorf("QueryCounters: %+v", c)
	}
	if _, ok := got(0)["port"]; ok {
		t.Errorf("counters without a port sent %v", got(0))
	}

	loss := 0.25
	raw, err := SetLink(ctl, LinkChange{Port: "p1", State: "down", Loss: &loss}, time.Second)
	if err != nil || !strings.Contains(string(raw), `"admin_up":false`) {
		t.Errorf("SetLink: %s, %v", raw, err)
	}
	if r := got(1); r["op"] != "link" || r["port"] != "p1" || r["state"] != "down" || r["loss"] != 0.25 || r["rate"] != nil || r["corrupt"] != nil {
		t.Errorf("SetLink sent %v", r)
	}
	if _, err := SetLink(ctl, LinkChange{Port: "p1", Delay: "bad"}, time.Second); err == nil || !strings.Contains(err.Error(), `delay "bad": nope`) {
		t.Errorf("SetLink refused: %v", err)
	}

	cs, err := OpenCapture(ctl, []string{"p1"}, false, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r := last(); r["op"] != "capture" || r["pad_links"] != nil {
		t.Errorf("OpenCapture sent %v", r)
	}
	b := make([]byte, 64)
	n, _ := cs.Read(b)
	if string(b[:n]) != "PCAPNG-BYTES" {
		t.Errorf("capture stream %q", b[:n])
	}
	cs.Close()
	if _, err := OpenCapture(ctl, []string{"p9"}, false, time.Second); err == nil || !strings.Contains(err.Error(), `no port "p9"`) {
		t.Errorf("OpenCapture of a missing port: %v", err)
	}
	// An IB capture for Wireshark 4.0 asks the daemon to pad link packets.
	cs, err = OpenCapture(ctl, []string{"p1"}, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if r := last(); r["op"] != "capture" || r["pad_links"] != true {
		t.Errorf("OpenCapture with padLinks sent %v", r)
	}

	c2 := LinkChange{State: "up"}
	if !c2.OnlyState() || c2.Empty() {
		t.Error("state only")
	}
	c2.Rate = "1G"
	if c2.OnlyState() {
		t.Error("rate is more than state")
	}
	if !(&LinkChange{}).Empty() {
		t.Error("empty change")
	}
}
