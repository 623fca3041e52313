package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrBinaryNotFound means a daemon binary (emuswitch, emunic) was not
// found.
var ErrBinaryNotFound = errors.New("binary not found")

// FindBinary locates a daemon binary: in binDir when it is given (and
// nowhere else), otherwise next to the running executable (where
// `go build -o bin/ ./cmd/...` puts every command), then on PATH. The
// result is an absolute path. `go run ./cmd/emulab` runs a binary from a
// temporary build directory with nothing beside it: Up then builds the
// daemons from the checkout (BuildFromSource) unless they are on PATH.
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

// modulePath is this module's path: BuildFromSource builds the daemons only
// from a checkout of this module, never from whatever go.mod is nearby.
const modulePath = "github.com/emufabric/emufabric"

// BuildFromSource builds the daemons (emuswitch, emunic) from the module
// checkout that holds the working directory, into the user's cache
// directory, and returns that directory for UpOptions.BinDir. It is the
// fallback of `go run ./cmd/emulab ...`, whose binary lives in a temporary
// directory with no daemons beside it. say reports progress (a build takes
// seconds the first time).
func BuildFromSource(say func(string, ...any)) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("building the daemons from source: %w", err)
	}
	dir := filepath.Join(cache, "emufabric", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("building the daemons from source: %w", err)
	}
	pkgs := []string{"./cmd/" + SwitchBinary, "./cmd/" + NICBinary}
	say("building %s and %s from %s into %s", SwitchBinary, NICBinary, root, dir)
	if err := goBuild(root, dir, pkgs...); err != nil {
		return "", fmt.Errorf("building the daemons from source: %w", err)
	}
	return dir, nil
}

// goCommand finds the go command: on PATH, else in the GOROOT of the
// toolchain that built this binary (sudo's secure_path often lacks Go).
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if isExecutable(p) != nil {
		return "", fmt.Errorf("the go command is neither on PATH nor in %s", runtime.GOROOT())
	}
	return p, nil
}

// goBuild builds pkgs of the module at root ("" the working directory's)
// into dir.
func goBuild(root, dir string, pkgs ...string) error {
	goTool, err := goCommand()
	if err != nil {
		return err
	}
	cmd := exec.Command(goTool, append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// ModuleRoot walks up from the working directory to the go.mod of this
// module: the checkout emulab runs from under `go run`.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == modulePath {
					return d, nil
				}
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("the daemons are not built and %s is not inside a checkout of %s: build them with `go build -o bin/ ./cmd/...` and run bin/emulab, or pass --bin-dir", wd, modulePath)
		}
	}
}
