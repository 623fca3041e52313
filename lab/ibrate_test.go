package lab

import (
	"strings"
	"testing"
)

// TestIBRateWarned: a rate no IB port reports is warned about where it is
// written, and the rates the ports do report are not.
func TestIBRateWarned(t *testing.T) {
	const y = `name: ib
fabric: ib
topology:
  defaults: {rate: RATE}
  nodes:
    sw: {kind: switch}
    a: {kind: nic}
    b: {kind: nic}
  links:
    - endpoints: [a:ib0, sw:p1]
    - {endpoints: [b:ib0, sw:p2], rate: 56G}
`
	for _, c := range []struct{ rate, want string }{
		{"37G", "ib.yaml:4: topology.defaults.rate: 37G is not a rate an InfiniBand port reports: the subnet manager, ibstat (emulab ib ports) and ibnetdiscover show Rate 20, the 4X link below it, while packets go at 37G"},
		{"400G", "ib.yaml:4: topology.defaults.rate: 400G is not a rate an InfiniBand port reports"},
		{"100G", ""},
		{"2.5G", ""},
		{"40G", ""},
	} {
		s, err := Parse("ib.yaml", []byte(strings.Replace(y, "RATE", c.rate, 1)))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(s.Warnings) != 0:
			t.Errorf("%s: warnings %v", c.rate, s.Warnings)
		case c.want != "" && (len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0].Error(), c.want)):
			t.Errorf("%s: warnings %v, want one starting %q", c.rate, s.Warnings, c.want)
		}
	}
}
