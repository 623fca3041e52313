package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrBinaryNotFound means a daemon binary (emuswitch, emunic) was not
// found.
var ErrBinaryNotFound = errors.New("binary not found")

// FindBinary locates a daemon binary: in binDir when it is given (and
// nowhere else), otherwise next to the running executable (where
// `go build -o bin/ ./cmd/...` puts every command), then on PATH. The
// result is an absolute path. `go run ./cmd/emulab` runs a binary from a
// temporary build directory, so its users pass --bin-dir or put the
// daemons on PATH.
func FindBinary(name, binDir string) (string, error) {
	if binDir != "" {
		p := filepath.Join(binDir, name)
		if err := isExecutable(p); err != nil {
			return "", fmt.Errorf("%s: %w (--bin-dir %s)", p, ErrBinaryNotFound, binDir)
		}
		return filepath.Abs(p)
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		if exe, err := filepath.EvalSymlinks(exe); err == nil {
			p := filepath.Join(filepath.Dir(exe), name)
			if isExecutable(p) == nil {
				return p, nil
			}
			tried = append(tried, filepath.Dir(exe))
		}
	}
	p, err := exec.LookPath(name)
	if err == nil {
		return filepath.Abs(p)
	}
	tried = append(tried, "PATH")
	return "", fmt.Errorf("%s: %w (looked in %v); build the commands with `go build -o bin/ ./cmd/...` and run bin/emulab, or pass --bin-dir", name, ErrBinaryNotFound, tried)
}

func isExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}
