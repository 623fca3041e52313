package lab

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Namespaces are global to the machine, so labs of tests that run at the
// same time need distinct names: LoadUnique and Unique rename a lab to
// NAME-XXXXX, five random base-36 characters. A pid would not do: test
// processes in different PID namespaces (containers sharing /run/netns)
// have the same pids, and a pid comes back once its process is gone.

// uniqueSuffixLen is the length of the random part: 36^5, 60 million
// names, so two pending labs practically never draw the same one, and a
// name this process handed out or whose namespaces exist is drawn again.
const uniqueSuffixLen = 5

// uniqueSpace is 36^uniqueSuffixLen.
const uniqueSpace = 36 * 36 * 36 * 36 * 36

// uniqueDraws bounds the draws of one name: a collision is rare, a
// hundred in a row is something else (namespaces that cannot be listed).
const uniqueDraws = 100

// handedOut holds the names this process gave out: two calls never get
// the same one, even before either lab is up.
var handedOut struct {
	sync.Mutex
	names map[string]bool
}

var topNameRE = regexp.MustCompile(`(?m)^name:[ \t]*["']?([A-Za-z0-9_-]+)["']?[ \t]*(#.*)?$`)

// LoadUnique loads the lab file at path under a name unique to this call
// (the lab's `name:`, not the file's, shortened to leave room, and a
// random suffix), from a copy in the test process's directory (see
// Start): labs of tests that run at the same time, in one process or
// several, never share a namespace name. The copy keeps the file's base
// name, so errors still name it.
func LoadUnique(t TB, path string) *Spec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	spec, err := Parse(path, b)
	if err != nil {
		t.Fatalf("%v", err)
	}
	nb, name, err := renameSource(spec, b)
	if err != nil {
		t.Fatalf("%v", err)
	}
	dir, err := processSubdir("f")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cp := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(cp, nb, 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	u, err := Load(cp)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if u.Name != name {
		t.Fatalf("%s: renamed lab %q to %q but it loaded as %q", path, spec.Name, name, u.Name)
	}
	return u
}

// Unique is LoadUnique for a spec at hand, from Parse or Load: the same
// lab under a name unique to this call, parsed again from its text with
// the name changed. spec itself is not changed. Start writes the renamed
// text to a file for the daemons.
//
//	spec, err := lab.Parse("inline.yaml", []byte(text))
//	...
//	l := lab.Start(t, lab.Unique(t, spec))
func Unique(t TB, spec *Spec) *Spec {
	t.Helper()
	if spec == nil {
		t.Fatalf("lab.Unique: nil spec")
	}
	if err := spec.checkUnedited(); err != nil {
		t.Fatalf("lab.Unique: %v", err)
	}
	nb, name, err := renameSource(spec, spec.source)
	if err != nil {
		t.Fatalf("lab.Unique: %v", err)
	}
	u, err := Parse(spec.File, nb)
	if err != nil {
		t.Fatalf("lab.Unique: %v", err)
	}
	if u.Name != name {
		t.Fatalf("lab.Unique: %s: renamed lab %q to %q but it parsed as %q", spec.File, spec.Name, name, u.Name)
	}
	return u
}

// renameSource rewrites the top-level `name:` line of the lab text src,
// which parsed as spec, to a unique name, and returns the new text and
// name.
func renameSource(spec *Spec, src []byte) ([]byte, string, error) {
	m := topNameRE.FindSubmatchIndex(src)
	if m == nil {
		return nil, "", fmt.Errorf("%s: no top-level `name:` line to make unique", spec.File)
	}
	name, err := uniqueName(string(src[m[2]:m[3]]), spec.Nodes, drawSuffix)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", spec.File, err)
	}
	nb := append(append(append([]byte(nil), src[:m[2]]...), name...), src[m[3]:]...)
	return nb, name, nil
}

// uniqueName is base, shortened to leave room, with a suffix from draw
// that no earlier call used and that names no existing namespace of
// nodes.
func uniqueName(base string, nodes []*Node, draw func() string) (string, error) {
	if keep := MaxNameLen - 1 - uniqueSuffixLen; len(base) > keep {
		base = base[:keep]
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.names == nil {
		handedOut.names = map[string]bool{}
	}
	for range uniqueDraws {
		name := base + "-" + draw()
		if handedOut.names[name] || namespacesExist(name, nodes) {
			continue
		}
		handedOut.names[name] = true
		return name, nil
	}
	return "", fmt.Errorf("no unique name for lab %s in %d draws", base, uniqueDraws)
}

// namespacesExist reports whether any node of lab name has a namespace.
func namespacesExist(name string, nodes []*Node) bool {
	for _, n := range nodes {
		if ns, err := NamespaceName(name, n.Name); err == nil && NamespaceExists(ns) {
			return true
		}
	}
	return false
}

// drawSuffix is uniqueSuffixLen random base-36 characters from
// crypto/rand (a 64-bit draw reduced mod 36^5: the bias is 2^-38).
func drawSuffix() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand.Read does not fail (Go 1.24)
	}
	s := strconv.FormatUint(binary.LittleEndian.Uint64(b[:])%uniqueSpace, 36)
	return strings.Repeat("0", uniqueSuffixLen-len(s)) + s
}
