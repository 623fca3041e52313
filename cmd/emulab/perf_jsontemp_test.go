package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPerfTempRemovedOnInterrupt: the interrupt handler removes the
// temporary file a save is filling (os.Exit runs no deferred Remove) and
// no later save creates or renames one.
func TestPerfTempRemovedOnInterrupt(t *testing.T) {
	t.Cleanup(func() {
		perfTemp.name, perfTemp.interrupted = "", false
		perfTemp.Unlock() // the handler keeps it until the process exits
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := createPerfTemp(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := f.Name()
	f.Close()
	removePerfTempOnInterrupt()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary file %s after the interrupt: %v", tmp, err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}\n" {
		t.Errorf("the result file changed: %q, %v", b, err)
	}
	perfTemp.Unlock() // as if the writer got there after the handler
	if _, err := createPerfTemp(path); err != errPerfInterrupted {
		t.Errorf("a new temporary file after the interrupt: err %v", err)
	}
	if err := renamePerfTemp(tmp, path); err != errPerfInterrupted {
		t.Errorf("a rename after the interrupt: err %v", err)
	}
	perfTemp.Lock()
}
