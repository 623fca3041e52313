package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// ResolveNode finds the namespace of a node of a running lab. ref is
// "lab/node", or "node" when exactly one lab is up under root ("" is
// DefaultStateRoot). Both names are checked against the lab file's name
// rules before anything is looked up, so a ref cannot reach outside the
// state root or /run/netns.
func ResolveNode(root, ref string) (labName, node, namespace string, err error) {
	labName, node, hasLab := strings.Cut(ref, "/")
	if !hasLab {
		node, labName = labName, ""
	}
	if hasLab {
		if err := checkName(labName); err != nil {
			return "", "", "", fmt.Errorf("lab of %q: %w", ref, err)
		}
	}
	if err := checkName(node); err != nil {
		return "", "", "", fmt.Errorf("node %q: %w", ref, err)
	}
	if !hasLab {
		labs, err := Labs(root)
		if err != nil {
			return "", "", "", err
		}
		for _, l := range labs {
			if ns, err := NamespaceName(l, node); l == node && err == nil && !NamespaceExists(ns) {
				// A lab's name where a node is wanted (emulab capture
				// LAB, stats LAB), and no node of that lab has it:
				// "say which, LAB/LAB" would not help.
				return "", "", "", fmt.Errorf("%s is a lab, not a node: name one of its nodes, %s/NODE%s", node, node, labNodesHint(root, node))
			}
		}
		switch len(labs) {
		case 0:
			return "", "", "", fmt.Errorf("node %s: no lab is up under %s (--state-dir)", node, root)
		case 1:
			labName = labs[0]
		default:
			return "", "", "", fmt.Errorf("node %s: %d labs are up (%s): say which, LAB/%s", node, len(labs), strings.Join(labs, ", "), node)
		}
	}
	namespace, err = NamespaceName(labName, node)
	if err != nil {
		return "", "", "", err
	}
	if !NamespaceExists(namespace) {
		msg := fmt.Sprintf("lab %s has no node %s (no namespace %s)", labName, node, namespace)
		if hint := labNodesHint(root, labName); hint != "" {
			msg += hint
		} else {
			msg += "; is the lab up?"
		}
		return "", "", "", errors.New(msg)
	}
	return labName, node, namespace, nil
}

// labNodesHint is "; its nodes: sw1, h1, h2" for a lab up under root, or
// "" when its record cannot be read.
func labNodesHint(root, labName string) string {
	rec, err := readRecord(root, labName)
	if err != nil {
		return ""
	}
	var nodes []string
	for _, ns := range rec.Namespaces {
		nodes = append(nodes, strings.TrimPrefix(ns, NamespacePrefix+labName+"-"))
	}
	return "; its nodes: " + strings.Join(nodes, ", ")
}

// StartCmd starts cmd inside node's namespace. The caller sets up its
// standard streams and waits for it.
func (l *Lab) StartCmd(node string, cmd *exec.Cmd) error {
	ns, err := l.Namespace(node)
	if err != nil {
		return err
	}
	return StartIn(ns, cmd)
}

// Exec runs argv inside node's namespace and returns its combined
// output; a non-zero exit is an error that names the node and command.
func (l *Lab) Exec(node string, argv ...string) ([]byte, error) {
	return l.ExecContext(context.Background(), node, argv...)
}

// execWaitDelay bounds how long ExecContext waits, once the command was
// killed or has exited, for whatever still holds its output pipe (a
// process that left the command's process group).
const execWaitDelay = 2 * time.Second

// ExecContext is Exec with a context that kills the command. The command
// runs in a process group of its own, and the context kills the whole
// group: `sh -c "sleep 20; echo done"` ends with its sleep, and the call
// returns, when the context is done, not when the sleep is.
func (l *Lab) ExecContext(ctx context.Context, node string, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("exec: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group's id is the command's pid (Setpgid).
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return os.ErrProcessDone
	}
	cmd.WaitDelay = execWaitDelay
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := l.StartCmd(node, cmd); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", node, strings.Join(argv, " "), err)
	}
	if err := cmd.Wait(); err != nil {
		return out.Bytes(), fmt.Errorf("%s: %s: %w", node, strings.Join(argv, " "), err)
	}
	return out.Bytes(), nil
}
