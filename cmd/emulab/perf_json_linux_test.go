package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritePerfJSONFileLeavesNoTemp: the document goes through FILE.tmp,
// which is gone whether the rename over FILE worked or not (here FILE is
// a directory, which rename(2) refuses to replace with a file).
func TestWritePerfJSONFileLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "r.json")
	if err := writePerfJSONFile(good, perfJSONInfo{Test: "RDMA_Write BW Test"}, []any{bwResultJSON(bwRow{Size: 8, Iters: 1}, false)}); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "d.json")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writePerfJSONFile(bad, perfJSONInfo{Test: "RDMA_Write BW Test"}, []any{bwResultJSON(bwRow{Size: 8, Iters: 1}, false)}); err == nil {
		t.Fatal("a file written over a directory: no error")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := os.Stat(good); err != nil {
		t.Error(err)
	}
}
