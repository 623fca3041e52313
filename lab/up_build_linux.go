package lab

import (
	"os"
	"path/filepath"
	"sync"
)

// The test helpers build the daemons with `go build` by import path,
// from the working directory: `go test` runs a test in its package's
// directory, whose module is this one or a module that requires it (a
// user's integration tests), and either resolves the import paths to the
// version of the daemons that matches the lab package the test links. A
// test process builds them once, into its directory under the test root
// (see processDir), which outlives it until the next Start sweeps it.

// daemonPackages are the daemons every lab may need.
var daemonPackages = []string{modulePath + "/cmd/" + SwitchBinary, modulePath + "/cmd/" + NICBinary}

// emulabPackage is the CLI, which only tests of the CLI need.
const emulabPackage = modulePath + "/cmd/emulab"

// buildAdvice follows a failed build in Start's message.
const buildAdvice = `Set UpOptions.BinDir to a directory that holds emuswitch and emunic
(go build -o DIR/ ` + modulePath + `/cmd/emuswitch ` + modulePath + `/cmd/emunic),
or put them on PATH. In a module that requires ` + modulePath + `, a build that
misses go.sum entries works after
  ` + goGetTool

// goGetTool records in a user's module what BuildDaemons builds (the
// daemons and emulab, whose command-line library the daemons do not
// need): docs/testing.md gives the same line.
const goGetTool = `go get -tool ` + modulePath + `/cmd/emuswitch ` + modulePath + `/cmd/emunic ` + emulabPackage

// builds holds the result of each build of this process.
var builds struct {
	daemons, emulab struct {
		once sync.Once
		err  error
	}
}

// testBinDir is the directory the helpers build into.
func testBinDir() (string, error) {
	dir, err := processDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin")
	return bin, os.MkdirAll(bin, 0o700)
}

// testDaemons builds emuswitch and emunic, once per process, and returns
// their directory.
func testDaemons() (string, error) {
	bin, err := testBinDir()
	if err != nil {
		return "", err
	}
	b := &builds.daemons
	b.once.Do(func() { b.err = goBuild("", bin, daemonPackages...) })
	return bin, b.err
}

// BuildDaemons builds emuswitch, emunic and emulab (for tests of the
// CLI) by import path, in the module of the working directory, and
// returns their directory; a build failure fails the test. Each binary
// is built once per test process, into its directory under the test
// root (see Start), which the first Start of a later test process removes.
// Start builds only the daemons, and only when UpOptions.BinDir is "".
func BuildDaemons(t TB) string {
	t.Helper()
	bin, err := testDaemons()
	if err != nil {
		t.Fatalf("%v\n%s", err, buildAdvice)
	}
	b := &builds.emulab
	b.once.Do(func() { b.err = goBuild("", bin, emulabPackage) })
	if b.err != nil {
		// The daemons built, so go.sum has theirs: what it misses is
		// emulab's own (its command-line library).
		t.Fatalf("%v\nIn a module that requires %s, a build that misses go.sum entries works after\n  %s", b.err, modulePath, goGetTool)
	}
	return bin
}
