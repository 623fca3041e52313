package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCheckCmd runs "emulab check ARGS" with its flags at their defaults.
func runCheckCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSubcommand(t, "check", args...)
}

// TestCheck: a good file is summarised as up would build it; a file with
// problems gets them by line and exit status 2, and the other files are
// still checked; a lab up would refuse (two NICs linked directly with
// --hosts tap) is a problem too.
func TestCheck(t *testing.T) {
	good := filepath.Join("..", "..", "examples", "leaf-spine.yaml")
	out, errOut, err := runCheckCmd(t, good)
	if err != nil {
		t.Fatalf("check %s: %v\n%s", good, err, errOut)
	}
	for _, want := range []string{"lab leaf-spine, RoCE fabric: 6 switches, 16 hosts, 24 links, 16 flows",
		"up --hosts nic: 22 namespaces (emu-leaf-spine-spine1 emu-leaf-spine-spine2 ... emu-leaf-spine-h16), 6 emuswitch, 16 emunic",
		"not flooding (outside the spanning tree): spine2:p2-p4 leaf2:p6 leaf3:p6 leaf4:p6\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCheckCmd(t, "--hosts", "tap", filepath.Join("..", "..", "examples", "two-hosts.yaml"))
	if err != nil || !strings.Contains(out, "up --hosts tap: 3 namespaces") || !strings.Contains(out, "1 emuswitch, 2 hosts as TAP ports") {
		t.Errorf("--hosts tap: %v\n%s", err, out)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`name: bad
topology:
  nodes:
    sw1: {kind: switch}
    h1: {kind: nicc}
  links:
    - endpoints: ["h1:eth0", "sw1:p1"]
`), 0o644)
	direct := filepath.Join(dir, "direct.yaml")
	os.WriteFile(direct, []byte(`name: direct
topology:
  nodes:
    h1: {kind: nic}
    h2: {kind: nic}
  links:
    - endpoints: ["h1:eth0", "h2:eth0"]
`), 0o644)
	out, errOut, err = runCheckCmd(t, "--hosts", "tap", bad, good, direct)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitBadLabFile || !strings.Contains(err.Error(), "2 of 3 lab file(s) have problems") {
		t.Fatalf("bad files: %v", err)
	}
	for _, want := range []string{bad + ":5: topology.nodes.h1.kind", direct + ":4: topology.nodes.h1: h1:eth0-h2:eth0 links two NICs directly", "(emulab up --hosts tap)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "lab leaf-spine") {
		t.Errorf("the good file between two bad ones was not checked:\n%s", out)
	}
	if _, _, err := runCheckCmd(t, "--hosts", "vm", good); err == nil || !strings.Contains(err.Error(), "--hosts") {
		t.Errorf("--hosts vm: %v", err)
	}
	// --state-dir, which every other subcommand takes, is accepted and
	// changes nothing (check reads no lab state).
	withState, _, err := runCheckCmd(t, "--state-dir", filepath.Join(dir, "nonexistent"), good)
	if err != nil {
		t.Errorf("check --state-dir: %v", err)
	}
	if plain, _, _ := runCheckCmd(t, good); withState != plain {
		t.Errorf("check --state-dir printed\n%s\nwithout it\n%s", withState, plain)
	}
}
