package lab

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNsNamespaceName(t *testing.T) {
	good, err := NamespaceName("incast", "h1")
	if err != nil || good != "emu-incast-h1" {
		t.Fatalf("got %q, %v", good, err)
	}
	for _, c := range []struct{ lab, node string }{
		{"", "h1"}, {"lab", ""},
		{"../etc", "h1"}, {"lab", "h1/../../x"}, {"lab", "a b"}, {"lab", "a;reboot"},
		{"lab", "$(id)"}, {"lab", "`id`"}, {"lab", "-rf"}, {"lab", "h1\n"}, {"lab", "h1\x00"},
		{"lab", "x.y"}, {"abcdefghijklmnop", "h1"}, {"lab", "node-with-16-chr"}, {"läb", "h1"},
	} {
		if n, err := NamespaceName(c.lab, c.node); err == nil {
			t.Errorf("NamespaceName(%q, %q) = %q, want an error", c.lab, c.node, n)
		}
	}
}

func TestNsStateRecords(t *testing.T) {
	root := t.TempDir()
	s, err := OpenState(root, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNamespace("emu-lab1-h1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNamespace("emu-lab1-h1"); err != nil { // idempotent
		t.Fatal(err)
	}
	sp, err := s.SocketPath("link0")
	if err != nil {
		t.Fatal(err)
	}
	if sp != filepath.Join(root, "lab1", "sock", "link0.sock") {
		t.Fatalf("socket path %s", sp)
	}
	for _, bad := range []string{"../x", "a/b", "", ".", "x y", strings.Repeat("a", 40)} {
		if _, err := s.SocketPath(bad); err == nil {
			t.Errorf("SocketPath(%q) accepted", bad)
		}
		if err := s.RecordNamespace(bad); err == nil {
			t.Errorf("RecordNamespace(%q) accepted", bad)
		}
		if _, err := s.Start(ProcSpec{Name: bad, Path: "/bin/true"}); err == nil {
			t.Errorf("Start(%q) accepted", bad)
		}
	}
	if _, err := OpenState(root, "lab1"); !errors.Is(err, ErrLabLocked) {
		t.Fatalf("second controller: %v, want ErrLabLocked", err)
	}
	if _, err := OpenState(root, "../lab1"); err == nil {
		t.Fatal("lab name with a path accepted")
	}
	st, err := os.Stat(s.Dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode: %v %v", st.Mode(), err)
	}
	s.Close()
	// A new controller (after the first died) sees the records.
	s2, err := OpenState(root, "lab1")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !slices.Equal(s2.Namespaces(), []string{"emu-lab1-h1"}) || !slices.Equal(s2.Sockets(), []string{sp}) {
		t.Fatalf("reloaded: %v %v", s2.Namespaces(), s2.Sockets())
	}
}

func TestNsReadStat(t *testing.T) {
	st, err := nsReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'R' && st.State != 'S' || st.StartTime == 0 {
		t.Fatalf("own stat: %+v", st)
	}
	if nsAlive(os.Getpid(), st.StartTime+1) {
		t.Fatal("a different start time must mean a different process")
	}
	if !nsAlive(os.Getpid(), st.StartTime) {
		t.Fatal("self not alive")
	}
}

// TestNsStartStop: a daemon that obeys SIGTERM, and one that ignores it and
// is SIGKILLed after the grace time; both are reaped and forgotten.
func TestNsStartStop(t *testing.T) {
	root := t.TempDir()
	s, err := OpenState(root, "procs")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"polite", []string{"-c", "exec sleep 1000"}},
		{"stubborn", []string{"-c", "trap '' TERM; echo started; while :; do sleep 1; done"}},
	} {
		p, err := s.Start(ProcSpec{Name: c.name, Path: "/bin/sh", Args: c.args})
		if err != nil {
			t.Fatal(err)
		}
		pidPath, _ := s.PidPath(c.name)
		if b, err := os.ReadFile(pidPath); err != nil || strings.TrimSpace(string(b)) == "" {
			t.Fatalf("pidfile: %q %v", b, err)
		}
		if s.ProcPids()[c.name] != p.Pid {
			t.Fatalf("not recorded: %v", s.ProcPids())
		}
		if c.name == "stubborn" {
			// Wait until the trap is installed, or SIGTERM would still kill it.
			logPath, _ := s.LogPath(c.name)
			for i := 0; ; i++ {
				if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "started") {
					break
				}
				if i > 3000 {
					t.Fatal("stubborn daemon did not start")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err := p.Stop(200 * time.Millisecond); err != nil {
			t.Fatalf("%s: Stop: %v", c.name, err)
		}
		if nsAlive(p.Pid, 0) {
			t.Fatalf("%s: still alive", c.name)
		}
		if _, err := os.Stat(pidPath); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: pidfile left", c.name)
		}
		if _, ok := s.ProcPids()[c.name]; ok {
			t.Fatalf("%s: still recorded", c.name)
		}
	}
}

func TestNsNamespaceLifecycle(t *testing.T) {
	nsSkipUnlessRoot(t)
	name, err := NamespaceName(nsTestLabName("ns"), "h1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DeleteNamespace(name) })
	ns, err := CreateNamespace(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if !NamespaceExists(name) {
		t.Fatal("namespace not visible in " + NetnsDir)
	}
	if _, err := CreateNamespace(name); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create: %v, want ErrExist", err)
	}
	if err := ns.SetMTU("lo", 9000); err != nil {
		t.Fatal(err)
	}
	names, err := ns.LinkNames()
	if err != nil || !slices.Equal(names, []string{"lo"}) {
		t.Fatalf("links %v %v", names, err)
	}
	if err := ns.LinkUp("nonexistent0"); err == nil {
		t.Fatal("LinkUp of a missing interface succeeded")
	}
	ns2, err := OpenNamespace(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ns2.Netlink().LinkByName("lo")
	if err != nil || l.Attrs().MTU != 9000 {
		t.Fatalf("lo through a second handle: %v %v", l, err)
	}
	ns2.Close()
	if err := DeleteNamespace(name); err != nil {
		t.Fatal(err)
	}
	if NamespaceExists(name) {
		t.Fatal("namespace still there")
	}
	if err := DeleteNamespace(name); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if err := Teardown(t.TempDir(), "nolab", time.Second); err != nil {
		t.Fatalf("teardown of a lab that is not there: %v", err)
	}
}

// A command name may hold spaces and parentheses; fields are counted from
// the last ')'. Sample from proc(5)'s layout, starttime 123456.
const nsStatSample = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"

func TestNsParseStat(t *testing.T) {
	st, err := nsParseStat([]byte(nsStatSample))
	if err != nil {
		t.Fatal(err)
	}
	if st != (nsProcStat{State: 'S', Pgrp: 4242, StartTime: 123456}) {
		t.Fatalf("%+v", st)
	}
	for _, bad := range []string{"", "1 (x S 1", "1 (x) S 1 2", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "1 (x) S 1 y 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := nsParseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzNsParseStat(f *testing.F) {
	f.Add([]byte(nsStatSample))
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := nsParseStat(b)
		if err == nil && st.State == 0 {
			t.Fatal("parsed without a state")
		}
	})
}

// TestTeardownLeavesAnotherLabsNamespace: a lab's record names a
// namespace that another lab of the same name, under another state
// directory, now owns (this lab's went with a reboot or by hand, and the
// name was taken again): tearing the first down leaves it alone. The test
// helper's sweep of a dead test's lab destroyed a CLI lab this way (a
// chaos test).
func TestTeardownLeavesAnotherLabsNamespace(t *testing.T) {
	SkipUnlessRoot(t)
	const lab = "pteardown"
	ns := NamespacePrefix + lab + "-sw1"
	dead, live := t.TempDir(), t.TempDir()
	s, err := OpenState(dead, lab)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordNamespace(ns); err != nil {
		t.Fatal(err)
	}
	n, err := CreateNamespace(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DeleteNamespace(ns) })
	if err := n.MarkOwner(filepath.Join(absRoot(live), lab)); err != nil {
		t.Fatal(err)
	}
	n.Close()
	if err := s.Teardown(time.Second); err != nil {
		t.Fatal(err)
	}
	if !NamespaceExists(ns) {
		t.Error("the other lab's namespace was deleted")
	}
}

// A stopped daemon (kill -STOP) acts on SIGTERM only once continued: Stop
// and Teardown continue it, so it ends as asked (its TERM trap runs)
// rather than being killed when the grace runs out.
func TestStopContinuesAStoppedProcess(t *testing.T) {
	const script = "trap 'echo bye; exit 0' TERM; echo started; while :; do sleep 0.05; done"
	for _, how := range []string{"Stop", "Teardown"} {
		t.Run(how, func(t *testing.T) {
			root := t.TempDir()
			s, err := OpenState(root, "stopped")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			p, err := s.Start(ProcSpec{Name: "d", Path: "/bin/sh", Args: []string{"-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			logPath, _ := s.LogPath("d")
			waitLog := func(want string) bool {
				for i := 0; i < 3000; i++ {
					if b, _ := os.ReadFile(logPath); strings.Contains(string(b), want) {
						return true
					}
					time.Sleep(10 * time.Millisecond)
				}
				return false
			}
			if !waitLog("started") {
				t.Fatal("the daemon did not start")
			}
			if err := syscall.Kill(p.Pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				if st, _ := nsReadStat(p.Pid); st.State == 'T' {
					break
				}
				if i > 3000 {
					t.Fatal("the daemon did not stop")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// The grace is long against the trap's few milliseconds, and
			// the test fails on what ended the daemon, not on the time.
			const grace = 10 * time.Second
			if how == "Stop" {
				err = p.Stop(grace)
			} else {
				err = s.Teardown(grace)
				<-p.Done()
			}
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			if b, _ := os.ReadFile(logPath); how == "Stop" && !strings.Contains(string(b), "bye") {
				t.Fatalf("the stopped daemon was killed, not continued to act on SIGTERM; log:\n%s", b)
			}
			if how == "Teardown" {
				// Teardown removes the state directory, log included:
				// the exit status says how it ended.
				var ee *exec.ExitError
				if werr := p.Wait(); errors.As(werr, &ee) {
					t.Fatalf("the stopped daemon was killed, not continued to act on SIGTERM: %v", werr)
				}
			}
		})
	}
}

// TestUpElsewhere: a lab up under one state directory is found from
// another (a down without its --state-dir said "not up, nothing to
// remove", exited 0 and left it running, and the next up said it was
// already up), and lab pel is not lab pel-x, whose namespaces its prefix
// also matches.
func TestUpElsewhere(t *testing.T) {
	SkipUnlessRoot(t)
	live, other := t.TempDir(), t.TempDir()
	for _, c := range []struct{ lab, ns string }{{"pelse", "sw1"}, {"pel-x", "h1"}} {
		ns := NamespacePrefix + c.lab + "-" + c.ns
		n, err := CreateNamespace(ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { DeleteNamespace(ns) })
		if err := n.MarkOwner(filepath.Join(absRoot(live), c.lab)); err != nil {
			t.Fatal(err)
		}
		n.Close()
	}
	if got := UpElsewhere(other, "pelse"); got != absRoot(live) {
		t.Errorf("UpElsewhere(other root, pelse) = %q, want %q", got, absRoot(live))
	}
	if got := UpElsewhere(live, "pelse"); got != "" {
		t.Errorf("UpElsewhere(its own root) = %q, want none", got)
	}
	if got := UpElsewhere(other, "pel"); got != "" {
		t.Errorf("UpElsewhere(pel) = %q: lab pel-x's namespace taken for lab pel's", got)
	}
}
