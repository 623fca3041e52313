package lab

import "fmt"

// FindNode resolves ref ("LAB/NODE", or "NODE" when exactly one lab is up
// under root) as ResolveNode does and returns what up recorded about the
// lab and the node.
func FindNode(root, ref string) (*LabInfo, *NodeInfo, error) {
	labName, node, _, err := ResolveNode(root, ref)
	if err != nil {
		return nil, nil, err
	}
	li, err := ReadInfo(root, labName)
	if err != nil {
		return nil, nil, err
	}
	n := li.Node(node)
	if n == nil {
		return nil, nil, fmt.Errorf("lab %s has no node %s", labName, node)
	}
	return li, n, nil
}
