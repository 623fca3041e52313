package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
)

// Tests of emulab up / down / status / exec with the real binaries, as a
// user runs them (root; CI runs as root). The binaries are built from this
// module into a temporary directory; labs live under a temporary state
// root and get names unique to the test process, so nothing here meets a
// lab of the machine or of another test run. After every down the test
// checks that nothing is left: no namespace (ip netns list), no process,
// no socket file or state directory, and that the root namespace's
// interfaces are exactly the ones it had before (a lab never touches
// interfaces outside its namespaces; its TAPs live and die in them).

// upEnv is what the subtests share.
type upEnv struct {
	bin    string   // emulab, emuswitch and emunic
	state  string   // --state-dir
	rootIf []string // the root namespace's interfaces before any lab
}

func newUpEnv(t *testing.T) *upEnv {
	t.Helper()
	lab.SkipUnlessRoot(t)
	e := &upEnv{bin: lab.BuildDaemons(t)}
	if _, err := os.Stat(filepath.Join(e.bin, lab.NICBinary)); err != nil {
		t.Fatalf("emunic was not built: %v", err)
	}
	dir, err := os.MkdirTemp("", "emust")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e.state = dir
	e.rootIf = rootInterfaces(t)
	return e
}

// run runs `emulab SUB --state-dir S args...` and returns its output and
// exit status.
func (e *upEnv) run(t *testing.T, sub string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "emulab"), append([]string{sub, "--state-dir", e.state}, args...)...)
	var o, er strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	code = 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("emulab %s %v: %v", sub, args, err)
		}
		code = ee.ExitCode()
	}
	return o.String(), er.String(), code
}

// interruptAt runs `emulab SUB --state-dir S args...`, sends it SIGINT once
// a line of its standard output holds marker, and returns all it printed
// and how it ended (killed, and the test failed, if it outlives 60 s).
func (e *upEnv) interruptAt(t *testing.T, marker, sub string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "emulab"), append([]string{sub, "--state-dir", e.state}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), marker) {
			break
		}
	}
	cmd.Process.Signal(os.Interrupt)
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	rest, _ := io.ReadAll(pipe)
	out.Write(rest)
	err = cmd.Wait()
	if !kill.Stop() {
		t.Fatalf("emulab %s did not end within 60 s of SIGINT:\n%s", sub, out.String())
	}
	return out.String(), errb.String(), err
}

// runIn runs `emulab SUB --state-dir ROOT args...` under another state
// root.
func (e *upEnv) runIn(t *testing.T, root, sub string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	saved := e.state
	e.state = root
	defer func() { e.state = saved }()
	return e.run(t, sub, args...)
}

// mustRun runs emulab and fails the test unless it exits 0.
func (e *upEnv) mustRun(t *testing.T, sub string, args ...string) string {
	t.Helper()
	out, errOut, code := e.run(t, sub, args...)
	if code != 0 {
		t.Fatalf("emulab %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", sub, args, code, out, errOut)
	}
	return out
}

// upLab is a lab file of the tests under a unique name.
type upLab struct {
	spec *lab.Spec
	file string
	name string
}

// lab loads a lab file under a unique name; if the test ends (say, fails)
// with the lab still up, the lab is taken down.
func (e *upEnv) lab(t *testing.T, path string) *upLab {
	t.Helper()
	spec := lab.LoadUnique(t, path)
	l := &upLab{spec: spec, file: spec.File, name: spec.Name}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(e.state, l.name)); err == nil {
			if err := lab.Down(e.state, l.name, 0); err != nil {
				t.Errorf("cleanup: down %s: %v", l.name, err)
			}
		}
	})
	return l
}

func (l *upLab) node(n string) string { return l.name + "/" + n }

// ip is node's IPv4 address.
func (l *upLab) ip(n string) string {
	a := l.spec.Node(n).IPv4
	return net.IP(a[:]).String()
}

// controls maps each node of a lab that is up to its daemon's control
// socket, as the lab's status records them.
func (e *upEnv) controls(t *testing.T, l *upLab) map[string]string {
	t.Helper()
	st, err := lab.ReadStatus(e.state, l.name)
	if err != nil || st.Info == nil {
		t.Fatalf("status: %v", err)
	}
	ctl := map[string]string{}
	for _, n := range st.Info.Nodes {
		ctl[n.Name] = n.Control
	}
	return ctl
}

// up brings the lab up and returns the socket files it recorded (so the
// test can check later that down removed them).
func (e *upEnv) up(t *testing.T, l *upLab, hosts string) []string {
	t.Helper()
	out := e.mustRun(t, "up", "--hosts", hosts, l.file)
	if !strings.Contains(out, "lab "+l.name+" is up") {
		t.Fatalf("up printed:\n%s", out)
	}
	return recordedSockets(t, e.state, l.name)
}

func recordedSockets(t *testing.T, state, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, name, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Sockets []string }
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Sockets
}

// pid reads a daemon's pidfile.
func (e *upEnv) pid(t *testing.T, l *upLab, daemon string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.state, l.name, "run", daemon+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kill9 kills a process with SIGKILL and waits until it is gone or a
// zombie (an orphaned daemon is reaped by init).
func kill9(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for range 500 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d survived kill -9", pid)
}

// down takes the lab down and checks that nothing of it is left.
func (e *upEnv) down(t *testing.T, l *upLab, sockets []string) {
	t.Helper()
	out := e.mustRun(t, "down", l.name)
	if !strings.Contains(out, "lab "+l.name+" is down") {
		t.Errorf("down printed %q", out)
	}
	e.checkGone(t, l, sockets)
}

// checkGone: no namespace, process, socket file, state or root interface
// of the lab remains.
func (e *upEnv) checkGone(t *testing.T, l *upLab, sockets []string) {
	t.Helper()
	prefix := lab.NamespacePrefix + l.name + "-"
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, prefix) {
			t.Errorf("namespace left: %s", line)
		}
	}
	if ents, err := os.ReadDir(lab.NetnsDir); err == nil {
		for _, en := range ents {
			if strings.HasPrefix(en.Name(), prefix) {
				t.Errorf("namespace file left: %s", en.Name())
			}
		}
	}
	if pids := labProcesses(l); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
	for _, s := range sockets {
		if _, err := os.Lstat(s); err == nil {
			t.Errorf("socket file left: %s", s)
		}
	}
	if _, err := os.Stat(filepath.Join(e.state, l.name)); err == nil {
		t.Errorf("state directory left: %s", filepath.Join(e.state, l.name))
	}
	if got := rootInterfaces(t); !slices.Equal(got, e.rootIf) {
		t.Errorf("root namespace interfaces changed:\n before %v\n after  %v", e.rootIf, got)
	}
}

// labProcesses lists the processes whose command line names the lab's
// file or one of its namespaces (every daemon of the lab does).
func labProcesses(l *upLab) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, en := range ents {
		if _, err := strconv.Atoi(en.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		st, _ := os.ReadFile("/proc/" + en.Name() + "/stat")
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(st[i+1:])), "Z") {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cl, l.file) || strings.Contains(cl, lab.NamespacePrefix+l.name+"-") {
			out = append(out, en.Name()+": "+cl)
		}
	}
	return out
}

// rootInterfaces lists the test process's (root) namespace's interfaces.
// Other tests of the module create TAPs and veths in their own namespaces
// only, so the list is stable while this test runs.
func rootInterfaces(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, fmt.Sprintf("%s/%d/%s", i.Name, i.Index, i.HardwareAddr))
	}
	slices.Sort(names)
	return names
}

// pingReceived is ping's summary: requests sent, replies received.
var pingReceived = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)

// ping pings dst from src through the lab and fails unless 3 echoes came
// back within 10 s. Without -w, once a reply came ping waits for the last
// one only max(2 x RTT, -i) = 200 ms after its last request, which a
// stall of the emulated path on a loaded machine exceeds; with -w it waits
// up to the deadline (sending another request every 200 ms meanwhile).
func (e *upEnv) ping(t *testing.T, l *upLab, src, dst string) {
	t.Helper()
	out := e.mustRun(t, "exec", l.node(src), "--", "ping", "-c", "3", "-i", "0.2", "-w", "10", l.ip(dst))
	m := pingReceived.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("ping %s -> %s:\n%s", src, dst, out)
		return
	}
	sent, _ := strconv.Atoi(m[1])
	if got, _ := strconv.Atoi(m[2]); got < 3 {
		t.Errorf("ping %s -> %s:\n%s", src, dst, out)
	} else if sent != 3 {
		t.Logf("ping %s -> %s: %d requests for 3 replies (a reply came late)", src, dst, sent)
	}
}

// needTool finds an external tool; with CI=true a missing tool fails.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
}

// iperf runs iperf3 TCP from src to dst for 2 s and returns the received
// Gb/s.
func (e *upEnv) iperf(t *testing.T, l *upLab, src, dst string) float64 {
	t.Helper()
	// The server's output goes to a file: a pipe would keep Wait waiting
	// for as long as the server (a grandchild) lives.
	logf, err := os.Create(filepath.Join(t.TempDir(), "iperf3-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	srv := exec.Command(filepath.Join(e.bin, "emulab"), "exec", "--state-dir", e.state, l.node(dst), "--",
		"iperf3", "-s", "-1", "-B", l.ip(dst))
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// emulab exec passes SIGTERM on to the server if it still runs.
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	serverLog := func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }
	// Wait until the server listens (ss -l in its namespace).
	for try := 0; ; try++ {
		out, _, _ := e.run(t, "exec", l.node(dst), "--", "ss", "-Hltn", "sport = :5201")
		if strings.Contains(out, "5201") {
			break
		}
		if try == 100 {
			t.Fatalf("iperf3 server on %s does not listen:\n%s", dst, serverLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, errOut, code := e.run(t, "exec", l.node(src), "--", "iperf3", "-c", l.ip(dst), "-t", "2", "-J")
	if code != 0 {
		t.Fatalf("iperf3 %s -> %s: exit %d\n%s\n%s\nserver:\n%s", src, dst, code, out, errOut, serverLog())
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			SumSent struct {
				Retransmits int `json:"retransmits"`
			} `json:"sum_sent"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("iperf3 -J: %v\n%s", err, out)
	}
	gbps := r.End.SumReceived.BitsPerSecond / 1e9
	t.Logf("iperf3 TCP %s -> %s: %.2f Gb/s, %d retransmits", src, dst, gbps, r.End.SumSent.Retransmits)
	if gbps <= 0 {
		t.Errorf("iperf3 received nothing:\n%s", out)
	}
	return gbps
}

func TestUpLab(t *testing.T) {
	e := newUpEnv(t)
	t.Run("tap", func(t *testing.T) { testUpHosts(t, e, "tap") })
	t.Run("nic", func(t *testing.T) { testUpHosts(t, e, "nic") })
	t.Run("subnets", func(t *testing.T) { testUpSubnets(t, e) })
	t.Run("kill-emulab", func(t *testing.T) { testUpKillEmulab(t, e) })
	t.Run("bad-files", func(t *testing.T) { testUpBadFiles(t, e) })
	t.Run("injection", func(t *testing.T) { testUpInjection(t, e) })
}

// testUpHosts: up, status, exec (ping, iperf3, exit status), then kill -9
// of each kind of daemon in turn, each followed by down (nothing left)
// and a second up of the same lab.
func testUpHosts(t *testing.T, e *upEnv, hosts string) {
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	socks := e.up(t, l, hosts)

	// A second up of a lab that is up is refused and changes nothing.
	if _, errOut, code := e.run(t, "up", "--hosts", hosts, l.file); code == 0 || !strings.Contains(errOut, "already up") {
		t.Errorf("second up: exit %d, %s", code, errOut)
	}

	st := e.mustRun(t, "status", l.name)
	for _, want := range []string{`lab ` + l.name + `: up;`, `emuswitch-sw1\s+\d+\s+-`,
		`eth0 up mtu 4200 02:00:00:00:00:02 10\.0\.0\.1/24`, `sw1:p1\s+h1:eth0\s+up\s`, `sw1:p2\s+h2:eth0\s+up\s`} {
		if !regexp.MustCompile(want).MatchString(st) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	if hosts == "nic" && !regexp.MustCompile(`h1:eth0\s+sw1:p1\s+up\s+rate 100G\s+shm-dial:`).MatchString(st) {
		t.Errorf("status lacks emunic's port:\n%s", st)
	}
	// The host namespace holds lo and eth0 only.
	out := e.mustRun(t, "exec", l.node("h1"), "--", "ip", "-o", "link")
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, ": eth0: ") {
		t.Errorf("h1's interfaces:\n%s", out)
	}
	// Hosts are IPv4-only: nothing multicasts into the fabric.
	if out := e.mustRun(t, "exec", l.node("h2"), "--", "cat", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6"); out != "1\n" {
		t.Errorf("h2 eth0 disable_ipv6 = %q", out)
	}
	// exec propagates the exit status; a lone node name works with one lab up.
	if _, _, code := e.run(t, "exec", "h1", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exec exit status %d, want 7", code)
	}
	if _, errOut, code := e.run(t, "exec", l.node("h7"), "--", "true"); code == 0 || !strings.Contains(errOut, "has no node h7") {
		t.Errorf("exec on a missing node: exit %d, %s", code, errOut)
	}

	e.ping(t, l, "h1", "h2")
	needTool(t, "iperf3")
	e.iperf(t, l, "h1", "h2")

	// kill -9 of the switch.
	kill9(t, e.pid(t, l, "emuswitch-sw1"))
	// status shows it, and exits 3 for a script to see.
	if st, errOut, code := e.run(t, "status", l.name); code != exitUnwell || !strings.Contains(st, "(dead)") || !strings.Contains(st, ": up, 1 daemon dead (") ||
		!strings.Contains(errOut, "not up whole: "+l.name) {
		t.Errorf("status after kill -9 of emuswitch: exit %d\n%s\n%s", code, st, errOut)
	}
	// stats of the dead daemon says what is wrong.
	if _, errOut, code := e.run(t, "stats", l.node("sw1")); code == 0 || !strings.Contains(errOut, "sw1's daemon does not answer on its control socket") {
		t.Errorf("stats of a dead switch: exit %d, %s", code, errOut)
	}
	e.down(t, l, socks)

	// A second up works; with NICs, kill -9 of an emunic, then down.
	socks = e.up(t, l, hosts)
	e.ping(t, l, "h2", "h1")
	if hosts == "nic" {
		kill9(t, e.pid(t, l, "emunic-h1"))
		e.down(t, l, socks)
		socks = e.up(t, l, hosts)
		e.ping(t, l, "h1", "h2")

		// kill -STOP of an emunic: every command that asks it is told
		// in bounded time which daemon did not answer and why, and down
		// takes the stopped daemon with the rest.
		pid := e.pid(t, l, "emunic-h2")
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := fmt.Sprintf("emunic (pid %d) did not answer in", pid)
		st, errOut, code := e.run(t, "status", l.name)
		if code != exitUnwell || !strings.Contains(st, ": up, 1 daemon stopped (below)") ||
			!regexp.MustCompile(fmt.Sprintf(`emunic-h2\s+%d stopped \(SIGSTOP\)`, pid)).MatchString(st) ||
			!strings.Contains(st, fmt.Sprintf("h2: emunic-h2 (pid %d) is stopped (SIGSTOP)", pid)) {
			t.Errorf("status with emunic-h2 stopped: exit %d\n%s\n%s", code, st, errOut)
		}
		for _, args := range [][]string{{"stats", l.node("h2")}, {"capture", l.node("h2"), "-w", filepath.Join(t.TempDir(), "h2.pcapng")},
			{"perf", "write_bw", l.node("h1"), l.node("h2"), "-n", "100"}} {
			if _, errOut, code := e.run(t, args[0], args[1:]...); code == 0 || !strings.Contains(errOut, stopped) || !strings.Contains(errOut, "stopped (SIGSTOP)") {
				t.Errorf("%s with emunic-h2 stopped: exit %d, %s", args[0], code, errOut)
			}
		}
		e.down(t, l, socks)
		socks = e.up(t, l, hosts)
	}
	// A shell left running in a namespace does not survive down.
	sh := exec.Command(filepath.Join(e.bin, "emulab"), "exec", "--state-dir", e.state, l.node("h2"), "--", "sleep", "600")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Wait()
	time.Sleep(200 * time.Millisecond)
	e.down(t, l, socks)
}

// testUpSubnets: hosts in different /24s reach each other through the
// routes up adds; each interface gets its own link's MTU.
func testUpSubnets(t *testing.T, e *upEnv) {
	l := e.lab(t, "testdata/up/two-subnets.yaml")
	hosts := "nic"
	socks := e.up(t, l, hosts)
	if out := e.mustRun(t, "exec", l.node("h1"), "--", "ip", "route", "show", "10.2.2.0/24"); !strings.Contains(out, "10.2.2.0/24 dev eth0 scope link") {
		t.Errorf("h1's route to h2's subnet: %q", out)
	}
	st := e.mustRun(t, "status", l.name)
	for _, want := range []string{"eth0 up mtu 4200 02:00:00:00:00:02 10.1.1.1/24", "eth0 up mtu 1500 02:00:00:00:00:03 10.2.2.2/24"} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	e.ping(t, l, "h1", "h2")
	e.down(t, l, socks)
}

// testUpKillEmulab kills `emulab up` with SIGKILL at each stage (and once
// it has finished): down then removes everything, and the lab comes up
// again.
func testUpKillEmulab(t *testing.T, e *upEnv) {
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	hosts := "nic"
	for _, stage := range []string{"created", "started " + lab.SwitchBinary, "waiting for", "h1 eth0", "up in"} {
		t.Run(strings.ReplaceAll(stage, " ", "-"), func(t *testing.T) {
			cmd := exec.Command(filepath.Join(e.bin, "emulab"), "up", "--state-dir", e.state, "--hosts", hosts, l.file)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			var seen []string
			killed := false
			for sc.Scan() {
				seen = append(seen, sc.Text())
				if strings.Contains(sc.Text(), stage) {
					cmd.Process.Kill()
					killed = true
					break
				}
			}
			go func() {
				for sc.Scan() {
				}
			}()
			cmd.Wait()
			if !killed {
				t.Fatalf("up never reached %q:\n%s", stage, strings.Join(seen, "\n"))
			}
			var socks []string
			if _, err := os.Stat(filepath.Join(e.state, l.name, "state.json")); err == nil {
				socks = recordedSockets(t, e.state, l.name)
			}
			e.down(t, l, socks)
		})
	}
	socks := e.up(t, l, hosts)
	e.ping(t, l, "h1", "h2")
	e.down(t, l, socks)
}

// testUpBadFiles: invalid lab files and names that try to inject are
// reported as file:line: field: problem, exit 2, and create nothing.
func testUpBadFiles(t *testing.T, e *upEnv) {
	for file, want := range map[string]string{
		"bad-field.yaml":        `:6: topology.nodes.h2.kind: "nick" is not one of nic, switch`,
		"bad-syntax.yaml":       `:4: did not find expected ',' or '}'`,
		"bad-rate.yaml":         `:3: topology.defaults.rate: rate "100GB"`,
		"inject-dotdot.yaml":    `:1: name: name "../x" has '.'`,
		"inject-shell.yaml":     `:5: topology.nodes.a;rm: node name: name "a;rm" has ';'`,
		"inject-long.yaml":      `:7: topology.links[0].endpoints[0]: port name: name "eth0-is-a-very-long-interface-name" is 34 bytes long`,
		"inject-longlab.yaml":   `:1: name: name "a-lab-name-that-is-far-too-long-for-a-namespace" is 47 bytes long`,
		"inject-port.yaml":      `:7: topology.links[0].endpoints[1]: port name: name "$(reboot)" has '$'`,
		"does-not-exist.yaml":   "no such file or directory",
		"../../../../README.md": `lab files are YAML (.yaml or .yml), not ".md"`,
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata/up", file)
			before := snapshot(t, e)
			_, errOut, code := e.run(t, "up", path)
			if code != exitBadLabFile {
				t.Errorf("exit %d, want %d\n%s", code, exitBadLabFile, errOut)
			}
			if !strings.Contains(errOut, path) || !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q (and the file name):\n%s", want, errOut)
			}
			if !strings.Contains(errOut, "nothing was created") {
				t.Errorf("stderr does not say nothing was created:\n%s", errOut)
			}
			if after := snapshot(t, e); !slices.Equal(before, after) {
				t.Errorf("something was created:\n before %v\n after  %v", before, after)
			}
		})
	}
}

// testUpInjection: lab and node names on the command line are checked
// before anything is looked up; a path outside the state root survives.
func testUpInjection(t *testing.T, e *upEnv) {
	// A directory that `down ../victim` would reach if names were paths.
	victim := filepath.Join(filepath.Dir(e.state), "victim"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(victim)
	if err := os.WriteFile(filepath.Join(victim, "state.json"), []byte(`{"lab":"victim","namespaces":["lo"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 200)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"down", "../" + filepath.Base(victim)}, "neither a lab file nor a lab name"},
		{[]string{"down", "a;rm -rf x"}, "has ';'"},
		{[]string{"down", "$(reboot)"}, "has '$'"},
		{[]string{"down", long}, "is 200 bytes long"},
		{[]string{"status", "../" + filepath.Base(victim)}, "neither a lab file nor a lab name"},
		{[]string{"exec", "../" + filepath.Base(victim) + "/h1", "--", "true"}, `lab of "../`},
		{[]string{"exec", "x/../../h1", "--", "true"}, "has '.'"},
		{[]string{"exec", "lab/a;rm", "--", "true"}, "has ';'"},
		{[]string{"exec", long, "--", "true"}, "is 200 bytes long"},
		{[]string{"exec", "lab/" + long, "--", "true"}, "is 200 bytes long"},
		{[]string{"up", "--hosts", "tap;rm", "testdata/up/two-hosts.yaml"}, "--hosts"},
	} {
		before := snapshot(t, e)
		_, errOut, code := e.run(t, c.args[0], c.args[1:]...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("emulab %q: exit %d, stderr %q; want an error with %q", c.args, code, errOut, c.want)
		}
		if after := snapshot(t, e); !slices.Equal(before, after) {
			t.Errorf("emulab %q changed something:\n before %v\n after  %v", c.args, before, after)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "state.json")); err != nil {
		t.Errorf("a directory outside the state root was touched: %v", err)
	}
}

// snapshot is what a command must not change: the state root's entries,
// the named namespaces, the root namespace's interfaces.
func snapshot(t *testing.T, e *upEnv) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir(e.state)
	for _, en := range ents {
		out = append(out, "state:"+en.Name())
	}
	ents, _ = os.ReadDir(lab.NetnsDir)
	for _, en := range ents {
		if strings.HasPrefix(en.Name(), lab.NamespacePrefix) {
			out = append(out, "netns:"+en.Name())
		}
	}
	return append(out, rootInterfaces(t)...)
}

var vmRSSRE = regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`)

// TestUpSixteenHosts measures (logs, does not assert) the time of up and
// down of a 16-host, 2-switch lab and the memory of each daemon; the
// issue's targets are up <= 3 s and down <= 2 s.
func TestUpSixteenHosts(t *testing.T) {
	e := newUpEnv(t)
	for _, hosts := range []string{"tap", "nic"} {
		t.Run(hosts, func(t *testing.T) {
			l := e.lab(t, "testdata/up/sixteen.yaml")
			t0 := time.Now()
			socks := e.up(t, l, hosts)
			upTook := time.Since(t0)
			rss := map[string][]int{}
			ents, err := os.ReadDir(filepath.Join(e.state, l.name, "run"))
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range ents {
				name := strings.TrimSuffix(en.Name(), ".pid")
				pid := e.pid(t, l, name)
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				m := vmRSSRE.FindSubmatch(b)
				if m == nil {
					t.Fatalf("%s: no VmRSS", name)
				}
				kb, _ := strconv.Atoi(string(m[1]))
				kind, _, _ := strings.Cut(name, "-")
				rss[kind] = append(rss[kind], kb)
			}
			// Across the two switches.
			e.ping(t, l, "h1", "h16")
			t0 = time.Now()
			e.down(t, l, socks)
			downTook := time.Since(t0)
			t.Logf("16 hosts, 2 switches, hosts %s: up %.2fs, down %.2fs (targets 3 s, 2 s)", hosts, upTook.Seconds(), downTook.Seconds())
			for kind, v := range rss {
				slices.Sort(v)
				sum := 0
				for _, x := range v {
					sum += x
				}
				t.Logf("  %s RSS: %d processes, min %d KiB, max %d KiB, mean %d KiB", kind, len(v), v[0], v[len(v)-1], sum/len(v))
			}
		})
	}
}
