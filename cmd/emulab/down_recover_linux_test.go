package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestDownRecovers: a lab whose state record was lost or damaged by hand
// still comes down whole (found by a chaos test: both left every
// namespace and daemon behind, and the next up was refused): state.json
// removed, state.json garbled (status says what to do), the whole state
// directory removed (down finds the namespaces named after the lab).
func TestDownRecovers(t *testing.T) {
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/two-hosts.yaml")

	// The same lab name under another state directory is not a leftover:
	// down there must not touch the lab that is up here, not even its
	// host namespaces that no daemon runs in (--hosts tap).
	t.Run("another state directory", func(t *testing.T) {
		e.up(t, l, "tap")
		other := t.TempDir()
		out, errOut, code := e.runIn(t, other, "down", l.name)
		if code != 0 || !strings.Contains(out, "is not up") {
			t.Errorf("down under %s: exit %d, %s%s", other, code, out, errOut)
		}
		// It says where the lab is up: a bare "not up" left users
		// believing it gone until the next up said it was already up.
		if want := lab.DownCommand(e.state, l.name); !strings.Contains(out, want) {
			t.Errorf("down under %s does not say where the lab is up (%s): %s", other, want, out)
		}
		if st := e.mustRun(t, "status", l.name); !strings.Contains(st, "up") || strings.Contains(st, "dead") {
			t.Errorf("the lab after a down under another state directory:\n%s", st)
		}
		e.ping(t, l, "h1", "h2")
		e.down(t, l, nil)
	})

	// Only namespaces up marked as this lab's are taken: not a user's own
	// namespace that happens to be named emu-<lab>-x, and not those of a
	// lab whose name begins with this one's ("L" and "L-1") whose state
	// directory is gone.
	t.Run("not ours", func(t *testing.T) {
		short := l.name[:strings.LastIndexByte(l.name, '-')] // uptwoNNNNN-k: uptwoNNNNN
		mine := lab.NamespacePrefix + short + "-mine"
		if out, err := exec.Command("ip", "netns", "add", mine).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v %s", err, out)
		}
		defer exec.Command("ip", "netns", "del", mine).Run()
		e.up(t, l, "nic")
		if err := os.RemoveAll(filepath.Join(e.state, l.name)); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := e.run(t, "down", short)
		if code != 0 || !strings.Contains(out, "is not up") {
			t.Errorf("down %s: exit %d, %s%s", short, code, out, errOut)
		}
		for _, ns := range []string{mine, lab.NamespacePrefix + l.name + "-h1"} {
			if !lab.NamespaceExists(ns) {
				t.Errorf("down %s removed %s", short, ns)
			}
		}
		// Its own down still finds it by its marks.
		if out := e.mustRun(t, "down", l.name); !strings.Contains(out, "left 3 namespace(s)") {
			t.Errorf("down %s: %s", l.name, out)
		}
		e.checkGone(t, l, nil)
	})
	for _, c := range []struct {
		name   string
		damage func(dir string) error
		says   string
	}{
		{"state.json removed", func(dir string) error { return os.Remove(filepath.Join(dir, "state.json")) }, "is down"},
		{"state.json garbled", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"lab": garbage`), 0o600)
		}, "is down"},
		{"state directory removed", func(dir string) error { return os.RemoveAll(dir) }, "left 3 namespace(s) named after it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.up(t, l, "nic")
			dir := filepath.Join(e.state, l.name)
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			if c.name == "state.json garbled" {
				_, errOut, code := e.run(t, "status", l.name)
				if code == 0 || !strings.Contains(errOut, "the lab's state record is damaged: `emulab down --state-dir "+e.state+" "+l.name+"` removes what the lab left behind") {
					t.Errorf("status of a garbled record: exit %d, %s", code, errOut)
				}
			}
			out := e.mustRun(t, "down", l.name)
			if !strings.Contains(out, c.says) {
				t.Errorf("down printed %q, want %q", out, c.says)
			}
			e.checkGone(t, l, nil)
			// And the next up works.
			e.up(t, l, "nic")
			e.down(t, l, nil)
		})
	}
}
