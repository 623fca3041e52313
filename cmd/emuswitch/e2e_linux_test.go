package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/internal/daemontest"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/swd"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// TestEmuswitchTwoHosts is the end-to-end test of the daemon (root):
//
//	netns emu-<lab>-h1           netns emu-<lab>-sw1          netns emu-<lab>-h2
//	  eth0 10.0.0.1/24 ---- TAP p1 [ emuswitch sw1 ] TAP p2 ---- eth0 10.0.0.2/24
//
// The binary is built from this package, started as a supervised daemon
// in the switch's namespace, and creates both TAPs in the hosts'
// namespaces. Ping and iperf3 TCP cross it; counters and a live capture
// come over the control socket; then the daemon is killed with SIGKILL
// and lab.Teardown must leave no namespace, TAP, socket file or process.
func TestEmuswitchTwoHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, TAP devices and daemons in them (CI runs as root)")
	}
	pingPath := needTool(t, "ping")
	iperfPath := needTool(t, "iperf3")
	bin := buildDaemon(t)

	root := t.TempDir()
	labName := fmt.Sprintf("esw%d", os.Getpid()%100000)
	t.Cleanup(func() {
		if err := lab.Teardown(root, labName, 2*time.Second); err != nil {
			t.Errorf("cleanup teardown: %v", err)
		}
	})
	st, err := lab.OpenState(root, labName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // before the Teardown above (cleanups run last first)
	labFile := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(labFile, []byte(`name: `+labName+`
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 1500}
  nodes:
    sw1: {kind: switch, cut_through: true}
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
    - endpoints: ["h2:eth0", "sw1:p2"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	nsNames := map[string]string{}
	nss := map[string]*lab.Namespace{}
	for _, node := range []string{"sw1", "h1", "h2"} {
		name, err := lab.NamespaceName(labName, node)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.RecordNamespace(name); err != nil {
			t.Fatal(err)
		}
		ns, err := lab.CreateNamespace(name)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		nsNames[node], nss[node] = name, ns
	}
	ctl, err := st.SocketPath("ctl-sw1")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := st.Start(lab.ProcSpec{Name: "emuswitch-sw1", Namespace: nsNames["sw1"], Path: bin, Args: []string{
		"--lab", labFile, "--node", "sw1", "--control", ctl,
		"--port", "p1=tap:eth0@" + nsNames["h1"], "--port", "p2=tap:eth0@" + nsNames["h2"],
	}})
	if err != nil {
		t.Fatal(err)
	}
	logPath, _ := st.LogPath("emuswitch-sw1")
	waitReady(t, proc, logPath)

	for i, h := range []string{"h1", "h2"} {
		if err := nss[h].AddAddr("eth0", netip.MustParsePrefix(fmt.Sprintf("10.0.0.%d/24", i+1))); err != nil {
			t.Fatal(err)
		}
		if err := nss[h].LinkUp("eth0"); err != nil {
			t.Fatal(err)
		}
	}
	// The port's carrier came on as an event: the host sees its link UP,
	// as behind a NIC (the kernel's link watch may take a second to say
	// so).
	for _, h := range []string{"h1", "h2"} {
		var out string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			out, err = runIn(nsNames[h], "cat", "/sys/class/net/eth0/operstate")
			if out = strings.TrimSpace(out); err == nil && out == "up" || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || out != "up" {
			t.Errorf("%s eth0 operstate %q (%v), want up", h, out, err)
		}
	}
	before := counters(t, ctl)

	// -c with -w: ping exits 0 once 5 replies came, waiting up to 10 s for
	// them (without -w the last reply has only 200 ms, which a stalled
	// machine exceeds).
	out, err := runIn(nsNames["h1"], pingPath, "-c", "5", "-i", "0.2", "-w", "10", "10.0.0.2")
	if err != nil || !strings.Contains(out, " 5 received") {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	res := iperf3(t, nsNames, iperfPath)
	t.Logf("iperf3 TCP through emuswitch: %.2f Gb/s, %d retransmits", res.End.SumReceived.BitsPerSecond/1e9, res.End.SumSent.Retransmits)

	after := counters(t, ctl)
	minBytes := uint64(res.End.SumReceived.Bytes)
	for _, c := range []struct {
		port, name string
		min        uint64
	}{
		{"p1", "rx_packets_phy", 5}, {"p2", "tx_packets_phy", 5},
		{"p2", "rx_packets_phy", 5}, {"p1", "tx_packets_phy", 5},
		{"p1", "rx_bytes_phy", minBytes}, {"p2", "tx_bytes_phy", minBytes},
	} {
		if got := after[c.port][c.name] - before[c.port][c.name]; got < c.min {
			t.Errorf("%s %s grew by %d, want >= %d", c.port, c.name, got, c.min)
		}
	}
	for _, p := range []string{"p1", "p2"} {
		if d := after[p]["link_queue_drop"] + after[p]["transport_tx_queue_drop"] + after[p]["drop_no_route"] + after[p]["drop_malformed"]; d != 0 {
			t.Errorf("%s dropped %d frames: %v", p, d, after[p])
		}
	}

	captureFrames(t, ctl, nsNames["h1"], pingPath)

	// kill -9: the TAPs go with the daemon's descriptors, Teardown removes
	// the rest.
	if err := syscall.Kill(proc.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-proc.Done()
	for _, h := range []string{"h1", "h2"} {
		names, err := nss[h].LinkNames()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, "eth0") {
			t.Errorf("%s: TAP eth0 survived kill -9 of its daemon", h)
		}
	}
	if _, err := os.Stat(ctl); err != nil {
		t.Logf("control socket after kill -9: %v", err)
	}
	for _, ns := range nss {
		ns.Close()
	}
	// Teardown from the state directory alone, as `emulab down` after
	// kill -9 would: release our hold on it first.
	st.Close()
	if err := lab.Teardown(root, labName, 2*time.Second); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	for node, name := range nsNames {
		if lab.NamespaceExists(name) {
			t.Errorf("namespace of %s (%s) left", node, name)
		}
	}
	if _, err := os.Stat(ctl); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket %s left: %v", ctl, err)
	}
	if err := syscall.Kill(proc.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("daemon pid %d still exists: %v", proc.Pid, err)
	}
	if _, err := os.Stat(filepath.Join(root, labName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left: %v", err)
	}
}

// needTool finds an external tool; with CI=true a missing tool fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

// buildDaemon builds this package's binary into a temporary directory.
func buildDaemon(t *testing.T) string { return daemontest.Build(t, "emuswitch") }

func waitReady(t *testing.T, proc *lab.Proc, logPath string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("ready\n")) {
			return
		}
		select {
		case <-proc.Done():
			t.Fatalf("emuswitch exited: %v\n%s", proc.Wait(), b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("emuswitch not ready after 30 s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runIn(ns, path string, args ...string) (string, error) {
	cmd := exec.Command(path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := lab.StartIn(ns, cmd); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}

type iperfResult struct {
	Error string `json:"error"`
	End   struct {
		SumSent struct {
			Retransmits int64 `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

// iperf3 runs 2 s of TCP from h1 to h2.
func iperf3(t *testing.T, ns map[string]string, iperfPath string) iperfResult {
	t.Helper()
	srv := exec.Command(iperfPath, "-s", "-1", "-p", "5201", "-B", "10.0.0.2")
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := lab.StartIn(ns["h2"], srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	var res iperfResult
	for attempt := 0; ; attempt++ {
		out, err := runIn(ns["h1"], iperfPath, "-c", "10.0.0.2", "-p", "5201", "-t", "2", "-J")
		res = iperfResult{}
		if err == nil && json.Unmarshal([]byte(out), &res) == nil && res.Error == "" {
			break
		}
		if attempt == 50 { // the server may not listen yet
			t.Fatalf("iperf3: %v\n%s\nserver:\n%s", err, out, srvOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.End.SumReceived.Bytes == 0 {
		t.Fatalf("iperf3 moved nothing")
	}
	return res
}

// counters fetches every port's counters over the control socket.
func counters(t *testing.T, ctl string) map[string]map[string]uint64 {
	t.Helper()
	c, err := net.Dial("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, `{"op":"counters"}`+"\n")
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var r swd.CountersResponse
	if err := json.Unmarshal(line, &r); err != nil || !r.OK || len(r.Ports) != 2 {
		t.Fatalf("counters: %v %s", err, line)
	}
	m := map[string]map[string]uint64{}
	for _, p := range r.Ports {
		m[p.Port] = p.Counters
	}
	return m
}

// captureFrames captures p1 while h1 pings h2 and decodes the echo
// requests and replies from the pcapng stream.
func captureFrames(t *testing.T, ctl, h1, pingPath string) {
	t.Helper()
	c, err := net.Dial("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, `{"op":"capture","ports":["p1"]}`+"\n")
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	if err != nil || !bytes.Contains(line, []byte(`"ok":true`)) {
		t.Fatalf("capture: %v %s", err, line)
	}
	pingDone := make(chan error, 1)
	go func() {
		_, err := runIn(h1, pingPath, "-c", "3", "-i", "0.2", "-W", "5", "10.0.0.2")
		pingDone <- err
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	r, err := capture.Open(br)
	if err != nil {
		t.Fatal(err)
	}
	var rec capture.Record
	var rx, tx int
	for rx < 3 || tx < 3 {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("capture after %d rx, %d tx: %v", rx, tx, err)
		}
		var l2 wire.L2
		if err := wire.DecodeEthernet(rec.Data, &l2); err != nil {
			t.Fatalf("captured frame: %v", err)
		}
		if l2.EtherType != wire.EtherTypeIPv4 || wire.IPv4(rec.Data[l2.HdrLen:]).Protocol() != 1 {
			continue // ARP, IPv6 neighbour discovery
		}
		switch {
		case strings.HasPrefix(rec.Comment, "rx"):
			rx++
		case strings.HasPrefix(rec.Comment, "tx"):
			tx++
		default:
			t.Errorf("comment %q: want rx or tx", rec.Comment)
		}
	}
	if err := <-pingDone; err != nil {
		t.Errorf("ping during capture: %v", err)
	}
}
