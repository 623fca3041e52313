package lab

import (
	"strings"
	"testing"
)

// TestHeadroomWarningOnce: a profile whose headroom is short on many
// ports is one warning naming them all, not one line per port.
func TestHeadroomWarningOnce(t *testing.T) {
	spec, err := Parse("t.yaml", []byte(strings.Replace(base, "delay: 1us", "delay: 50us", 1)))
	if err != nil {
		t.Fatal(err)
	}
	var xoff []string
	for _, w := range spec.Warnings {
		if strings.Contains(w.Error(), "headroom may overflow") {
			xoff = append(xoff, w.Error())
		}
	}
	if len(xoff) != 1 || !strings.Contains(xoff[0], "sw1:p1, sw1:p2") {
		t.Errorf("headroom warnings %q, want one naming sw1:p1 and sw1:p2", xoff)
	}
}
