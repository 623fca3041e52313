package lab

import (
	"bytes"
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
//     /run/netns named NamespacePrefix+lab+"-..." that no other lab under
//     the root records (lab w2-x's emu-w2-x-h1 is not lab w2's);
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
	for _, ns := range found {
		if nsCheckFileName(ns) != nil || !NamespaceExists(ns) {
			continue
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
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 || !cmdlineNames(pid, s.Dir) {
			continue
		}
		start, err := nsStartTime(pid)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(pf), ".pid")
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
// that no other lab under root records, in its state.json or its up.json.
func prefixNamespaces(root, lab string) []string {
	ents, err := os.ReadDir(NetnsDir)
	if err != nil {
		return nil
	}
	prefix := NamespacePrefix + lab + "-"
	others := map[string]bool{}
	dirs, _ := os.ReadDir(root)
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == lab {
			continue
		}
		if rec, err := readRecord(root, d.Name()); err == nil {
			for _, ns := range rec.Namespaces {
				others[ns] = true
			}
		}
		if info, err := readUpInfo(root, d.Name()); err == nil {
			for _, n := range info.Nodes {
				others[n.Namespace] = true
			}
		}
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, prefix) && len(n) > len(prefix) && !others[n] && !ownedElsewhere(n, filepath.Join(root, lab)) {
			out = append(out, n)
		}
	}
	return out
}

// ownedElsewhere reports whether a daemon in namespace ns belongs to a lab
// whose state directory is not dir and still holds its record: the same
// lab name brought up under another state root (--state-dir), which is
// alive and not ours to take down.
func ownedElsewhere(ns, dir string) bool {
	pids, _ := nsPidsIn(ns)
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] != "--control" {
				continue
			}
			// <root>/<lab>/sock/ctl-<node>.sock
			owner := filepath.Dir(filepath.Dir(args[i+1]))
			if owner == dir {
				continue
			}
			if _, err := os.Stat(filepath.Join(owner, "state.json")); err == nil {
				return true
			}
		}
	}
	return false
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

// cmdlineNames reports whether pid's command line holds dir (a daemon of
// this lab names its control socket under it).
func cmdlineNames(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte(dir+"/"))
}
