package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A daemon whose ready line never came, on a full filesystem: the error
// says the disk is full, not only that the daemon is not ready.
func TestDiskFullNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tiny tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	log := filepath.Join(dir, "emuswitch-sw1.log")
	if got := diskFull(log); got != "" {
		t.Fatalf("empty tmpfs: diskFull = %q, want nothing", got)
	}
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			break
		}
		if i > 1000 {
			t.Fatal("a 16k tmpfs took 4 MB")
		}
	}
	if got := diskFull(log); !strings.Contains(got, "is full") {
		t.Errorf("full tmpfs: diskFull = %q, want it to say the filesystem is full", got)
	}
}
