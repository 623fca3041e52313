package cpuprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStart: the profile is written when stop runs; a path that cannot be
// created is an error naming the flag.
func TestStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := Start(p)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %v %v", fi, err)
	}
	if _, err := Start(filepath.Join(t.TempDir(), "no", "such", "dir", "p")); err == nil || !strings.HasPrefix(err.Error(), "--cpuprofile ") {
		t.Errorf("bad path: %v", err)
	}
}
