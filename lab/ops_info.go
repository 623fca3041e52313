package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadInfo reads what `up` built for the lab called name under root (""
// is DefaultStateRoot): its nodes, their daemons' control sockets and
// their ports with peers. A lab whose up has not finished (or was killed)
// has no such record.
func ReadInfo(root, name string) (*LabInfo, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	b, err := os.ReadFile(filepath.Join(root, name, upInfoFile))
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("lab %s is not up (no %s under %s; `%s` shows the labs)", name, upInfoFile, filepath.Join(root, name), StatusCommand(root, ""))
	}
	if err != nil {
		return nil, err
	}
	var li LabInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return nil, fmt.Errorf("lab %s: %s: %w", name, upInfoFile, err)
	}
	return &li, nil
}

// Node is the node called name, or nil.
func (li *LabInfo) Node(name string) *NodeInfo {
	for i := range li.Nodes {
		if li.Nodes[i].Name == name {
			return &li.Nodes[i]
		}
	}
	return nil
}

// Port is the connected port called name, or nil.
func (n *NodeInfo) Port(name string) *PortInfo {
	for i := range n.Ports {
		if n.Ports[i].Name == name {
			return &n.Ports[i]
		}
	}
	return nil
}

// PortNames lists the node's connected ports, comma-separated, for
// error messages.
func (n *NodeInfo) PortNames() string {
	names := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		names[i] = p.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// SplitEndpoint splits "NODE:PORT" (NODE may be "LAB/NODE") at its last
// colon; an endpoint without a colon is a whole node (port "").
func SplitEndpoint(s string) (node, port string) {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}
