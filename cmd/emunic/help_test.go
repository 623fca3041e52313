package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/emufabric/emufabric/internal/daemontest"
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
// ones run refuses to go without, and no others.
func TestUsageRequiredIsRequired(t *testing.T) {
	daemontest.RequiredFlagsMatchUsage(t, run, allFlags)
}

// allFlags are flags for a run that fails after the check of required
// flags (the lab file does not exist), in the usage's order.
var allFlags = [][]string{{"--lab", "/nonexistent/lab.yaml"}, {"--node", "h1"}, {"--tap", "eth0@x"}, {"--port", "udp:127.0.0.1:1,127.0.0.1:2"}, {"--control", "/nonexistent/ctl.sock"}}
