package daemontest

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// RequiredFlagsMatchUsage checks that the flags a daemon's usage calls
// required ("--a, --b and --c are required") are the ones run refuses to
// go without, and no others: the usage once listed flags the daemons ran
// without. allFlags are flag/value pairs for a run that fails only after
// its check of required flags (a lab file that does not exist), in the
// usage's order; each run leaves one pair out.
func RequiredFlagsMatchUsage(t *testing.T, run func(args []string, stdout io.Writer) error, allFlags [][]string) {
	t.Helper()
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
		var args []string
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
