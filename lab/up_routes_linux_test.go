package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpSwitchDiesWhileRoutesConverge: two linked switches print ready
// and exit a few seconds later, while up waits for their link-state
// routing to converge (these never answer their control sockets). Up
// fails naming the switch, as it does for one that exits while the
// others get ready; it asked the dead switch's socket until the ready
// timeout and then said the lab was up, with a warning.
func TestUpSwitchDiesWhileRoutesConverge(t *testing.T) {
	SkipUnlessRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "two-switches.yaml")
	if err := os.WriteFile(file, []byte(`name: routes
topology:
  nodes:
    s1: {kind: switch}
    s2: {kind: switch}
  links:
    - endpoints: ["s1:p1", "s2:p1"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := LoadUnique(t, file)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, SwitchBinary), []byte("#!/bin/sh\necho ready\nsleep 3\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var progress strings.Builder
	l, err := Up(context.Background(), spec, UpOptions{StateRoot: root, BinDir: bin, ReadyTimeout: time.Minute, Grace: 100 * time.Millisecond, Progress: &progress})
	if err == nil {
		l.Down()
		t.Fatalf("Up succeeded with both switches dead:\n%s", progress.String())
	}
	if !strings.Contains(err.Error(), "exited after it was ready, while the lab came up (exit status 3)") {
		t.Errorf("error: %v\nprogress:\n%s", err, progress.String())
	}
	upCheckGone(t, root, spec)
}
