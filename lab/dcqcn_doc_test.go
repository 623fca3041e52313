package lab

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/cc"
)

// TestDCQCNDocDefaults keeps the dcqcn table of docs/lab-file.md true to
// the profiles: every knob the decoder takes has a row, and the row's
// nvidia and paper columns are the profiles' values.
func TestDCQCNDocDefaults(t *testing.T) {
	data, err := os.ReadFile("../docs/lab-file.md")
	if err != nil {
		t.Fatal(err)
	}
	profiles := []cc.DCQCN{cc.NVIDIAProfile(), cc.PaperProfile()}
	seen := make(map[string]bool)
	for _, line := range strings.Split(string(data), "\n") {
		cols := strings.Split(line, " | ")
		if len(cols) != 5 || !strings.HasPrefix(cols[0], "| `") {
			continue
		}
		var keys []string
		for _, k := range strings.Split(strings.TrimPrefix(cols[0], "| "), ", ") {
			keys = append(keys, strings.Trim(k, "`"))
		}
		if _, ok := dcqcnKnobs[keys[0]]; !ok {
			continue
		}
		for pi, col := range cols[2:4] {
			vals := strings.Split(col, ", ")
			if len(vals) != len(keys) {
				t.Errorf("%s: %d values %q for %d keys", cols[0], len(vals), col, len(keys))
				continue
			}
			for i, k := range keys {
				seen[k] = true
				fv := reflect.ValueOf(profiles[pi]).Field(dcqcnKnobs[k])
				if got := fmt.Sprint(fv.Interface()); got != vals[i] {
					t.Errorf("docs/lab-file.md: %s is %s in the %s column, the profile has %s", k, vals[i], []string{"nvidia", "paper"}[pi], got)
				}
			}
		}
	}
	for k := range dcqcnKnobs {
		if !seen[k] {
			t.Errorf("docs/lab-file.md: dcqcn knob %s has no row with its defaults", k)
		}
	}
}
