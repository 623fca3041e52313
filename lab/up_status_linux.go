package lab

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// LabStatus is a lab under a state root, as `emulab status` shows it. It
// is read without taking the lab's lock, so status works while an `up`
// runs and after any process of the lab was killed.
type LabStatus struct {
	Name string
	Dir  string
	// Locked: a controller holds the lab (an up or down in progress, or
	// a test that owns it).
	Locked bool
	// Info is what `up` built; nil if up has not finished (or was
	// killed).
	Info       *LabInfo
	Namespaces []NamespaceStatus
	Procs      []ProcStatus
	// Sockets are the recorded socket files with whether they exist.
	Sockets []SocketStatus
}

// NamespaceStatus is one recorded namespace.
type NamespaceStatus struct {
	Name   string
	Exists bool
	Ifaces []IfaceStatus
	Err    error // the interfaces could not be listed
}

// IfaceStatus is an interface inside a lab namespace.
type IfaceStatus struct {
	Name    string
	Up      bool // administratively up
	Carrier bool // lower layer up: the TAP's owner is attached
	MTU     int
	MAC     string
	Addrs   []string
}

// SocketStatus is a recorded socket file.
type SocketStatus struct {
	Path   string
	Exists bool
}

// Labs lists the labs with a state directory under root ("" is
// DefaultStateRoot), sorted.
func Labs(root string) ([]string, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || checkName(e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "state.json")); err == nil {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// ReadStatus reports on the lab called name under root.
func ReadStatus(root, name string) (*LabStatus, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	rec, err := readRecord(root, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, name)
	st := &LabStatus{Name: name, Dir: dir, Locked: stateLocked(dir)}
	if b, err := os.ReadFile(filepath.Join(dir, upInfoFile)); err == nil {
		var li LabInfo
		if json.Unmarshal(b, &li) == nil {
			st.Info = &li
		}
	}
	for _, p := range rec.Procs {
		st.Procs = append(st.Procs, procStatus(p))
	}
	for _, p := range rec.Sockets {
		_, err := os.Lstat(p)
		st.Sockets = append(st.Sockets, SocketStatus{Path: p, Exists: err == nil})
	}
	for _, name := range rec.Namespaces {
		ns := NamespaceStatus{Name: name, Exists: NamespaceExists(name)}
		if ns.Exists {
			ns.Ifaces, ns.Err = namespaceIfaces(name)
		}
		st.Namespaces = append(st.Namespaces, ns)
	}
	return st, nil
}

// stateLocked reports whether a controller holds the lab's lock, by
// trying a shared lock and giving it back at once.
func stateLocked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// namespaceIfaces lists the interfaces of a namespace other than lo.
func namespaceIfaces(name string) ([]IfaceStatus, error) {
	ns, err := OpenNamespace(name)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	nl := ns.Netlink()
	links, err := nl.LinkList()
	if err != nil {
		return nil, err
	}
	var out []IfaceStatus
	for _, l := range links {
		a := l.Attrs()
		if a.Flags&net.FlagLoopback != 0 {
			continue
		}
		is := IfaceStatus{Name: a.Name, Up: a.Flags&net.FlagUp != 0, Carrier: a.RawFlags&unix.IFF_LOWER_UP != 0,
			MTU: a.MTU, MAC: a.HardwareAddr.String()}
		addrs, err := nl.AddrList(l, unix.AF_INET)
		if err == nil {
			for _, ad := range addrs {
				is.Addrs = append(is.Addrs, ad.IPNet.String())
			}
		}
		out = append(out, is)
	}
	return out, nil
}
