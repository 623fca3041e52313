package lab

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecUnedited: a Spec as Load made it, also after the methods that
// fill its caches ran, is what its text says; one changed in memory is
// not, and the error names the field.
func TestSpecUnedited(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sw := range s.Switches() {
			s.RoutesOf(sw)
			if s.Fabric == FabricIB {
				s.LFTOf(sw)
			}
		}
		if err := s.checkUnedited(); err != nil {
			t.Errorf("%s as loaded: %v", f, err)
		}
	}

	for _, c := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Links[0].Loss = 0.01 }, "(Links[0].LinkParams.Loss: 0.01, the text says 0)"},
		{func(s *Spec) { s.Links[1].MTU = 1500 }, "(Links[1].LinkParams.MTU: 1500, the text says 4200)"},
		{func(s *Spec) { s.Name = "pa-renamed" }, "(Name: pa-renamed, the text says two-hosts)"},
		{func(s *Spec) { s.Traffic = nil }, "(Traffic: 0 entries, the text has 1)"},
	} {
		s, err := Load("../examples/two-hosts.yaml")
		if err != nil {
			t.Fatal(err)
		}
		c.edit(s)
		err = s.checkUnedited()
		if err == nil || !strings.Contains(err.Error(), "was changed after it was parsed "+c.want) || !strings.Contains(err.Error(), "change the YAML text and Parse it") {
			t.Errorf("want %q: %v", c.want, err)
		}
	}
}
