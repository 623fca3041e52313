package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStartFromAnotherModule: lab.Start works in the tests of a module
// that requires this one, as a user's integration tests do: the daemons
// are built by import path in that module (there is no checkout of this
// one to build from), and the lab comes up with emunic hosts.
func TestStartFromAnotherModule(t *testing.T) {
	SkipUnlessRoot(t)
	if testing.Short() {
		t.Skip("runs go test in a module of its own (-short)")
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The user's go.mod: this module, replaced by the checkout, and its
	// requirements (what `go mod tidy` would list); its go.sum is ours.
	var b strings.Builder
	b.WriteString("module example.com/usertest\n\n")
	inReq := false
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "go":
			b.WriteString(line + "\n\nrequire " + modulePath + " v0.0.0\n\nrequire (\n")
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			inReq = true
		case len(f) == 1 && f[0] == ")":
			inReq = false
		case inReq && len(f) >= 2:
			b.WriteString("\t" + f[0] + " " + f[1] + " // indirect\n")
		}
	}
	b.WriteString(")\n\nreplace " + modulePath + " => " + root + "\n")
	mod := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	test := `package usertest

import (
	"testing"

	"` + modulePath + `/lab"
)

func TestLab(t *testing.T) {
	l := lab.Start(t, lab.LoadUnique(t, ` + "`" + filepath.Join(root, "examples", "two-hosts.yaml") + "`" + `))
	if out, err := l.Exec("h1", "ping", "-c", "1", "-w", "10", "10.0.0.2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l.Info.Hosts != lab.HostsNIC {
		t.Errorf("hosts %s", l.Info.Hosts)
	}
}
`
	for name, data := range map[string][]byte{"go.mod": []byte(b.String()), "go.sum": sum, "lab_test.go": []byte(test)} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	goTool, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "test", "-count=1", "-v", ".")
	cmd.Dir = mod
	out, err := cmd.CombinedOutput()
	// The user's test process is gone: its directory goes too (the
	// daemons it built are tens of MB).
	if m := regexp.MustCompile("--state-dir (\\S+)/s[0-9]+ ").FindSubmatch(out); m != nil {
		if err := sweepProcessDir(string(m[1]), t.Logf); err != nil {
			t.Error(err)
		}
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLab") {
		t.Fatalf("go test in a module that requires this one: %v\n%s", err, out)
	}
}

// TestGoGetToolLine: the `go get -tool` line that docs/testing.md and
// the build failures give records every package BuildDaemons builds; a
// line without emulab leaves a user's BuildDaemons failing on go.sum
// entries after they ran it.
func TestGoGetToolLine(t *testing.T) {
	doc, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.Contains(l, "go get -tool") {
			line = strings.TrimSpace(l)
		}
	}
	if line != goGetTool {
		t.Errorf("docs/testing.md gives\n  %s\nthe build failures\n  %s", line, goGetTool)
	}
	for _, pkg := range append(append([]string(nil), daemonPackages...), emulabPackage) {
		if !strings.Contains(goGetTool+" ", " "+pkg+" ") {
			t.Errorf("%q does not record %s, which BuildDaemons builds", goGetTool, pkg)
		}
	}
}
