package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWritePerfJSONFileLeavesNoTemp: a file written, and one that cannot
// be (here a directory), leave no temporary file beside them.
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
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := os.Stat(good); err != nil {
		t.Error(err)
	}
}

// TestWritePerfJSONFileKeepsWhatIsThere: the atomic rename is for regular
// files only. A second write keeps the file's permissions; a symbolic
// link's target is written and the link stays; a FIFO (as /dev/null, a
// character device, which a rename as root replaced by a regular file)
// is written in place and stays what it is.
func TestWritePerfJSONFileKeepsWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	info, res := perfJSONInfo{Test: "RDMA_Write BW Test"}, []any{bwResultJSON(bwRow{Size: 8, Iters: 1}, false)}

	reg := filepath.Join(dir, "r.json")
	if err := writePerfJSONFile(reg, info, res); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(reg, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := writePerfJSONFile(reg, info, res); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(reg); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("rewritten regular file: %v, %v; want mode 0640 kept", fi.Mode(), err)
	}

	link := filepath.Join(dir, "l.json")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reg, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := writePerfJSONFile(link, info, res); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("a symbolic link written through: %v, %v; want the link kept", fi.Mode(), err)
	}
	if b, err := os.ReadFile(reg); err != nil || len(b) == 0 {
		t.Errorf("the link's target after the write: %d bytes, %v", len(b), err)
	}

	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- len(b)
	}()
	if err := writePerfJSONFile(fifo, info, res); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n == 0 {
		t.Error("nothing came out of the FIFO")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO after the write: %v, %v; want it still a FIFO", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestCheckJSONDirRefusesDirectory: --out_json_file naming a directory is
// refused before the run, not after minutes of it.
func TestCheckJSONDirRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := checkJSONDir(dir); err == nil {
		t.Errorf("--out_json_file %s (a directory): no error", dir)
	}
	if err := checkJSONDir(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("a new file in a directory: %v", err)
	}
}
