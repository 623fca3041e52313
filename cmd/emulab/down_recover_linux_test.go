package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	// down there must not touch the lab that is up here.
	t.Run("another state directory", func(t *testing.T) {
		e.up(t, l, "nic")
		other := t.TempDir()
		out, errOut, code := e.runIn(t, other, "down", l.name)
		if code != 0 || !strings.Contains(out, "is not up") {
			t.Errorf("down under %s: exit %d, %s%s", other, code, out, errOut)
		}
		if st := e.mustRun(t, "status", l.name); !strings.Contains(st, "up") || strings.Contains(st, "dead") {
			t.Errorf("the lab after a down under another state directory:\n%s", st)
		}
		e.ping(t, l, "h1", "h2")
		e.down(t, l, nil)
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
