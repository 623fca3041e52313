package lab

import (
	"net/netip"
	"time"
)

// LabInfo is what was built, written to up.json in the state directory
// for `status`, and printed as a table by `up`.
type LabInfo struct {
	Lab      string        `json:"lab"`
	File     string        `json:"file"`
	Fabric   Fabric        `json:"fabric,omitempty"` // roce or ib ("" from an older up: roce)
	Hosts    HostMode      `json:"hosts"`
	StateDir string        `json:"state_dir"`
	Took     time.Duration `json:"took_ns"`
	// TimeDilation is the lab file's time_dilation when above 1.
	TimeDilation int        `json:"time_dilation,omitempty"`
	Nodes        []NodeInfo `json:"nodes"`
}

// NodeInfo is one node of a built lab.
type NodeInfo struct {
	Name      string   `json:"name"`
	Kind      NodeKind `json:"kind"`
	Namespace string   `json:"namespace"`
	Daemon    string   `json:"daemon,omitempty"` // process name, e.g. emuswitch-sw1
	Binary    string   `json:"binary,omitempty"`
	Pid       int      `json:"pid,omitempty"`
	Log       string   `json:"log,omitempty"`
	Control   string   `json:"control,omitempty"`
	// Metrics is the daemon's Prometheus endpoint (up --metrics),
	// ADDR:PORT in the network namespace emulab ran in.
	Metrics string     `json:"metrics,omitempty"`
	Ports   []PortInfo `json:"ports,omitempty"`
	Iface   *IfaceInfo `json:"iface,omitempty"`
}

// IP is the host's IPv4 address on its interface (the invalid Addr for a
// node without one: a switch, a host with no link): what a test pings.
func (n *NodeInfo) IP() netip.Addr {
	if n == nil || n.Iface == nil {
		return netip.Addr{}
	}
	p, err := netip.ParsePrefix(n.Iface.Addr)
	if err != nil {
		return netip.Addr{}
	}
	return p.Addr()
}

// PortInfo is a connected port: its peer and the transport it is bound to.
type PortInfo struct {
	Name      string `json:"name"`
	Peer      string `json:"peer"`
	Transport string `json:"transport"`
	// NoFlood: outside the switches' spanning tree, the port floods no
	// broadcast or multicast (ARP) either way; unicast uses it.
	NoFlood bool `json:"no_flood,omitempty"`
}

// IfaceInfo is a host's interface as configured.
type IfaceInfo struct {
	Name       string   `json:"name"`
	Addr       string   `json:"addr"`
	MAC        string   `json:"mac"`
	MTU        int      `json:"mtu"`
	Routes     []string `json:"routes,omitempty"`
	Neighbours int      `json:"neighbours"`
	Owner      string   `json:"owner"` // the daemon that holds the TAP
}

// upInfoFile is LabInfo in the state directory.
const upInfoFile = "up.json"
