package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// NICHost is a NIC host of a running lab: what a traffic generator needs
// to drive its emulated RNIC (the emunic daemon's control socket).
type NICHost struct {
	Lab       string
	Node      string
	Namespace string
	Control   string // the emunic's control socket
	Addr      string // the host's interface address (CIDR), for messages
}

// ResolveNIC finds the emunic of a NIC host of a running lab. ref is what
// ResolveNode takes ("lab/node", or "node" with one lab up). The daemon's
// control socket is the one `up` recorded in the state directory (the
// socket `status` asks); a switch, or a host whose interface is a plain
// TAP of the switch (a lab brought up with --hosts tap), has no NIC to
// drive and is an error that says so.
func ResolveNIC(root, ref string) (NICHost, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	ref, err := nodeOfAddress(root, ref)
	if err != nil {
		return NICHost{}, err
	}
	labName, node, ns, err := ResolveNode(root, ref)
	if err != nil {
		return NICHost{}, err
	}
	info, err := readUpInfo(root, labName)
	if err != nil {
		return NICHost{}, fmt.Errorf("lab %s: %w (has its up finished? `%s` says)", labName, err, StatusCommand(root, labName))
	}
	for _, n := range info.Nodes {
		if n.Name != node {
			continue
		}
		h := NICHost{Lab: labName, Node: node, Namespace: ns, Control: n.Control}
		if n.Iface != nil {
			h.Addr = n.Iface.Addr
		}
		switch {
		case n.Kind != KindNIC:
			return NICHost{}, fmt.Errorf("node %s of lab %s is a %s, not a NIC host", node, labName, n.Kind)
		case n.Control == "":
			return NICHost{}, fmt.Errorf("host %s of lab %s has no emulated NIC: the lab was brought up with --hosts %s (its eth0 is a TAP of the switch); bring it up with --hosts nic", node, labName, info.Hosts)
		}
		return h, nil
	}
	return NICHost{}, fmt.Errorf("lab %s: node %s is not in what up built (%s)", labName, node, filepath.Join(root, labName, upInfoFile))
}

// nodeOfAddress turns "[lab/]ADDRESS" into "lab/node" for the host that
// has that IPv4 address: a perftest user names the server by its address
// (ib_write_bw 10.0.0.2). Any other ref is returned as it is.
func nodeOfAddress(root, ref string) (string, error) {
	labName, host, hasLab := strings.Cut(ref, "/")
	if !hasLab {
		labName, host = "", ref
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return ref, nil
	}
	if !hasLab {
		labs, err := Labs(root)
		if err != nil {
			return "", err
		}
		if len(labs) != 1 {
			return "", fmt.Errorf("%s: %d labs are up under %s (%s): say which, LAB/%s", host, len(labs), root, strings.Join(labs, ", "), host)
		}
		labName = labs[0]
	} else if err := checkName(labName); err != nil {
		return "", fmt.Errorf("lab of %q: %w", ref, err)
	}
	info, err := readUpInfo(root, labName)
	if err != nil {
		return "", fmt.Errorf("lab %s: %w", labName, err)
	}
	for _, n := range info.Nodes {
		if n.IP() == addr {
			return labName + "/" + n.Name, nil
		}
	}
	return "", fmt.Errorf("lab %s has no host with address %s", labName, addr)
}

// readUpInfo reads what `up` built from the lab's state directory.
func readUpInfo(root, name string) (*LabInfo, error) {
	b, err := os.ReadFile(filepath.Join(root, name, upInfoFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("no record of what up built")
	}
	if err != nil {
		return nil, err
	}
	var li LabInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return nil, fmt.Errorf("%s: %w", upInfoFile, err)
	}
	return &li, nil
}
