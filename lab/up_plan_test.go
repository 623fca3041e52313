package lab

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// upTestSock is the socket function of the plan tests: paths under a fake
// state directory, with the names it was asked for recorded.
func upTestSock(names *[]string) func(string) (string, error) {
	return func(name string) (string, error) {
		if err := nsCheckFileName(name); err != nil {
			return "", err
		}
		*names = append(*names, name)
		return "/st/x/sock/" + name + ".sock", nil
	}
}

func upParse(t *testing.T, src string) *Spec {
	t.Helper()
	s, err := Parse("lab.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const upTwoHosts = `name: x
topology:
  defaults: {mtu: 9000}
  nodes:
    sw1: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic, ipv4: 10.0.7.9}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
`

func TestUpPlanTAP(t *testing.T) {
	var socks []string
	p, err := makePlan(upParse(t, upTwoHosts), HostsTAP, "/abs/lab.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(socks, []string{"ctl-sw1"}) {
		t.Errorf("sockets %v: TAP hosts need only the switch's control socket", socks)
	}
	d := p.daemons()
	if len(d) != 1 || d[0].node.Name != "sw1" {
		t.Fatalf("daemons %v", d)
	}
	want := []string{"--lab", "/abs/lab.yaml", "--node", "sw1",
		"--port", "p1=tap:eth0@emu-x-h1", "--port", "p2=tap:eth0@emu-x-h2",
		"--control", "/st/x/sock/ctl-sw1.sock"}
	if !slices.Equal(d[0].daemon.args, want) {
		t.Errorf("emuswitch args\n got %q\nwant %q", d[0].daemon.args, want)
	}
	h1 := p.nodes[1]
	if h1.namespace != "emu-x-h1" || h1.daemon != nil || h1.iface == nil {
		t.Fatalf("h1 %+v", h1)
	}
	f := h1.iface
	if f.name != "eth0" || f.mtu != 9000 || f.addr != netip.MustParsePrefix("10.0.0.1/24") ||
		f.mac != [6]byte{2, 0, 0, 0, 0, 2} || f.owner != "emuswitch-sw1" {
		t.Errorf("h1 iface %+v", f)
	}
	// h2 is in another /24: a route to it, and it as a static neighbour.
	if !slices.Equal(f.routes, []netip.Prefix{netip.MustParsePrefix("10.0.7.0/24")}) {
		t.Errorf("h1 routes %v", f.routes)
	}
	if len(f.neigh) != 1 || f.neigh[0].ip != netip.MustParseAddr("10.0.7.9") || f.neigh[0].mac != [6]byte{2, 0, 0, 0, 0, 3} {
		t.Errorf("h1 neighbours %+v", f.neigh)
	}
	if g := p.nodes[2].iface; !slices.Equal(g.routes, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}) || g.addr.String() != "10.0.7.9/24" {
		t.Errorf("h2 iface %+v", g)
	}
}

func TestUpPlanNIC(t *testing.T) {
	var socks []string
	p, err := makePlan(upParse(t, upTwoHosts), HostsNIC, "/abs/lab.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(socks, []string{"link0", "link1", "ctl-sw1", "ctl-h1", "ctl-h2"}) {
		t.Errorf("sockets %v", socks)
	}
	d := p.daemons()
	var names []string
	for _, pn := range d {
		names = append(names, pn.daemon.name)
	}
	// Switches (listeners) start before NICs (dialers).
	if !slices.Equal(names, []string{"emuswitch-sw1", "emunic-h1", "emunic-h2"}) {
		t.Fatalf("daemons %v", names)
	}
	if want := []string{"--lab", "/abs/lab.yaml", "--node", "sw1",
		"--port", "p1=shm-listen:/st/x/sock/link0.sock", "--port", "p2=shm-listen:/st/x/sock/link1.sock",
		"--control", "/st/x/sock/ctl-sw1.sock"}; !slices.Equal(d[0].daemon.args, want) {
		t.Errorf("emuswitch args\n got %q\nwant %q", d[0].daemon.args, want)
	}
	if want := []string{"--lab", "/abs/lab.yaml", "--node", "h2", "--tap", "eth0@emu-x-h2",
		"--port", "shm-dial:/st/x/sock/link1.sock", "--control", "/st/x/sock/ctl-h2.sock"}; !slices.Equal(d[2].daemon.args, want) {
		t.Errorf("emunic args\n got %q\nwant %q", d[2].daemon.args, want)
	}
	if d[1].iface.owner != "emunic-h1" {
		t.Errorf("h1's TAP owner %q", d[1].iface.owner)
	}
}

// Between two switches endpoint A listens and B dials; between two NICs
// too (HostsNIC only).
func TestUpPlanPeers(t *testing.T) {
	src := `name: y
topology:
  nodes:
    sw1: {kind: switch}
    sw2: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
    h3: {kind: nic}
    h4: {kind: nic}
  links:
    - endpoints: ["sw2:p9", "sw1:p9"]
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["sw2:p1", "h2:eth0"]
    - endpoints: ["h3:eth0", "h4:eth0"]
`
	var socks []string
	p, err := makePlan(upParse(t, src), HostsNIC, "/f.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	uri := map[string]string{}
	for _, pn := range p.nodes {
		for _, pp := range pn.ports {
			uri[pn.node.Name+":"+pp.name] = pp.uri
		}
	}
	for port, want := range map[string]string{
		"sw2:p9":  "shm-listen:/st/x/sock/link0.sock",
		"sw1:p9":  "shm-dial:/st/x/sock/link0.sock",
		"sw1:p1":  "shm-listen:/st/x/sock/link1.sock",
		"h1:eth0": "shm-dial:/st/x/sock/link1.sock",
		"sw2:p1":  "shm-listen:/st/x/sock/link2.sock",
		"h2:eth0": "shm-dial:/st/x/sock/link2.sock",
		"h3:eth0": "shm-listen:/st/x/sock/link3.sock",
		"h4:eth0": "shm-dial:/st/x/sock/link3.sock",
	} {
		if uri[port] != want {
			t.Errorf("%s: %q, want %q", port, uri[port], want)
		}
	}
	// With TAP hosts a NIC-NIC link has no switch to own the TAPs.
	_, err = makePlan(upParse(t, src), HostsTAP, "/f.yaml", upTestSock(&socks))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 8 || !strings.Contains(fe.Msg, "two NICs") {
		t.Errorf("NIC-NIC link with TAP hosts: %v", err)
	}
}

// An IB lab builds emunic HCAs with IPoIB interfaces (IB MTU - 4), never
// TAP hosts, and its switches get no --no-flood (they forward by LFT).
func TestUpPlanIB(t *testing.T) {
	src := `name: z
fabric: ib
topology:
  defaults: {mtu: 2048}
  nodes:
    sw1: {kind: switch}
    sw2: {kind: switch}
    sw3: {kind: switch}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:ib0", "sw1:p1"]
    - endpoints: ["h2:ib0", "sw2:p1"]
    - endpoints: ["sw1:p2", "sw2:p2"]
    - endpoints: ["sw2:p3", "sw3:p1"]
    - endpoints: ["sw3:p2", "sw1:p3"]
`
	var socks []string
	p, err := makePlan(upParse(t, src), HostsNIC, "/f.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	for _, pn := range p.nodes {
		if pn.iface != nil && pn.iface.mtu != 2044 {
			t.Errorf("%s: interface mtu %d, want 2044 (IPoIB over a 2048 IB MTU)", pn.node.Name, pn.iface.mtu)
		}
		if pn.daemon != nil && slices.Contains(pn.daemon.args, "--no-flood") {
			t.Errorf("%s: %v: an IB switch floods nothing", pn.node.Name, pn.daemon.args)
		}
	}
	_, err = makePlan(upParse(t, src), HostsTAP, "/f.yaml", upTestSock(&socks))
	if err == nil || !strings.Contains(err.Error(), "needs emunic HCAs") {
		t.Errorf("TAP hosts in an IB lab: %v", err)
	}
}

// A plan is made for a resolved host mode only.
func TestUpPlanRefused(t *testing.T) {
	var socks []string
	if _, err := makePlan(upParse(t, upTwoHosts), HostsAuto, "/f.yaml", upTestSock(&socks)); err == nil {
		t.Error("plan with HostsAuto accepted")
	}
}

// A socket path that does not fit sun_path is an error before anything
// exists.
func TestUpPlanSocketError(t *testing.T) {
	boom := errors.New("socket path too long")
	_, err := makePlan(upParse(t, upTwoHosts), HostsNIC, "/f.yaml", func(string) (string, error) { return "", boom })
	if !errors.Is(err, boom) {
		t.Errorf("got %v", err)
	}
}

func TestUpParseHostMode(t *testing.T) {
	for _, s := range []string{"auto", "nic", "tap"} {
		if m, err := ParseHostMode(s); err != nil || string(m) != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	for _, s := range []string{"", "TAP", "veth", "nic;"} {
		if _, err := ParseHostMode(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestUpTable(t *testing.T) {
	li := &LabInfo{Lab: "x", File: "/abs/lab.yaml", Hosts: HostsNIC, StateDir: "/st/x", Took: 150 * time.Millisecond,
		Nodes: []NodeInfo{
			{Name: "sw1", Kind: KindSwitch, Namespace: "emu-x-sw1", Daemon: "emuswitch-sw1", Binary: "emuswitch", Pid: 42,
				Ports: []PortInfo{{Name: "p1", Peer: "h1:eth0", Transport: "shm-listen:/st/x/sock/link0.sock"}}},
			{Name: "h1", Kind: KindNIC, Namespace: "emu-x-h1", Daemon: "emunic-h1", Binary: "emunic", Pid: 43,
				Ports: []PortInfo{{Name: "eth0", Peer: "sw1:p1", Transport: "shm-dial:/st/x/sock/link0.sock"}},
				Iface: &IfaceInfo{Name: "eth0", Addr: "10.0.0.1/24", MAC: "02:00:00:00:00:02", MTU: 4200, Owner: "emunic-h1"}},
			{Name: "h9", Kind: KindNIC, Namespace: "emu-x-h9"},
		}}
	var b bytes.Buffer
	if err := li.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `lab x is up (/abs/lab.yaml, hosts nic, 0.15s); state /st/x
NODE  KIND    NAMESPACE  DAEMON     PID  PORT  PEER     TRANSPORT / ADDRESS
sw1   switch  emu-x-sw1  emuswitch  42   p1    h1:eth0  shm-listen:sock/link0.sock
h1    nic     emu-x-h1   emunic     43   eth0  sw1:p1   10.0.0.1/24 mtu 4200 02:00:00:00:00:02 (TAP held by emunic-h1) via shm-dial:sock/link0.sock
h9    nic     emu-x-h9   -          -    -     -        -
`
	if b.String() != want {
		t.Errorf("table\n%s\nwant\n%s", b.String(), want)
	}
}

func TestUpFindBinary(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindBinary("emuswitch", dir); !errors.Is(err, ErrBinaryNotFound) {
		t.Errorf("empty --bin-dir: %v", err)
	}
	if err := writeExec(dir+"/emuswitch", 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := FindBinary("emuswitch", dir); err != nil || p != dir+"/emuswitch" {
		t.Errorf("got %q, %v", p, err)
	}
	if err := writeExec(dir+"/emunic", 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FindBinary("emunic", dir); !errors.Is(err, ErrBinaryNotFound) {
		t.Errorf("non-executable file accepted: %v", err)
	}
	// Without a directory: PATH.
	t.Setenv("PATH", dir)
	if p, err := FindBinary("emuswitch", ""); err != nil || p != dir+"/emuswitch" {
		t.Errorf("PATH: %q, %v", p, err)
	}
	if _, err := FindBinary("emunic-missing", ""); !errors.Is(err, ErrBinaryNotFound) || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestUpLogSaysReady(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		log  string
		want bool
	}{
		{"", false},
		{"starting\n", false},
		{"starting\nready\n", true},
		{"ready", true},
		{"2026/01/01 sw1: already bound\n", false},
		{"not ready\n", false},
	} {
		p := dir + "/d.log"
		if err := writeFile(p, c.log); err != nil {
			t.Fatal(err)
		}
		if got, err := logSaysReady(p); err != nil || got != c.want {
			t.Errorf("%q: %v %v", c.log, got, err)
		}
	}
	if _, err := logSaysReady(dir + "/missing.log"); err == nil {
		t.Error("missing log: no error")
	}
}

func writeExec(p string, mode os.FileMode) error {
	return os.WriteFile(p, []byte("#!/bin/sh\n"), mode)
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o600) }

// TestUpPlanMetrics: --metrics gives the daemons consecutive ports in the
// plan's node order, opened in the namespace named; a port of 0 and a
// range past 65535 are refused, saying why.
func TestUpPlanMetrics(t *testing.T) {
	var socks []string
	p, err := makePlan(upParse(t, upTwoHosts), HostsNIC, "/abs/lab.yaml", upTestSock(&socks))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.metrics("127.0.0.1:9100", "/proc/1/ns/net"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sw1": "127.0.0.1:9100", "h1": "127.0.0.1:9101", "h2": "127.0.0.1:9102"}
	for _, pn := range p.nodes {
		if d := pn.daemon; d != nil {
			if d.metrics != want[pn.node.Name] || !slices.Equal(d.args[len(d.args)-4:], []string{"--metrics", d.metrics, "--metrics-netns", "/proc/1/ns/net"}) {
				t.Errorf("%s: metrics %q, args %q", pn.node.Name, d.metrics, d.args)
			}
		}
	}
	for _, c := range []struct{ base, want string }{
		{"127.0.0.1:0", "give the first daemon's port"},
		{"127.0.0.1:65534", "past 65535"},
		{"localhost", "want ADDR:PORT"},
	} {
		p, _ := makePlan(upParse(t, upTwoHosts), HostsNIC, "/abs/lab.yaml", upTestSock(&socks))
		if err := p.metrics(c.base, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--metrics %s: %v, want %q", c.base, err, c.want)
		}
	}
}
