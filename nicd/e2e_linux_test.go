package nicd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// End to end, as root (CI runs as root):
//
//	netns emu-<lab>-h1                           netns emu-<lab>-h2
//	  eth0 10.0.0.1/24 (TAP)                       eth0 10.0.0.2/24 (TAP)
//	    |                                            |
//	emunic h1 --[unix SOCK_SEQPACKET, h2 listens]-- emunic h2
//	    \ control socket                            / control socket
//	     `------------- this test (client) --------'
//
// Two emunic processes built from cmd/emunic, started by the lab's
// supervision helpers. Ping and iperf3 TCP prove kernel traffic through the
// NIC path (TAP with TSO/GSO, the NIC's classifier and queues, the link);
// then the built-in engine moves 1 MiB by WRITE, READ and SEND between
// memfd buffers of this process, verified byte for byte, and a
// write_bw-style run is measured. kill -9 of one daemon, then Teardown,
// must leave nothing behind.

func e2eSkipUnlessRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, TAP devices and daemons (CI runs as root)")
	}
}

func e2eNeedTool(t testing.TB, name string) string {
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

// buildEmunic builds cmd/emunic into dir.
func buildEmunic(t testing.TB, dir string) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = e2eNeedTool(t, "go")
	}
	bin := filepath.Join(dir, "emunic")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/emufabric/emufabric/cmd/emunic").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/emunic: %v\n%s", err, out)
	}
	return bin
}

type e2eLab struct {
	state    *lab.State
	name     string
	ns       [2]*lab.Namespace
	procs    [2]*lab.Proc
	ctl      [2]string
	linkSock string
	bin      string
	labFile  string
}

// nsOf is the namespace name of host i.
func (l *e2eLab) nsOf(i int) string { return l.ns[i].Name }

func waitReady(t testing.TB, st *lab.State, name string, p *lab.Proc) {
	t.Helper()
	logPath, _ := st.LogPath(name)
	for i := 0; ; i++ {
		b, _ := os.ReadFile(logPath)
		for _, l := range strings.Split(string(b), "\n") {
			if l == "ready" {
				return
			}
		}
		select {
		case <-p.Done():
			b, _ = os.ReadFile(logPath)
			t.Fatalf("%s exited before ready:\n%s", name, b)
		default:
		}
		if i == 3000 {
			t.Fatalf("%s not ready after 30 s:\n%s", name, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newE2ELab(t *testing.T) *e2eLab {
	t.Helper()
	e2eSkipUnlessRoot(t)
	dir := t.TempDir()
	bin := buildEmunic(t, dir)
	l := &e2eLab{name: fmt.Sprintf("nicd%d", os.Getpid()%100000)}
	labFile := filepath.Join(dir, "lab.yaml")
	// The lab defaults: 100 Gb/s, 1 us, IP MTU 4200 (a 4096-byte RoCE MTU).
	y := fmt.Sprintf(`name: %s
topology:
  defaults: {rate: 100G, delay: 1us, mtu: 4200}
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "h2:eth0"]
`, l.name)
	if err := os.WriteFile(labFile, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := lab.OpenState(filepath.Join(dir, "state"), l.name)
	if err != nil {
		t.Fatal(err)
	}
	l.state = st
	t.Cleanup(func() {
		for _, n := range l.ns {
			if n != nil {
				n.Close()
			}
		}
		if err := st.Teardown(2 * time.Second); err != nil {
			t.Errorf("teardown: %v", err)
		}
		st.Close()
	})
	if l.linkSock, err = st.SocketPath("link-h1-h2"); err != nil {
		t.Fatal(err)
	}
	for i, node := range []string{"h1", "h2"} {
		nsName, err := lab.NamespaceName(l.name, node)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.RecordNamespace(nsName); err != nil {
			t.Fatal(err)
		}
		if l.ns[i], err = lab.CreateNamespace(nsName); err != nil {
			t.Fatal(err)
		}
		if l.ctl[i], err = st.SocketPath("ctl-" + node); err != nil {
			t.Fatal(err)
		}
	}
	l.bin, l.labFile = bin, labFile
	// h2 listens, h1 dials: start the listener first, as emulab up would
	// (the dialer would retry anyway).
	l.startDaemon(t, 1)
	l.startDaemon(t, 0)
	for i := range 2 {
		l.address(t, i)
	}
	return l
}

// startDaemon starts host i's emunic (h2 listens, h1 dials) and waits
// until it is ready.
func (l *e2eLab) startDaemon(t *testing.T, i int) {
	t.Helper()
	node := []string{"h1", "h2"}[i]
	uri := "seqpacket-dial:" + l.linkSock
	if i == 1 {
		uri = "seqpacket-listen:" + l.linkSock
	}
	name := "emunic-" + node
	p, err := l.state.Start(lab.ProcSpec{Name: name, Path: l.bin, Args: []string{
		"--lab", l.labFile, "--node", node, "--tap", "eth0@" + l.nsOf(i), "--port", uri, "--control", l.ctl[i]}})
	if err != nil {
		t.Fatal(err)
	}
	l.procs[i] = p
	waitReady(t, l.state, name, p)
}

// address puts host i's address on its TAP, as emulab up does.
func (l *e2eLab) address(t *testing.T, i int) {
	t.Helper()
	addr := netip.MustParsePrefix(fmt.Sprintf("10.0.0.%d/24", i+1))
	if err := l.ns[i].AddAddr("eth0", addr); err != nil {
		t.Fatal(err)
	}
	if err := l.ns[i].LinkUp("eth0"); err != nil {
		t.Fatal(err)
	}
}

// runIn runs a command inside host i's namespace and returns its output.
func (l *e2eLab) runIn(i int, path string, args ...string) (string, error) {
	cmd := exec.Command(path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := lab.StartIn(l.nsOf(i), cmd); err != nil {
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

// iperf3 runs a TCP test of secs seconds from h1 to h2.
func (l *e2eLab) iperf3(t *testing.T, iperfPath string, secs int) iperfResult {
	t.Helper()
	srv, err := l.state.Start(lab.ProcSpec{Name: "iperf3-srv", Namespace: l.nsOf(1), Path: iperfPath, Args: []string{"-s", "-1", "-p", "5201"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	var res iperfResult
	for attempt := 0; ; attempt++ {
		out, err := l.runIn(0, iperfPath, "-c", "10.0.0.2", "-p", "5201", "-t", fmt.Sprint(secs), "-J")
		res = iperfResult{}
		if err == nil && json.Unmarshal([]byte(out), &res) == nil && res.Error == "" {
			break
		}
		if attempt == 50 { // the server may not listen yet
			t.Fatalf("iperf3: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.End.SumReceived.Bytes == 0 {
		t.Fatal("iperf3 moved nothing")
	}
	return res
}

func TestE2ETwoEmunics(t *testing.T) {
	e2eSkipUnlessRoot(t)
	iperfPath := e2eNeedTool(t, "iperf3")
	pingPath := e2eNeedTool(t, "ping")
	l := newE2ELab(t)

	// Kernel traffic through the NIC path.
	c1, c2 := dial(t, l.ctl[0]), dial(t, l.ctl[1])
	// A loaded 2-core machine may stall a daemon past ping's patience;
	// a lossy attempt is logged with both NICs' counters and retried, and
	// three in a row fail the test.
	for attempt := 1; ; attempt++ {
		// -c with -w: exit 0 once 3 replies came, within 10 s.
		out, err := l.runIn(0, pingPath, "-c", "3", "-i", "0.2", "-w", "10", "10.0.0.2")
		if err == nil && strings.Contains(out, " 3 received") {
			break
		}
		for i, c := range []*Client{c1, c2} {
			if r, err := c.Counters(); err == nil {
				t.Logf("h%d after a lossy ping: transport %v; rx_no_host %d, tx_queue_dropped %d", i+1,
					r.Transport, r.HWCounters["rx_no_host"], r.HWCounters["tx_queue_dropped"])
			}
		}
		if attempt == 3 {
			t.Fatalf("ping: %v\n%s", err, out)
		}
		t.Logf("ping attempt %d: %v\n%s", attempt, err, out)
	}
	res := l.iperf3(t, iperfPath, 3)
	t.Logf("iperf3 TCP h1 -> h2 through emunic -> emunic: %.2f Gb/s (%d retransmits)",
		res.End.SumReceived.BitsPerSecond/1e9, res.End.SumSent.Retransmits)
	cnt, err := c1.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Transport["tap_gso_frames"] == 0 || cnt.Transport["tap_gso_segments"] == 0 {
		t.Errorf("no TSO frames from the kernel: segmentation not exercised: %v", cnt.Transport)
	}
	// h2's NIC hands the kernel the TCP segments merged (receive offload).
	if cnt2, err := c2.Counters(); err != nil || cnt2.Transport["tap_tx_gso_writes"] == 0 || cnt2.Transport["tap_tx_gso_segments"] == 0 {
		t.Errorf("h2 wrote no merged TCP trains to its TAP: %v %v", err, cnt2)
	}
	if cnt.Ports[0].Counters["tx_prio0_packets"] == 0 || cnt.Ports[0].Counters["tx_packets_phy"] == 0 {
		t.Errorf("kernel traffic did not go through the NIC's queues: %v", cnt.Ports[0].Counters)
	}
	t.Logf("h1 transport: %v; tx_queue_dropped %d", cnt.Transport, cnt.HWCounters["tx_queue_dropped"])

	// The built-in engine between this process's memfd buffers.
	const size = 1 << 20
	p, err := NewPair(c1, c2, PairConfig{BufSize: size, Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sg := []SGE{{Addr: p.AMR.Addr, Length: size, LKey: p.AMR.LKey}}
	fill(p.ABuf.Bytes, 11)
	if wc := oneOp(t, p, &WorkRequest{WRID: 1, Opcode: nic.IBV_WR_RDMA_WRITE, Signaled: true, SG: sg, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}); wc.Status != nic.IBV_WC_SUCCESS {
		t.Fatalf("write: %+v", wc)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("RDMA WRITE: destination memory differs")
	}
	fill(p.BBuf.Bytes, 12)
	if wc := oneOp(t, p, &WorkRequest{WRID: 2, Opcode: nic.IBV_WR_RDMA_READ, Signaled: true, SG: sg, RemoteAddr: p.BMR.Addr, RKey: p.BMR.RKey}); wc.Status != nic.IBV_WC_SUCCESS {
		t.Fatalf("read: %+v", wc)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("RDMA READ: destination memory differs")
	}
	fill(p.ABuf.Bytes, 13)
	if _, err := c2.PostRecv(p.BQP.Handle, &WorkRequest{WRID: 3, SG: []SGE{{Addr: p.BMR.Addr, Length: size, LKey: p.BMR.LKey}}}, 1); err != nil {
		t.Fatal(err)
	}
	if wc := oneOp(t, p, &WorkRequest{WRID: 4, Opcode: nic.IBV_WR_SEND, Signaled: true, SG: sg}); wc.Status != nic.IBV_WC_SUCCESS {
		t.Fatalf("send: %+v", wc)
	}
	if wcs, err := c2.PollCQ(p.BCQ, 1, 1, 10*time.Second); err != nil || len(wcs) != 1 || wcs[0].ByteLen != size {
		t.Fatalf("receive: %+v %v", wcs, err)
	}
	if !bytes.Equal(p.ABuf.Bytes, p.BBuf.Bytes) {
		t.Fatal("SEND: destination memory differs")
	}

	// write_bw -s 65536 at a 4096-byte MTU with perftest's default
	// tx-depth of 128 (figures, not asserted).
	pp, err := NewPair(c1, c2, PairConfig{BufSize: 1 << 16, Depth: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	for _, op := range []nic.WROpcode{nic.IBV_WR_RDMA_WRITE, nic.IBV_WR_RDMA_READ, nic.IBV_WR_SEND} {
		r, err := pp.Run(op, 1<<16, 10000)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		t.Logf("built-in %v 64 KiB x %d, MTU 4096, depth 128: %.2f Gb/s", op, r.Messages, r.Gbps())
	}
	before := cnt
	if cnt, err = c1.Counters(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rdma_tx_packets", "rdma_rx_packets"} {
		if cnt.HWCounters[k] <= before.HWCounters[k] {
			t.Errorf("%s did not grow: %d -> %d", k, before.HWCounters[k], cnt.HWCounters[k])
		}
	}
	if cnt.Ports[0].Counters["tx_prio3_packets"] == 0 {
		t.Errorf("RoCE traffic not on priority 3: %v", cnt.Ports[0].Counters)
	}
	if st, err := c1.Status(); err != nil || st.Link != LinkUp || st.TAP != "eth0" || st.Netns != l.nsOf(0) {
		t.Errorf("status %+v %v", st, err)
	}

	for i, p := range l.procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid)); err == nil {
			for _, ln := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(ln, "VmRSS:") || strings.HasPrefix(ln, "VmHWM:") {
					t.Logf("emunic h%d %s", i+1, strings.Join(strings.Fields(ln), " "))
				}
			}
		}
	}

	// kill -9 of h1's daemon: its TAP goes with it, and h2 sees its link down.
	victim := l.procs[0]
	if err := unix.Kill(victim.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	if _, err := l.ns[0].Netlink().LinkByName("eth0"); err == nil {
		t.Error("h1's TAP survived its daemon")
	}
	// h2 listens again for a restarted h1, which gets its TAP back.
	waitFor(t, "h2 listening again", func() bool {
		st, err := c2.Status()
		return err == nil && st.Link == LinkWaiting
	})
	c1.Close()
	// The first daemon's "ready" must not count for the second.
	if lp, err := l.state.LogPath("emunic-h1"); err == nil {
		os.Remove(lp)
	}
	l.startDaemon(t, 0)
	l.address(t, 0)
	waitFor(t, "h2 up again", func() bool {
		st, err := c2.Status()
		return err == nil && st.Link == LinkUp
	})
	if out, err := l.runIn(0, pingPath, "-c", "2", "-i", "0.2", "-W", "5", "10.0.0.2"); err != nil {
		t.Errorf("ping after restarting h1's emunic: %v\n%s", err, out)
	}
	c2.Close()

	if err := l.state.Teardown(2 * time.Second); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	for i := range 2 {
		if lab.NamespaceExists(l.nsOf(i)) {
			t.Errorf("namespace %s left", l.nsOf(i))
		}
		if _, err := os.Stat(l.ctl[i]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control socket %s left: %v", l.ctl[i], err)
		}
		// Teardown waited until the daemon was gone (a zombie at most);
		// the supervisor reaps it.
		select {
		case <-l.procs[i].Done():
		case <-time.After(5 * time.Second):
			t.Errorf("daemon %d still running", l.procs[i].Pid)
		}
	}
	if _, err := os.Stat(l.linkSock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("link socket left: %v", err)
	}
	// The surviving daemon stopped on SIGTERM and said so.
	logPath, _ := l.state.LogPath("emunic-h2")
	if b, err := os.ReadFile(logPath); err == nil && !strings.Contains(string(b), "shutting down") {
		t.Errorf("h2 did not shut down cleanly:\n%s", b)
	}
	links, err := netlink.LinkList()
	if err == nil {
		for _, ln := range links {
			if ln.Type() == "tuntap" && strings.HasPrefix(ln.Attrs().Name, "eth0") {
				t.Errorf("a TAP %s leaked into the root namespace", ln.Attrs().Name)
			}
		}
	}
}
