package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// TB is what the test helpers need of a test; *testing.T and *testing.B
// satisfy it. Declaring it here keeps the testing package out of the
// binaries that import lab.
type TB interface {
	Helper()
	Cleanup(func())
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Start brings spec up as a namespace lab for a test and tears it down
// when the test ends (pass or fail). It skips the test when not running as
// root (CI runs as root). At most one UpOptions may follow the spec.
//
// The daemons are opt.BinDir's; by default they are built once per test
// process, by import path, in the module of the working directory (this
// module, or one that requires it), and if that fails Start runs those
// next to the test binary or on PATH. The hosts are emunic NICs unless
// opt.Hosts says HostsTAP (or HostsAuto): a missing emunic fails the test.
//
// The lab's state root is a fresh directory under the test process's own,
// <TMPDIR>/emufabric-test/<pid>-<random>/ (opt.StateRoot overrides it), so
// a test never meets another lab's state; namespaces are global, so
// concurrent tests need distinct lab names (LoadUnique and Unique give
// each call one). Should the test process die before its cleanup runs (a
// panic in a parallel test, go test -timeout), the daemons exit with it
// (opt.ExitWithPid), the `emulab down` command Start logged removes the
// rest, and the first Start of a later test process does so anyway: it
// tears down the labs of test processes that are gone.
//
// The daemons read the lab's text, not the Spec: a spec from Parse, whose
// File is no file, is written to one for them, and a Spec changed in
// memory after Parse or Load is refused (change the text and parse it
// again).
//
// Teardown kills every process in the lab's namespaces, also those the
// test started there (StartCmd). A daemon that exited during the test
// fails it, with the end of its log (see Health); a test that stops one
// on purpose does so with Proc(node).Stop. A test may take the lab down
// itself with Lab.Down: the cleanup then has nothing left to do.
//
//	spec := lab.LoadUnique(t, "testdata/two-hosts.yaml")
//	l := lab.Start(t, spec) // or lab.Start(t, spec, lab.UpOptions{Hosts: lab.HostsTAP})
//	out, err := l.Exec("h1", "ping", "-c", "1", l.Info.Node("h2").IP().String())
func Start(t TB, spec *Spec, opts ...UpOptions) *Lab {
	t.Helper()
	if spec == nil {
		t.Fatalf("lab.Start: nil spec (make one with lab.LoadUnique, lab.Load or lab.Parse)")
	}
	var opt UpOptions
	switch len(opts) {
	case 0:
	case 1:
		opt = opts[0]
	default:
		t.Fatalf("lab.Start: %d UpOptions, at most one", len(opts))
	}
	if err := spec.checkUnedited(); err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	// The sweep comes before the root check: a test process that is not
	// root skips here, after LoadUnique made its directory, and the next
	// one is the only sweeper of that user's test root (a root process
	// sweeps only root's). Without root there are no labs to take down,
	// only directories.
	sweepOnce.Do(func() {
		sweepTestRoot(func(format string, args ...any) { t.Logf("lab.Start: "+format, args...) })
	})
	SkipUnlessRoot(t)
	if _, err := processDir(); err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	if opt.Hosts == "" {
		// What the test asks for, or a clear failure: HostsAuto would
		// quietly make plain TAP ports of the hosts when emunic is
		// missing, and the test would run against another lab.
		opt.Hosts = HostsNIC
	}
	if opt.BinDir == "" {
		dir, err := testDaemons()
		switch {
		case err == nil:
			opt.BinDir = dir
		case startBinaries(spec, opt) == nil:
			// UpOptions.BinDir's promise: next to the test binary, then
			// PATH.
			t.Logf("lab.Start: the daemons did not build (%v); running those next to the test binary or on PATH", err)
		default:
			t.Fatalf("lab.Start: %v\n%s", err, buildAdvice)
		}
	}
	if err := startBinaries(spec, opt); err != nil {
		t.Fatalf("lab.Start: %v", err)
	}
	if opt.StateRoot == "" {
		dir, err := processSubdir("s")
		if err != nil {
			t.Fatalf("lab.Start: state root: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		opt.StateRoot = dir
	}
	if opt.Progress == nil {
		opt.test = t
	}
	if opt.ExitWithPid == 0 {
		// The daemons go with this process when it dies without running
		// the cleanup (a panic in a parallel test, go test -timeout).
		opt.ExitWithPid = os.Getpid()
	}
	if b, err := os.ReadFile(spec.File); spec.source != nil && (err != nil || !bytes.Equal(b, spec.source)) {
		// Parsed from memory (or the file changed since): the daemons
		// read the text it was parsed from, from a copy; the caller's
		// spec keeps its name.
		dir, err := processSubdir("f")
		if err != nil {
			t.Fatalf("lab.Start: lab file: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		name := filepath.Base(spec.File)
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
			name = spec.Name + ".yaml"
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, spec.source, 0o600); err != nil {
			t.Fatalf("lab file: %v", err)
		}
		cp := *spec
		cp.File = p
		spec = &cp
	}
	l, err := Up(context.Background(), spec, opt)
	if err != nil {
		t.Fatalf("up %s: %v", spec.File, err)
	}
	t.Logf("lab %s is up; should this test process die before its cleanup, `%s` removes it", spec.Name, downCommand(l.State.Root, spec.Name))
	t.Cleanup(func() {
		if err := l.Health(); err != nil {
			t.Errorf("lab %s: %v", spec.Name, err)
		}
		if err := l.Down(); err != nil {
			t.Errorf("down %s: %v", spec.Name, err)
		}
	})
	return l
}

// startBinaries checks that the daemons the lab needs are where Up will
// look (FindBinary), with a message in Start's terms.
func startBinaries(spec *Spec, opt UpOptions) error {
	missing := func(name string) error {
		if _, err := FindBinary(name, opt.BinDir); err == nil {
			return nil
		}
		if opt.BinDir != "" {
			return fmt.Errorf("%s is not in UpOptions.BinDir (%s)", name, opt.BinDir)
		}
		return fmt.Errorf("%s is neither next to the test binary nor on PATH, and UpOptions.BinDir is not set", name)
	}
	if len(spec.Switches()) > 0 {
		if err := missing(SwitchBinary); err != nil {
			return err
		}
	}
	if opt.Hosts == HostsNIC && len(spec.NICs()) > 0 {
		if err := missing(NICBinary); err != nil {
			return fmt.Errorf("%w: the hosts are emunic NICs unless UpOptions.Hosts is lab.HostsTAP (plain TAP ports of their switch)", err)
		}
	}
	return nil
}

// SkipUnlessRoot skips a test that builds namespaces when not root.
func SkipUnlessRoot(t TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: creates network namespaces, TAP devices and processes in them (CI runs as root)")
	}
}
