package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestUpStartHelper: lab.Start brings a lab up inside a test, Exec runs
// commands in its namespaces, status sees it, and the cleanup removes it.
func TestUpStartHelper(t *testing.T) {
	SkipUnlessRoot(t)
	spec := LoadUnique(t, "../examples/two-hosts.yaml")
	var l *Lab
	var socks []string
	t.Run("up", func(t *testing.T) {
		l = Start(t, spec) // emunic hosts
		socks = l.State.Sockets()

		// -w: wait up to 10 s for the 2 replies; without it ping gives up
		// on the last one 200 ms after sending it (-i), which a loaded
		// machine's stall of the emulated path exceeds.
		out, err := l.Exec("h1", "ping", "-c", "2", "-i", "0.2", "-w", "10", "10.0.0.2")
		if err != nil || !strings.Contains(string(out), " received") {
			t.Fatalf("ping: %v\n%s", err, out)
		}
		// A failing command is an error naming the node; its output is
		// returned.
		out, err = l.Exec("h2", "sh", "-c", "echo from-h2; exit 3")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(err.Error(), "h2: sh") || string(out) != "from-h2\n" {
			t.Errorf("exit 3: %v, %q", err, out)
		}
		if _, err := l.Exec("h9", "true"); err == nil {
			t.Error("Exec on a node the lab does not have")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = l.ExecContext(ctx, "h1", "sleep", "10")
		cancel()
		if !errors.As(err, &ee) {
			t.Errorf("cancelled command: %v", err)
		}
		// The context ends the command's children too, not only the
		// shell: the call returns long before the sleep would end.
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		begin := time.Now()
		out, err = l.ExecContext(ctx, "h1", "sh", "-c", "sleep 20; echo done")
		cancel()
		if took := time.Since(begin); err == nil || strings.Contains(string(out), "done") || took > 10*time.Second {
			t.Errorf("sh -c 'sleep 20; echo done' under a 1 s context: %v, %q after %v", err, out, took)
		}
		h1ns, _ := l.Namespace("h1")
		pids, _ := nsPidsIn(h1ns)
		for _, pid := range pids {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); string(b) == "sleep\x0020\x00" && !nsWaitGone(pid, 0, 5*time.Second) {
				t.Errorf("the command's sleep (pid %d) outlived the context", pid)
			}
		}

		// The test holds the lab: status says so, a second Up is refused.
		st, err := ReadStatus(l.State.Root, spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		daemons := 0
		for _, n := range l.Info.Nodes {
			if n.Daemon != "" {
				daemons++
			}
		}
		if !st.Locked || st.Info == nil || len(st.Procs) != daemons || len(st.Namespaces) != 3 {
			t.Errorf("status %+v", st)
		}
		for _, p := range st.Procs {
			if !p.Alive {
				t.Errorf("daemon %s (pid %d) not alive", p.Name, p.Pid)
			}
		}
		for _, ns := range st.Namespaces {
			if !ns.Exists {
				t.Errorf("namespace %s missing", ns.Name)
			}
		}
		if labs, err := Labs(l.State.Root); err != nil || len(labs) != 1 || labs[0] != spec.Name {
			t.Errorf("Labs: %v %v", labs, err)
		}
		// The hint names the state directory the lab is under.
		if _, err := Up(context.Background(), spec, UpOptions{StateRoot: l.State.Root, Hosts: HostsTAP}); err == nil || !strings.Contains(err.Error(), "already up") ||
			!strings.Contains(err.Error(), "`emulab down --state-dir "+l.State.Root+" "+spec.Name+"` first") {
			t.Errorf("second Up of a lab that is up: %v", err)
		}
		// ResolveNode: lab/node, and node alone with one lab up.
		for _, ref := range []string{spec.Name + "/h2", "h2"} {
			if _, _, ns, err := ResolveNode(l.State.Root, ref); err != nil || ns != NamespacePrefix+spec.Name+"-h2" {
				t.Errorf("ResolveNode(%q) = %q, %v", ref, ns, err)
			}
		}
		if _, _, _, err := ResolveNode(l.State.Root, spec.Name+"/h7"); err == nil || !strings.Contains(err.Error(), "its nodes: sw1, h1, h2") {
			t.Errorf("ResolveNode of a missing node: %v", err)
		}
		// The daemons go when the test process goes, cleanups or not.
		for _, n := range []string{"sw1", "h1", "h2"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", l.Proc(n).Pid))
			if want := fmt.Sprintf("\x00--exit-with-pid\x00%d\x00", os.Getpid()); err != nil || !strings.Contains(string(b), want) {
				t.Errorf("%s's daemon: command line %q, want %q in it (%v)", n, b, want, err)
			}
		}
		// The switch's control socket answers, with both ports up.
		ports, err := DaemonPorts(l.Info.Nodes[0].Control, time.Second)
		if err != nil || len(ports) != 2 || ports[0].Link != "up" || ports[1].Link != "up" {
			t.Errorf("sw1 ports %+v, %v", ports, err)
		}
	})
	if l == nil {
		return // the subtest failed before the lab was up; it said why
	}
	// The subtest's cleanup took the lab down and removed its state
	// root, not a later sweep.
	if _, err := os.Lstat(l.State.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state root %s left after cleanup: %v", l.State.Root, err)
	}
	for _, ns := range []string{"sw1", "h1", "h2"} {
		if NamespaceExists(NamespacePrefix + spec.Name + "-" + ns) {
			t.Errorf("namespace of %s left after cleanup", ns)
		}
	}
	for _, s := range socks {
		if _, err := os.Lstat(s); err == nil {
			t.Errorf("socket %s left", s)
		}
	}
	p := l.Proc("sw1")
	if p == nil {
		t.Fatal("no daemon recorded for sw1")
	}
	select {
	case <-p.Done(): // exited and reaped
	default:
		t.Errorf("emuswitch pid %d still runs", p.Pid)
	}
}

// TestUpFailures: when a daemon fails, never gets ready, does not create
// its TAP, or the caller gives up, Up says which node and log, and removes
// everything it created; a namespace that is not the lab's is never
// touched.
func TestUpFailures(t *testing.T) {
	SkipUnlessRoot(t)
	spec := LoadUnique(t, "../examples/two-hosts.yaml")
	for _, c := range []struct {
		name    string
		script  string
		timeout time.Duration
		cancel  time.Duration
		want    []string
	}{
		{"exits", "echo 'emuswitch: --port p1=tap:eth0: cannot create'; exit 2", 10 * time.Second, 0,
			[]string{"node sw1: emuswitch exited before it was ready (exit status 2)", "log/emuswitch-sw1.log", "--port p1=tap:eth0: cannot create"}},
		// 2 s, not less: the shell must have started and printed within
		// the bound, for the log tail ("starting") or the wait for the TAP
		// ("ready") to be what the error reports.
		{"never-ready", "echo starting; exec sleep 30", 2 * time.Second, 0,
			[]string{"node sw1: emuswitch not ready after 2s", "log/emuswitch-sw1.log", "    starting"}},
		{"no-tap", "echo ready; exec sleep 30", 2 * time.Second, 0,
			[]string{"node h1: interface eth0 did not appear in " + NamespacePrefix + spec.Name + "-h1 (emuswitch-sw1 creates it)"}},
		{"cancelled", "exec sleep 30", 10 * time.Second, 200 * time.Millisecond,
			[]string{"context canceled"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.WriteFile(bin+"/"+SwitchBinary, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			ctx := context.Background()
			if c.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				defer time.AfterFunc(c.cancel, cancel).Stop()
			}
			var progress strings.Builder
			l, err := Up(ctx, spec, UpOptions{StateRoot: root, BinDir: bin, Hosts: HostsTAP, ReadyTimeout: c.timeout, Grace: 100 * time.Millisecond, Progress: &progress})
			if err == nil {
				l.Down()
				t.Fatal("Up succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.Contains(progress.String(), "tearing down what was created") {
				t.Errorf("progress:\n%s", progress.String())
			}
			// The error's first line is in the progress, the log tail
			// after it only in the error.
			if _, tail, ok := strings.Cut(err.Error(), "\n"); ok && strings.Contains(progress.String(), tail) {
				t.Errorf("the progress repeats the error's log tail:\n%s", progress.String())
			}
			upCheckGone(t, root, spec)
		})
	}

	t.Run("foreign-namespace", func(t *testing.T) {
		name := NamespacePrefix + spec.Name + "-h2"
		ns, err := CreateNamespace(name)
		if err != nil {
			t.Fatal(err)
		}
		ns.Close()
		defer DeleteNamespace(name)
		root, bin := t.TempDir(), t.TempDir()
		if err := os.WriteFile(bin+"/"+SwitchBinary, []byte("#!/bin/sh\necho ready\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err = Up(context.Background(), spec, UpOptions{StateRoot: root, BinDir: bin, Hosts: HostsTAP})
		if err == nil || !strings.Contains(err.Error(), "namespace "+name+" of node h2 exists already") {
			t.Errorf("Up: %v", err)
		}
		if !NamespaceExists(name) {
			t.Error("Up deleted a namespace it did not create")
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Errorf("state root holds %v", ents)
		}
	})
}

// upCheckGone: no namespace, process or state of the lab is left.
func upCheckGone(t *testing.T, root string, spec *Spec) {
	t.Helper()
	for _, n := range spec.Nodes {
		ns := NamespacePrefix + spec.Name + "-" + n.Name
		if NamespaceExists(ns) {
			t.Errorf("namespace %s left", ns)
		}
	}
	if _, err := os.Stat(root + "/" + spec.Name); err == nil {
		t.Errorf("state directory left")
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), spec.File) && nsAlive(atoiOr0(e.Name()), 0) {
			t.Errorf("process %s left: %q", e.Name(), b)
		}
	}
}

func atoiOr0(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestResolveNodeNoLab: with no lab under the state directory the error
// names the directory it looked in (a --state-dir given in the wrong
// place, or not at all, is the usual cause).
func TestResolveNodeNoLab(t *testing.T) {
	root := t.TempDir()
	if _, _, _, err := ResolveNode(root, "h1"); err == nil || !strings.Contains(err.Error(), "node h1: no lab is up under "+root+" (--state-dir)") {
		t.Errorf("ResolveNode with no lab: %v", err)
	}
}

// TestResolveNodeLabName: a lab's name given where a node is wanted (emulab
// capture LAB) is said to be a lab, with its nodes, not taken for a node
// of some other lab ("say which, LAB/LAB").
func TestResolveNodeLabName(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"labx", "laby"} {
		os.MkdirAll(filepath.Join(root, name), 0o755)
		rec := `{"lab":"` + name + `","namespaces":["` + NamespacePrefix + name + `-sw1","` + NamespacePrefix + name + `-h1"]}`
		if err := os.WriteFile(filepath.Join(root, name, "state.json"), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := "labx is a lab, not a node: name one of its nodes, labx/NODE; its nodes: sw1, h1"
	if _, _, _, err := ResolveNode(root, "labx"); err == nil || err.Error() != want {
		t.Errorf("ResolveNode(labx): %v\nwant %s", err, want)
	}
}

// TestNamespaceTaken: lab and node names join with '-', so lab w2-x's node
// h1 and lab w2's node x-h1 are both emu-w2-x-h1. The refusal names the
// lab that owns the namespace and how to take it down, not the lab being
// brought up; so does the owner mark of a namespace a lab under another
// state directory made.
func TestNamespaceTaken(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "w2-x"), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := `{"lab":"w2-x","namespaces":["emu-w2-x-sw1","emu-w2-x-h1"],"procs":[],"sockets":[]}`
	if err := os.WriteFile(filepath.Join(root, "w2-x", "state.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	err := namespaceTaken(root, "w2", "x-h1", "emu-w2-x-h1")
	if err == nil || !strings.Contains(err.Error(), "namespace emu-w2-x-h1 of node x-h1 is lab w2-x's") ||
		!strings.Contains(err.Error(), "`emulab down --state-dir "+root+" w2-x`") {
		t.Errorf("collision: %v", err)
	}
	err = namespaceTaken(root, "w3", "h1", "emu-w3-h1")
	if err == nil || !strings.Contains(err.Error(), "namespace emu-w3-h1 of node h1 exists already and no lab marked it") ||
		!strings.Contains(err.Error(), "`ip netns delete emu-w3-h1`") {
		t.Errorf("no owner found: %v", err)
	}

	// A namespace up marked names the lab and state directory that made
	// it, not the lab being brought up, and is never to be deleted by
	// hand.
	SkipUnlessRoot(t)
	spec := LoadUnique(t, "../examples/two-hosts.yaml")
	name := NamespacePrefix + spec.Name + "-h1"
	ns, err := CreateNamespace(name)
	if err != nil {
		t.Fatal(err)
	}
	defer DeleteNamespace(name)
	other := filepath.Join(t.TempDir(), "elsewhere")
	err = ns.MarkOwner(filepath.Join(other, spec.Name))
	ns.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = namespaceTaken(root, spec.Name, "h1", name)
	if err == nil || !strings.Contains(err.Error(), "belongs to lab "+spec.Name+" under state directory "+other) ||
		!strings.Contains(err.Error(), "`emulab down --state-dir "+other+" "+spec.Name+"`") ||
		strings.Contains(err.Error(), root) || strings.Contains(err.Error(), "ip netns delete") {
		t.Errorf("marked namespace: %v", err)
	}
}

// recordTB is a test whose Errorf is recorded instead of failing it: for
// checking what Start's cleanup reports.
type recordTB struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *recordTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestStartHelperExtras: LoadUnique gives every call its own lab name; a
// spec from Parse comes up (Start writes its text for the daemons); a
// host's address is at hand (NodeInfo.IP); a daemon killed from outside
// fails the test at cleanup with the end of its log (Health), one stopped
// with Proc.Stop does not, nor a lab the test took down with Down.
func TestStartHelperExtras(t *testing.T) {
	SkipUnlessRoot(t)
	a, b := LoadUnique(t, "../examples/two-hosts.yaml"), LoadUnique(t, "../examples/two-hosts.yaml")
	if a.Name == b.Name {
		t.Fatalf("two LoadUnique calls gave one name, %s", a.Name)
	}
	src, err := os.ReadFile("../examples/two-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Named after a file that exists and says something else: the
	// parsed text is what comes up.
	spec, err := Parse("../examples/two-hosts.yaml", []byte(strings.Replace(string(src), "name: two-hosts", "name: "+a.Name, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordTB{}
	t.Run("killed", func(t *testing.T) {
		rec.T = t
		l := Start(rec, spec, UpOptions{Hosts: HostsTAP})
		if spec.File != "../examples/two-hosts.yaml" || l.Spec.File == spec.File || l.Spec.Name != a.Name {
			t.Errorf("the caller's spec names %s, the lab's %s (%s)", spec.File, l.Spec.File, l.Spec.Name)
		}
		ip := l.Info.Node("h2").IP()
		if !ip.IsValid() || l.Info.Node("sw1").IP().IsValid() {
			t.Fatalf("h2's address %v, sw1's %v", ip, l.Info.Node("sw1").IP())
		}
		if out, err := l.Exec("h1", "ping", "-c", "1", "-w", "10", ip.String()); err != nil {
			t.Fatalf("ping %s: %v\n%s", ip, err, out)
		}
		if err := l.Health(); err != nil {
			t.Fatalf("Health of a running lab: %v", err)
		}
		p := l.Proc("sw1")
		if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if err := l.Health(); err == nil || !strings.Contains(err.Error(), "emuswitch-sw1 of node sw1 exited during the test (signal: killed)") || !strings.Contains(err.Error(), "its log ends:") {
			t.Errorf("Health after kill -9: %v", err)
		}
	})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "exited during the test") {
		t.Errorf("cleanup reported %q, want the daemon that exited", rec.errs)
	}
	t.Run("stopped", func(t *testing.T) {
		l := Start(t, b, UpOptions{Hosts: HostsTAP})
		if err := l.Proc("sw1").Stop(0); err != nil {
			t.Fatal(err)
		}
		if err := l.Health(); err != nil {
			t.Errorf("Health after Proc.Stop: %v", err)
		}
	})
	// A test that takes its lab down itself: the daemons' exits are
	// expected, and Start's cleanup, which calls Down again, is quiet.
	rec = &recordTB{}
	t.Run("down", func(t *testing.T) {
		rec.T = t
		l := Start(rec, LoadUnique(t, "../examples/two-hosts.yaml"), UpOptions{Hosts: HostsTAP})
		if err := l.Down(); err != nil {
			t.Fatalf("Down: %v", err)
		}
		if err := l.Health(); err != nil {
			t.Errorf("Health after Down: %v", err)
		}
		if err := l.Down(); err != nil {
			t.Errorf("second Down: %v", err)
		}
		// A command after Down is refused as such, not with the
		// missing namespace file it would otherwise trip over.
		want := "lab " + l.Spec.Name + " is down (Lab.Down)"
		if out, err := l.Exec("h1", "true"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Exec after Down: %v (%q), want an error saying %q", err, out, want)
		}
	})
	if len(rec.errs) != 0 {
		t.Errorf("cleanup after Down reported %q", rec.errs)
	}
}

// fatalTB is a test whose Fatalf is recorded and ends the (sub)test as
// skipped instead of failed: for checking what Start refuses.
type fatalTB struct {
	*testing.T
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	f.SkipNow()
}

// startRefusal runs Start(spec, opts...) and returns the message it
// stopped the test with ("" if it did not).
func startRefusal(t *testing.T, spec *Spec, opts ...UpOptions) string {
	t.Helper()
	f := &fatalTB{}
	t.Run("refused", func(t *testing.T) {
		f.T = t
		Start(f, spec, opts...)
	})
	return f.fatal
}

// TestStartRefuses: Start stops the test with a message, before it builds
// or creates anything, when the spec was changed in memory after it was
// parsed (the daemons read its text: the change would be half applied),
// or is nil; hosts are emunic NICs unless the test asks for TAP hosts, so
// a BinDir without emunic is refused; a state root too long for the
// sockets is named as Start's option.
func TestStartRefuses(t *testing.T) {
	spec, err := Load("../examples/two-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Links[0].Loss = 0.5
	if msg := startRefusal(t, spec); !strings.Contains(msg, "lab.Start: spec ../examples/two-hosts.yaml was changed after it was parsed (Links[0].LinkParams.Loss: 0.5, the text says 0)") {
		t.Errorf("edited spec: %q", msg)
	}
	if msg := startRefusal(t, nil); msg != "lab.Start: nil spec (make one with lab.LoadUnique, lab.Load or lab.Parse)" {
		t.Errorf("nil spec: %q", msg)
	}

	// A state root whose socket paths do not fit sun_path: the message
	// names Start's option, not emulab's --state-dir.
	SkipUnlessRoot(t)
	bin := t.TempDir()
	for _, b := range []string{SwitchBinary, NICBinary} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A BinDir without emunic: the hosts are not quietly made TAP ports.
	nonic := t.TempDir()
	if err := os.Symlink(filepath.Join(bin, SwitchBinary), filepath.Join(nonic, SwitchBinary)); err != nil {
		t.Fatal(err)
	}
	if msg := startRefusal(t, LoadUnique(t, "../examples/two-hosts.yaml"), UpOptions{BinDir: nonic}); msg != "lab.Start: emunic is not in UpOptions.BinDir ("+nonic+"): the hosts are emunic NICs unless UpOptions.Hosts is lab.HostsTAP (plain TAP ports of their switch)" {
		t.Errorf("BinDir without emunic: %q", msg)
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 80))
	msg := startRefusal(t, LoadUnique(t, "../examples/two-hosts.yaml"), UpOptions{StateRoot: long, BinDir: bin})
	if !strings.Contains(msg, "bytes: use a shorter UpOptions.StateRoot") || strings.Contains(msg, "--state-dir") {
		t.Errorf("socket path too long: %q", msg)
	}
}
