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
