package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHelp: -h prints the usage, with its examples, on stdout and is not
// an error (the daemon exits 0).
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var out bytes.Buffer
		err := run([]string{arg}, &out)
		if !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("%s: %v, want pflag.ErrHelp (main exits 0 on it)", arg, err)
		}
		for _, want := range []string{"Usage:", "are required", "Example", "--control"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: usage lacks %q:\n%s", arg, want, out.String())
			}
		}
	}
}

// TestUsageRequiredIsRequired: the flags the usage calls required are the
// ones run refuses to go without, and no others: the usage once listed
// flags the daemon ran without.
func TestUsageRequiredIsRequired(t *testing.T) {
	var out bytes.Buffer
	_ = run([]string{"-h"}, &out)
	usage := out.String()
	i := strings.Index(usage, " are required")
	if i < 0 {
		t.Fatalf("usage names no required flags:\n%s", usage)
	}
	line := usage[strings.LastIndex(usage[:i], "\n")+1 : i]
	named := strings.FieldsFunc(strings.ReplaceAll(line, " and ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	var required []string
	for _, f := range allFlags {
		args := []string{}
		for _, g := range allFlags {
			if g[0] != f[0] {
				args = append(args, g...)
			}
		}
		if err := run(args, &bytes.Buffer{}); err != nil && strings.Contains(err.Error(), f[0]+" is required") {
			required = append(required, f[0])
		}
	}
	if strings.Join(named, " ") != strings.Join(required, " ") {
		t.Errorf("usage says %q are required; run requires %q", named, required)
	}
}

// allFlags are flags for a run that fails after the check of required
// flags (the lab file does not exist), in the usage's order.
var allFlags = [][]string{{"--lab", "/nonexistent/lab.yaml"}, {"--node", "sw1"}, {"--control", "/nonexistent/ctl.sock"}, {"--port", "p1=udp:127.0.0.1:1,127.0.0.1:2"}}
