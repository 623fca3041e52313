package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/rt"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// End-to-end tests of the real-time foundations in namespaces (root):
//
//	netns emu-<lab>-h1                         netns emu-<lab>-h2
//	  eth0 10.99.0.1/24 fd99::1/64               eth0 10.99.0.2/24 fd99::2/64
//	   |  TAP (fd held by the test)               |  TAP (fd held by the test)
//	   +-- forwarder --[unix SOCK_SEQPACKET]-- forwarder --+
//
// The test process owns both TAPs and forwards frames between them
// through a seqpacket link on a socket file in the lab's state directory,
// with the real-time driver: per host one rt.Loop with two rt.Ports (the
// TAP and the link), whose "engine" hands every frame from one port to the
// other, as emunic's data path will. Ping and iperf3 across it prove the
// TAP, the vnet header with TSO/GSO segmentation and checksum completion,
// the transport and the loop.

func nsSkipUnlessRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, TAP devices and processes in them (CI runs as root)")
	}
}

// nsNeedTool finds an external tool; with CI=true a missing tool fails.
func nsNeedTool(t testing.TB, name string) string {
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

// nsTestLabName is unique per test process: parallel runs never share
// namespaces.
func nsTestLabName(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
}

// nsTestLab is a two-namespace lab with a TAP in each.
type nsTestLab struct {
	state    *State
	ns       [2]*Namespace
	tap      [2]*rt.TAP
	sp       [2]*rt.Seqpacket
	sockPath string
	loops    [2]*rt.Loop
	ports    [2][2]*rt.Port // [host][0: TAP, 1: link]
}

// nsNewTestLab builds the lab; everything it creates is removed at cleanup,
// whether the test passed or not (Teardown works from the records, which
// are written before anything is created).
func nsNewTestLab(t testing.TB, mtu int) *nsTestLab {
	t.Helper()
	nsSkipUnlessRoot(t)
	root := t.TempDir()
	lab := nsTestLabName("e2e")
	st, err := OpenState(root, lab)
	if err != nil {
		t.Fatal(err)
	}
	l := &nsTestLab{state: st}
	t.Cleanup(func() {
		for _, lp := range l.loops {
			if lp != nil {
				lp.Close() // closes the ports and their links
			}
		}
		for _, tp := range l.tap {
			if tp != nil {
				tp.Close()
			}
		}
		for _, s := range l.sp {
			if s != nil {
				s.Close()
			}
		}
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
	addrs := [2][2]string{{"10.99.0.1/24", "fd99::1/64"}, {"10.99.0.2/24", "fd99::2/64"}}
	for i, node := range []string{"h1", "h2"} {
		name, err := NamespaceName(lab, node)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.RecordNamespace(name); err != nil {
			t.Fatal(err)
		}
		if l.ns[i], err = CreateNamespace(name); err != nil {
			t.Fatal(err)
		}
		l.tap[i], err = rt.CreateTAP(rt.TAPConfig{Name: "eth0", NetNS: l.ns[i].Handle, MTU: mtu})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs[i] {
			if err := l.ns[i].AddAddr("eth0", netip.MustParsePrefix(a)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.ns[i].LinkUp("eth0"); err != nil {
			t.Fatal(err)
		}
		// A route through the link proves AddRoute (10.98/16 is reached
		// via the peer).
		peer := netip.MustParsePrefix(addrs[1-i][0]).Addr()
		if err := l.ns[i].AddRoute(netip.MustParsePrefix("10.98.0.0/16"), peer, "eth0"); err != nil {
			t.Fatal(err)
		}
	}
	if l.sockPath, err = st.SocketPath("link-h1-h2"); err != nil {
		t.Fatal(err)
	}
	ln, err := rt.ListenSeqpacket(l.sockPath)
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan *rt.Seqpacket, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	if l.sp[0], err = rt.DialSeqpacket(l.sockPath); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	l.sp[1] = <-acc
	ln.Close() // the connection stays; the file goes
	if l.sp[1] == nil {
		t.Fatal("accept failed")
	}
	for h := range 2 {
		lp := rt.NewLoop(rt.NewClock(1))
		l.loops[h] = lp
		ports := &l.ports[h]
		for i, link := range []rt.Link{l.tap[h], l.sp[h]} {
			other := 1 - i
			ports[i], err = lp.Attach(link, rt.PortConfig{Index: i, TxQueue: 1024, Backpressure: true, Deliver: func(fs []*frame.Frame) {
				for _, f := range fs {
					ports[other].Transmit(f)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
		go lp.Run()
	}
	return l
}

func (l *nsTestLab) nsName(i int) string { return l.ns[i].Name }

func TestNsPingIperf3(t *testing.T) {
	ipPath := nsNeedTool(t, "ip")
	iperfPath := nsNeedTool(t, "iperf3")
	l := nsNewTestLab(t, 1500)

	// ICMP echo from inside h1 through `ip netns exec` (iproute2 sees our
	// namespaces): the test binary's own pinger, and the system's ping
	// where it is installed.
	for _, dst := range []string{"10.99.0.2", "fd99::2"} {
		nsPing(t, ipPath, l.nsName(0), dst)
		pingPath, err := exec.LookPath("ping")
		if err != nil {
			t.Logf("no ping binary; the Go ICMP echo above is the check")
			continue
		}
		// -c with -w: exit 0 once 3 replies came, within 10 s.
		out, err := exec.Command(ipPath, "netns", "exec", l.nsName(0), pingPath, "-c", "3", "-i", "0.2", "-w", "10", dst).CombinedOutput()
		if err != nil || !strings.Contains(string(out), " 3 received") {
			t.Fatalf("ping %s: %v\n%s", dst, err, out)
		}
	}

	// iperf3 TCP, IPv4 then IPv6, both processes started in their
	// namespaces by the supervision helpers (no `ip netns exec`).
	for _, c := range []struct{ name, dst string }{{"v4", "10.99.0.2"}, {"v6", "fd99::2"}} {
		gso0 := l.tap[0].Counters.GSOFrames.Load()
		res := l.iperf3(t, iperfPath, c.name, c.dst, 3)
		t.Logf("iperf3 TCP %s through TAP+seqpacket+TAP: %.2f Gb/s (%d retransmits)", c.name, res.End.SumReceived.BitsPerSecond/1e9, res.End.SumSent.Retransmits)
		if gso := l.tap[0].Counters.GSOFrames.Load() - gso0; gso == 0 {
			t.Errorf("iperf3 %s: no TSO frames from the kernel: segmentation not exercised", c.name)
		}
	}
	for h := range 2 {
		for i, p := range l.ports[h] {
			c := &p.Counters
			t.Logf("host h%d port %d: rx %d frames, tx %d frames, tx queue drops %d, tx errors %d, rx too large %d",
				h+1, i, c.RxFrames.Load(), c.TxFrames.Load(), c.TxQueueDrops.Load(), c.TxErrors.Load(), c.RxTooLarge.Load())
		}
	}
	for i, tp := range l.tap {
		c := &tp.Counters
		t.Logf("tap h%d: gso frames %d, segments %d, csum completed %d, malformed %d, unsupported %d, too large %d",
			i+1, c.GSOFrames.Load(), c.Segments.Load(), c.CsumPartial.Load(), c.Malformed.Load(), c.Unsupported.Load(), c.TooLarge.Load())
		if c.Malformed.Load()+c.Unsupported.Load()+c.TooLarge.Load() != 0 {
			t.Errorf("tap h%d dropped frames", i+1)
		}
	}
}

// iperf3 runs an iperf3 TCP test of secs seconds from h1 to dst (an
// address of h2), server and client started in their namespaces by the
// supervision helpers (no `ip netns exec`), and returns the client's JSON
// result. It fails the test if nothing was moved.
func (l *nsTestLab) iperf3(t testing.TB, iperfPath, name, dst string, secs int) nsIperfResult {
	t.Helper()
	srv, err := l.state.Start(ProcSpec{Name: "iperf3-srv-" + name, Namespace: l.nsName(1), Path: iperfPath, Args: []string{"-s", "-1", "-p", "5201"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	var res nsIperfResult
	var clientLog string
	for attempt := 0; ; attempt++ {
		cli, err := l.state.Start(ProcSpec{Name: "iperf3-cli-" + name, Namespace: l.nsName(0), Path: iperfPath,
			Args: []string{"-c", dst, "-p", "5201", "-t", strconv.Itoa(secs), "-J"}})
		if err != nil {
			t.Fatal(err)
		}
		werr := cli.Wait()
		cli.Stop(0)
		logPath, _ := l.state.LogPath("iperf3-cli-" + name)
		b, _ := os.ReadFile(logPath)
		os.Remove(logPath)
		clientLog = string(b)
		res = nsIperfResult{}
		if werr == nil && json.Unmarshal(b, &res) == nil && res.Error == "" {
			break
		}
		if attempt == 50 { // the server may not listen yet
			t.Fatalf("iperf3 %s: %v\n%s", name, werr, clientLog)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.End.SumReceived.Bytes == 0 || res.End.SumReceived.BitsPerSecond <= 0 {
		os.WriteFile(filepath.Join(os.TempDir(), "emufabric-iperf3-"+name+".json"), []byte(clientLog), 0o600)
		t.Fatalf("iperf3 %s moved nothing (client output in %s)", name, filepath.Join(os.TempDir(), "emufabric-iperf3-"+name+".json"))
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("iperf3 server: %v", err)
	}
	return res
}

type nsIperfResult struct {
	Error string `json:"error"`
	End   struct {
		SumSent struct {
			Bytes       int64   `json:"bytes"`
			Retransmits int64   `json:"retransmits"`
			Bps         float64 `json:"bits_per_second"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

// TestNsHelperProcess is not a test: TestNsTeardownAfterKill9 runs the
// test binary as a daemon stand-in in a namespace. It creates a TAP and
// listens on a seqpacket socket, like emunic, then waits to be killed.
func TestNsHelperProcess(t *testing.T) {
	sock := os.Getenv("EMU_NS_HELPER_SOCKET")
	if sock == "" {
		t.Skip("helper process for TestNsTeardownAfterKill9")
	}
	tap, err := rt.CreateTAP(rt.TAPConfig{Name: "eth0", MTU: 1500, Up: true})
	if err != nil {
		fmt.Println("helper:", err)
		os.Exit(2)
	}
	ln, err := rt.ListenSeqpacket(sock)
	if err != nil {
		fmt.Println("helper:", err)
		os.Exit(2)
	}
	fmt.Println("ready", tap.Name(), ln.Path())
	select {} // until killed; the TAP and the listener stay open
}

// nsUp is a miniature `up`: the state directory, one namespace, and a
// daemon stand-in (the test binary as TestNsHelperProcess) in it holding a
// TAP and a socket file. Every step is recorded before it is done.
func nsUp(t testing.TB, root, lab string) (st *State, nsName, sock string, helper *Proc) {
	t.Helper()
	st, err := OpenState(root, lab)
	if err != nil {
		t.Fatal(err)
	}
	nsName, _ = NamespaceName(lab, "h1")
	if err := st.RecordNamespace(nsName); err != nil {
		t.Fatal(err)
	}
	ns, err := CreateNamespace(nsName)
	if err != nil {
		t.Fatal(err)
	}
	ns.Close()
	if sock, err = st.SocketPath("nic-h1"); err != nil {
		t.Fatal(err)
	}
	helper, err = st.Start(ProcSpec{Name: "nic-h1", Namespace: nsName, Path: os.Args[0],
		Args: []string{"-test.run=^TestNsHelperProcess$"},
		Env:  append(os.Environ(), "EMU_NS_HELPER_SOCKET="+sock)})
	if err != nil {
		t.Fatal(err)
	}
	logPath, _ := st.LogPath("nic-h1")
	for i := 0; ; i++ {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "ready") {
			break
		}
		if i > 3000 || strings.Contains(string(b), "helper:") {
			t.Fatalf("helper did not start:\n%s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return st, nsName, sock, helper
}

// TestNsControllerProcess is not a test: TestNsTeardownAfterControllerKill9
// runs the test binary as a controller (`emulab up`) that builds the lab
// and is then killed.
func TestNsControllerProcess(t *testing.T) {
	spec := os.Getenv("EMU_NS_CONTROLLER")
	if spec == "" {
		t.Skip("helper process for TestNsTeardownAfterControllerKill9")
	}
	root, lab, _ := strings.Cut(spec, "|")
	_, _, _, helper := nsUp(t, root, lab)
	fmt.Println("up", helper.Pid)
	select {} // until killed, holding the state's lock
}

// TestNsTeardownAfterControllerKill9: the controller that built the lab
// (another process, holding the lab's lock, parent of the daemon) is
// killed with SIGKILL; Teardown from a new controller removes the orphaned
// daemon, the namespace, the socket file and the state directory.
func TestNsTeardownAfterControllerKill9(t *testing.T) {
	nsSkipUnlessRoot(t)
	root := t.TempDir()
	lab := nsTestLabName("ctl")
	t.Cleanup(func() {
		if err := Teardown(root, lab, time.Second); err != nil {
			t.Errorf("cleanup teardown: %v", err)
		}
	})
	ctl := exec.Command(os.Args[0], "-test.run=^TestNsControllerProcess$")
	ctl.Env = append(os.Environ(), "EMU_NS_CONTROLLER="+root+"|"+lab)
	out, err := ctl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Process.Kill(); ctl.Wait() })
	var daemon int
	if _, err := fmt.Fscanf(out, "up %d\n", &daemon); err != nil {
		t.Fatalf("controller did not come up: %v", err)
	}
	nsName, _ := NamespaceName(lab, "h1")
	sock := filepath.Join(root, lab, "sock", "nic-h1.sock")
	if !NamespaceExists(nsName) || !nsAlive(daemon, 0) {
		t.Fatal("controller did not build the lab")
	}
	// While the controller lives, nobody else may tear its lab down.
	if err := Teardown(root, lab, time.Second); !errors.Is(err, ErrLabLocked) {
		t.Fatalf("teardown under a live controller: %v, want ErrLabLocked", err)
	}
	if err := ctl.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ctl.Wait()
	if !nsAlive(daemon, 0) {
		t.Fatal("the daemon died with its controller; the test proves nothing")
	}
	if err := Teardown(root, lab, time.Second); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if NamespaceExists(nsName) {
		t.Errorf("namespace %s still exists", nsName)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file still exists: %v", err)
	}
	if nsAlive(daemon, 0) {
		t.Errorf("orphaned daemon %d still alive", daemon)
	}
	if _, err := os.Stat(filepath.Join(root, lab)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left: %v", err)
	}
}

// TestNsTeardownAfterKill9: a daemon (the helper) holding a TAP and a
// socket file in a namespace, plus a process nobody recorded, are left
// behind by kill -9; Teardown removes the namespaces, the TAP, the socket
// file and the processes, and a second "up" of the same lab works.
func TestNsTeardownAfterKill9(t *testing.T) {
	nsSkipUnlessRoot(t)
	sleepPath := nsNeedTool(t, "sleep")
	root := t.TempDir()
	lab := nsTestLabName("kill")
	t.Cleanup(func() {
		if err := Teardown(root, lab, time.Second); err != nil {
			t.Errorf("cleanup teardown: %v", err)
		}
	})
	up := func() (*State, string, string, *Proc, *exec.Cmd) {
		st, nsName, sock, helper := nsUp(t, root, lab)
		// A process nobody recorded, as `emulab exec` leaves behind.
		stray := exec.Command(sleepPath, "1000")
		if err := StartIn(nsName, stray); err != nil {
			t.Fatal(err)
		}
		go stray.Wait() // reap it when Teardown kills it
		// The stray really runs in the namespace: Teardown finds it there.
		if pids, err := nsPidsIn(nsName); err != nil || !slices.Contains(pids, stray.Process.Pid) {
			t.Fatalf("stray %d not in %s: %v %v", stray.Process.Pid, nsName, pids, err)
		}
		if ps := st.Procs(); len(ps) != 1 || ps[0].Name != "nic-h1" || !ps[0].Alive || ps[0].Namespace != nsName {
			t.Fatalf("status: %+v", ps)
		}
		return st, nsName, sock, helper, stray
	}

	for round := 1; round <= 2; round++ {
		st, nsName, sock, helper, stray := up()
		// Hold the namespace open across its deletion, to look inside it
		// afterwards: its TAP must be gone with the killed helper.
		h, err := netns.GetFromName(nsName)
		if err != nil {
			t.Fatal(err)
		}
		nl, err := netlink.NewHandleAt(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nl.LinkByName("eth0"); err != nil {
			t.Fatalf("round %d: helper's TAP missing: %v", round, err)
		}
		if _, err := os.Stat(sock); err != nil {
			t.Fatalf("round %d: socket file missing: %v", round, err)
		}
		// kill -9 of the daemon: its socket file stays behind.
		if err := unix.Kill(helper.Pid, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		helper.Wait()
		if ps := st.Procs(); len(ps) != 1 || ps[0].Alive {
			t.Fatalf("status after kill -9: %+v", ps)
		}
		if _, err := os.Stat(sock); err != nil {
			t.Fatalf("round %d: kill -9 removed the socket file? %v", round, err)
		}
		// ... and of the controller: drop the state without cleaning up.
		st.Close()

		if err := Teardown(root, lab, time.Second); err != nil {
			t.Fatalf("round %d: teardown: %v", round, err)
		}
		if NamespaceExists(nsName) {
			t.Errorf("round %d: namespace %s still exists", round, nsName)
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: socket file still exists: %v", round, err)
		}
		if nsAlive(stray.Process.Pid, 0) {
			t.Errorf("round %d: unrecorded process %d still alive", round, stray.Process.Pid)
		}
		if nsAlive(helper.Pid, 0) {
			t.Errorf("round %d: helper %d still alive", round, helper.Pid)
		}
		if names, err := nl.LinkList(); err != nil {
			t.Error(err)
		} else {
			for _, ln := range names {
				if ln.Attrs().Name != "lo" {
					t.Errorf("round %d: interface %s left in the namespace", round, ln.Attrs().Name)
				}
			}
		}
		nl.Close()
		h.Close()
		if _, err := os.Stat(filepath.Join(root, lab)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: state directory left: %v", round, err)
		}
	}
}

// BenchmarkNsForwardUDP64 measures delivered 64-byte UDP frames per second
// from a socket in h1 to a socket in h2 through TAP, seqpacket and TAP
// (the delivered-pps figure, for this test forwarder).
func BenchmarkNsForwardUDP64(b *testing.B) {
	l := nsNewTestLab(b, 1500)
	var tx, rx int
	if err := nsOnThread(l.ns[0].Handle, func() (err error) {
		tx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(tx)
	if err := nsOnThread(l.ns[1].Handle, func() (err error) {
		rx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
		return unix.Bind(rx, &unix.SockaddrInet4{Port: 7777, Addr: [4]byte{10, 99, 0, 2}})
	}); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(rx)
	// A generous timeout: the first frames wait for ARP, and a loaded
	// 2-core machine may stall the forwarder for a while.
	unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := make([]byte, 64-42)
		to := &unix.SockaddrInet4{Port: 7777, Addr: [4]byte{10, 99, 0, 2}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Sendto(tx, p, 0, to)
		}
	}()
	buf := make([]byte, 2048)
	b.ReportAllocs()
	start := time.Now()
	got := 0
	for got < b.N {
		if _, _, err := unix.Recvfrom(rx, buf, 0); err != nil {
			b.Fatalf("after %d: %v", got, err)
		}
		got++
	}
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "delivered-pps")
	close(stop)
	<-done
}

// BenchmarkNsIperf3TCP runs iperf3 TCP (IPv4, 3 s per iteration; use
// -benchtime 1x) through TAP, loop, seqpacket, loop and TAP and reports
// the goodput.
func BenchmarkNsIperf3TCP(b *testing.B) {
	iperfPath := nsNeedTool(b, "iperf3")
	l := nsNewTestLab(b, 1500)
	var bps float64
	var retr int64
	n := 0
	for b.Loop() {
		res := l.iperf3(b, iperfPath, "bench", "10.99.0.2", 3)
		bps += res.End.SumReceived.BitsPerSecond
		retr += res.End.SumSent.Retransmits
		n++
	}
	b.ReportMetric(bps/float64(n)/1e9, "Gb/s")
	b.ReportMetric(float64(retr)/float64(n), "retransmits/run")
}
