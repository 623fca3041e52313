package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces are bind-mounted, the
// iproute2 convention, so `ip netns exec emu-<lab>-<node> ...` works.
const NetnsDir = "/run/netns"

// Namespace is an open named network namespace: a handle to it and a
// netlink socket bound inside it, so configuring it never switches the
// caller's thread. Close releases both; the namespace stays.
type Namespace struct {
	Name   string
	Handle netns.NsHandle
	nl     *netlink.Handle
}

// CreateNamespace creates the named namespace and brings its loopback up.
// It fails if a namespace of that name exists (a previous lab must be torn
// down first: nothing is silently reused).
func CreateNamespace(name string) (*Namespace, error) {
	if err := nsCheckFileName(name); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	if _, err := os.Stat(filepath.Join(NetnsDir, name)); err == nil {
		return nil, fmt.Errorf("namespace %s: %w", name, os.ErrExist)
	}
	var h netns.NsHandle = netns.None()
	err := nsOnThread(netns.None(), func() error {
		var err error
		h, err = netns.NewNamed(name) // unshare on this thread, bind-mount
		return err
	})
	if err != nil {
		// NewNamed leaves its mount point file behind when the mount fails.
		_ = unix.Unmount(filepath.Join(NetnsDir, name), unix.MNT_DETACH)
		_ = os.Remove(filepath.Join(NetnsDir, name))
		if h.IsOpen() {
			h.Close()
		}
		return nil, fmt.Errorf("namespace %s: %w", name, err)
	}
	ns, err := nsBind(name, h)
	if err != nil {
		_ = netns.DeleteNamed(name)
		return nil, err
	}
	if err := ns.LinkUp("lo"); err != nil {
		ns.Close()
		_ = netns.DeleteNamed(name)
		return nil, err
	}
	return ns, nil
}

// OpenNamespace opens an existing named namespace.
func OpenNamespace(name string) (*Namespace, error) {
	if err := nsCheckFileName(name); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", name, err)
	}
	return nsBind(name, h)
}

func nsBind(name string, h netns.NsHandle) (*Namespace, error) {
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("namespace %s: netlink: %w", name, err)
	}
	return &Namespace{Name: name, Handle: h, nl: nl}, nil
}

// DeleteNamespace removes the name of a namespace (as `ip netns delete`).
// The namespace itself, with its interfaces, goes when nothing holds it:
// processes inside must be killed first (see Teardown). A namespace that
// does not exist is not an error.
func DeleteNamespace(name string) error {
	if err := nsCheckFileName(name); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	p := filepath.Join(NetnsDir, name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("namespace %s: unmount: %w", name, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

// NamespaceExists reports whether the named namespace exists.
func NamespaceExists(name string) bool {
	_, err := os.Stat(filepath.Join(NetnsDir, name))
	return err == nil
}

// Netlink is the namespace's netlink handle, for what the helpers below do
// not cover.
func (n *Namespace) Netlink() *netlink.Handle { return n.nl }

// Close releases the handles; the namespace stays.
func (n *Namespace) Close() error {
	if n.nl != nil {
		n.nl.Close()
		n.nl = nil
	}
	if n.Handle.IsOpen() {
		return n.Handle.Close()
	}
	return nil
}

func (n *Namespace) link(ifname string) (netlink.Link, error) {
	l, err := n.nl.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("%s: interface %s: %w", n.Name, ifname, err)
	}
	return l, nil
}

// LinkUp sets the interface up.
func (n *Namespace) LinkUp(ifname string) error {
	l, err := n.link(ifname)
	if err != nil {
		return err
	}
	if err := n.nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: %s up: %w", n.Name, ifname, err)
	}
	return nil
}

// SetMTU sets the interface's MTU.
func (n *Namespace) SetMTU(ifname string, mtu int) error {
	l, err := n.link(ifname)
	if err != nil {
		return err
	}
	if err := n.nl.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("%s: %s mtu %d: %w", n.Name, ifname, mtu, err)
	}
	return nil
}

// AddAddr adds an address with its prefix length (10.0.0.1/24). IPv6
// addresses are added with IFA_F_NODAD so they are usable at once, as a lab
// wants.
func (n *Namespace) AddAddr(ifname string, p netip.Prefix) error {
	l, err := n.link(ifname)
	if err != nil {
		return err
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := n.nl.AddrAdd(l, a); err != nil {
		return fmt.Errorf("%s: %s addr %s: %w", n.Name, ifname, p, err)
	}
	return nil
}

// AddRoute adds a route to dst via gw (an invalid gw: directly connected)
// out of ifname.
func (n *Namespace) AddRoute(dst netip.Prefix, gw netip.Addr, ifname string) error {
	l, err := n.link(ifname)
	if err != nil {
		return err
	}
	r := &netlink.Route{
		LinkIndex: l.Attrs().Index,
		Dst:       &net.IPNet{IP: net.IP(dst.Addr().AsSlice()), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
	}
	if gw.IsValid() {
		r.Gw = net.IP(gw.AsSlice())
	} else {
		r.Scope = netlink.SCOPE_LINK
	}
	if err := n.nl.RouteAdd(r); err != nil {
		return fmt.Errorf("%s: route %s via %s dev %s: %w", n.Name, dst, gw, ifname, err)
	}
	return nil
}

// LinkNames lists the interfaces in the namespace.
func (n *Namespace) LinkNames() ([]string, error) {
	ls, err := n.nl.LinkList()
	if err != nil {
		return nil, fmt.Errorf("%s: links: %w", n.Name, err)
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Attrs().Name
	}
	return names, nil
}

// ownerAliasPrefix starts the alias up gives a lab namespace's lo: the
// lab's state directory follows. It is the namespace's proof of ownership
// when the lab's state record is lost (recoverLeftovers).
const ownerAliasPrefix = "emufabric lab "

// MarkOwner records on the namespace's lo that the lab whose state
// directory is dir owns it.
func (n *Namespace) MarkOwner(dir string) error {
	l, err := n.link("lo")
	if err != nil {
		return err
	}
	if err := n.nl.LinkSetAlias(l, ownerAliasPrefix+dir); err != nil {
		return fmt.Errorf("namespace %s: mark lo: %w", n.Name, err)
	}
	return nil
}

// namespaceOwner reads the state directory named on the namespace's lo,
// "" when it has no mark (not a namespace up made, or made before marks).
func namespaceOwner(name string) string {
	ns, err := OpenNamespace(name)
	if err != nil {
		return ""
	}
	defer ns.Close()
	l, err := ns.link("lo")
	if err != nil {
		return ""
	}
	a := l.Attrs().Alias
	if !strings.HasPrefix(a, ownerAliasPrefix) {
		return ""
	}
	return strings.TrimPrefix(a, ownerAliasPrefix)
}
