package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a lab leaves behind when its state.json is lost or damaged (removed
// by hand, a disk that filled): Teardown must still remove it, or the
// namespaces and daemons stay until someone deletes them one by one, and
// the next `up` is refused because they exist. recoverLeftovers adds to
// the record what the rest of the state directory and the system still
// show.

// recoverLeftovers adds to s's record, without saving it:
//   - the namespaces of up.json's nodes when up.json is readable; else,
//     only when the record names no namespace at all, those under
//     /run/netns named NamespacePrefix+lab+"-..." whose lo carries this
//     state directory's mark (MarkOwner: lab w2-x's emu-w2-x-h1 is not
//     lab w2's, a lab of the same name under another state directory is
//     not this one, and a namespace someone made by hand has no mark);
//   - the daemons of run/*.pid whose command line names this state
//     directory (a pid reused by another program does not);
//   - the files under sock/.
//
// It returns how many namespaces and processes it added.
func (s *State) recoverLeftovers() (namespaces, procs int) {
	s.mu.Lock()
	have := len(s.rec.Namespaces)
	s.mu.Unlock()
	var found []string
	if info, err := readUpInfo(s.Root, s.Lab); err == nil {
		for _, n := range info.Nodes {
			found = append(found, n.Namespace)
		}
	} else if have == 0 {
		found = prefixNamespaces(s.Root, s.Lab)
	}
	own := filepath.Join(absRoot(s.Root), s.Lab)
	for _, ns := range found {
		if nsCheckFileName(ns) != nil || !NamespaceExists(ns) {
			continue
		}
		if o := namespaceOwner(ns); o != "" && o != own {
			continue // another lab's, of the same name (Teardown)
		}
		s.mu.Lock()
		if !slices.Contains(s.rec.Namespaces, ns) {
			s.rec.Namespaces = append(s.rec.Namespaces, ns)
			namespaces++
		}
		s.mu.Unlock()
	}

	pidfiles, _ := filepath.Glob(filepath.Join(s.Dir, "run", "*.pid"))
	for _, pf := range pidfiles {
		b, err := os.ReadFile(pf)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(pf), ".pid")
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 || !isLabDaemon(pid, name, s.Dir) {
			continue
		}
		start, err := nsStartTime(pid)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if !slices.ContainsFunc(s.rec.Procs, func(p nsProcEntry) bool { return p.Pid == pid }) {
			s.rec.Procs = append(s.rec.Procs, nsProcEntry{Name: name, Pid: pid, StartTime: start})
			procs++
		}
		s.mu.Unlock()
	}

	socks, _ := filepath.Glob(filepath.Join(s.Dir, "sock", "*"))
	s.mu.Lock()
	for _, p := range socks {
		if !slices.Contains(s.rec.Sockets, p) {
			s.rec.Sockets = append(s.rec.Sockets, p)
		}
	}
	s.mu.Unlock()
	return namespaces, procs
}

// prefixNamespaces lists the namespaces named after lab under /run/netns
// that up marked as this lab's under root (MarkOwner).
func prefixNamespaces(root, lab string) []string {
	ents, err := os.ReadDir(NetnsDir)
	if err != nil {
		return nil
	}
	prefix := NamespacePrefix + lab + "-"
	dir := filepath.Join(absRoot(root), lab)
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, prefix) && len(n) > len(prefix) && namespaceOwner(n) == dir {
			out = append(out, n)
		}
	}
	return out
}

// LeftoverNamespaces lists the namespaces a lab without a state directory
// under root left behind (see recoverLeftovers): `down` removes them.
func LeftoverNamespaces(root, lab string) []string {
	if root == "" {
		root = DefaultStateRoot
	}
	if checkName(lab) != nil {
		return nil
	}
	return prefixNamespaces(root, lab)
}

// isLabDaemon reports whether pid is the daemon a pidfile called name
// (emuswitch-sw1) records for the lab whose state directory is dir: the
// binary its name begins with, run with its control socket under dir/sock
// (a reused pid, or a program that merely names the directory, is not).
func isLabDaemon(pid int, name, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	bin, _, _ := strings.Cut(name, "-")
	if len(args) == 0 || filepath.Base(args[0]) != bin {
		return false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--control" && strings.HasPrefix(args[i+1], dir+"/sock/") {
			return true
		}
	}
	return false
}

// absRoot is root as an absolute path (the marks and the daemons'
// arguments name absolute state directories).
func absRoot(root string) string {
	if root == "" {
		root = DefaultStateRoot
	}
	if a, err := filepath.Abs(root); err == nil {
		return a
	}
	return root
}

// UpElsewhere returns the state root under which a lab of this name owns
// namespaces named after it, when that is not root ("" otherwise).
// Namespace names are the machine's, so only one lab of a name is up at a
// time: a `down` given another --state-dir (or none) finds nothing under
// its own root while the lab runs on, and must say where it is.
func UpElsewhere(root, lab string) string {
	if checkName(lab) != nil {
		return ""
	}
	ents, err := os.ReadDir(NetnsDir)
	if err != nil {
		return ""
	}
	prefix := NamespacePrefix + lab + "-"
	own := filepath.Join(absRoot(root), lab)
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		// Lab cx's prefix matches lab cx-2h's namespaces too: the
		// owner's last element is the lab's name.
		if o := namespaceOwner(n); o != "" && o != own && filepath.Base(o) == lab {
			return filepath.Dir(o)
		}
	}
	return ""
}
