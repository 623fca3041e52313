package lab

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUniqueNames: LoadUnique and Unique give a lab its `name:` (not
// the file's name; shortened to leave room) and a random base-36 suffix,
// within the name length limit; no two calls of the process get the
// same name, and a drawn name whose namespaces exist is drawn again.
func TestUniqueNames(t *testing.T) {
	re := regexp.MustCompile(`^two-hosts-[0-9a-z]{5}$`)
	seen := map[string]bool{}
	for range 50 {
		s := LoadUnique(t, "../examples/two-hosts.yaml")
		if !re.MatchString(s.Name) || seen[s.Name] {
			t.Fatalf("LoadUnique named the lab %q (seen before: %v)", s.Name, seen[s.Name])
		}
		seen[s.Name] = true
	}

	src, err := os.ReadFile("../examples/two-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if s := LoadUnique(t, other); !re.MatchString(s.Name) || filepath.Base(s.File) != "other.yaml" {
		t.Errorf("LoadUnique of other.yaml (name: two-hosts): lab %q from %s", s.Name, s.File)
	}

	long := strings.Replace(string(src), "name: two-hosts", "name: abcdefghijklmno", 1)
	spec, err := Parse("inline.yaml", []byte(long))
	if err != nil {
		t.Fatal(err)
	}
	u := Unique(t, spec)
	if !regexp.MustCompile(`^abcdefghi-[0-9a-z]{5}$`).MatchString(u.Name) || u.File != "inline.yaml" || spec.Name != "abcdefghijklmno" {
		t.Errorf("Unique: %q from %s; the caller's spec is now %q", u.Name, u.File, spec.Name)
	}
	if !strings.Contains(string(u.source), "name: "+u.Name+"\n") {
		t.Errorf("Unique's text does not carry its name %s:\n%s", u.Name, u.source)
	}

	// Draws that collide are drawn again: with a name this process
	// handed out, and (as root) with a namespace that exists.
	base := "u" + drawSuffix()
	draws := func(s ...string) func() string {
		return func() string { d := s[0]; s = s[1:]; return d }
	}
	nodes := []*Node{{Name: "h1"}}
	if n, err := uniqueName(base, nodes, draws("aaaaa")); err != nil || n != base+"-aaaaa" {
		t.Fatalf("uniqueName: %q, %v", n, err)
	}
	if n, err := uniqueName(base, nodes, draws("aaaaa", "bbbbb")); err != nil || n != base+"-bbbbb" {
		t.Errorf("uniqueName after a name handed out: %q, %v", n, err)
	}
	if os.Geteuid() != 0 {
		return
	}
	ns, err := CreateNamespace(NamespacePrefix + base + "-ccccc-h1")
	if err != nil {
		t.Fatal(err)
	}
	ns.Close()
	defer DeleteNamespace(NamespacePrefix + base + "-ccccc-h1")
	if n, err := uniqueName(base, nodes, draws("ccccc", "ddddd")); err != nil || n != base+"-ddddd" {
		t.Errorf("uniqueName with a namespace of the name: %q, %v", n, err)
	}
}
