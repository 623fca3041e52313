package lab

import "fmt"

// NamespacePrefix starts every namespace a lab creates: emu-<lab>-<node>,
// as containerlab names its containers clab-<lab>-<node>.
const NamespacePrefix = "emu-"

// NamespaceName is the network namespace of node in lab. Both names must
// pass the lab file's name rules (letters, digits, '_', '-', at most
// MaxNameLen bytes, not starting with '-'), so the result is safe as a file
// name under /run/netns and as an argument to any command: it cannot hold
// '/', '.', spaces or shell metacharacters.
func NamespaceName(lab, node string) (string, error) {
	if err := checkName(lab); err != nil {
		return "", fmt.Errorf("lab name: %w", err)
	}
	if err := checkName(node); err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return NamespacePrefix + lab + "-" + node, nil
}

// nsCheckFileName validates a name that becomes a file name in the state
// directory (a namespace, a process, a socket): the name rules of the lab
// file, with room for the "emu-<lab>-<node>" composition.
func nsCheckFileName(s string) error {
	return checkChars(s, len(NamespacePrefix)+2*MaxNameLen+1, "")
}
