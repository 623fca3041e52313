package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpRelativeStateDir: --state-dir may be relative to where emulab
// runs; up makes it absolute for the daemons (their socket paths must be),
// and the other commands find the lab by the same relative path.
func TestUpRelativeStateDir(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/two-hosts.yaml")
	dir, rel := filepath.Dir(e.state), filepath.Base(e.state)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "emulab"), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("emulab %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	abs, err := filepath.Abs(l.file)
	if err != nil {
		t.Fatal(err)
	}
	run("up", "-q", "--hosts", "tap", "--state-dir", rel, abs)
	if out := run("exec", "--state-dir", rel, l.node("h1"), "--", "ping", "-c", "1", "-W", "2", l.ip("h2")); !strings.Contains(out, "1 received") {
		t.Errorf("ping:\n%s", out)
	}
	// The flag may also come after NODE, before "--".
	if out := run("exec", l.node("h1"), "--state-dir", rel, "--", "ping", "-c", "1", "-W", "2", l.ip("h2")); !strings.Contains(out, "1 received") {
		t.Errorf("ping with --state-dir after NODE:\n%s", out)
	}
	run("down", "--state-dir", rel, l.name)
	e.checkGone(t, l, nil)
}
