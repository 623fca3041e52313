package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestStatsErrors: a switch port the lab does not have is said before
// the daemon is asked, as a NIC's is; "does not answer on its control
// socket" is for a daemon that cannot be reached, and a daemon that
// answers with an error is quoted.
func TestStatsErrors(t *testing.T) {
	lab.SkipUnlessRoot(t)
	root := t.TempDir()
	// The nodes' namespaces, as up leaves them (commands find a node by
	// its namespace); no daemon runs in them.
	for _, node := range []string{"sw1", "h1"} {
		name, err := lab.NamespaceName("pc-stats", node)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := lab.CreateNamespace(name)
		if err != nil {
			t.Fatal(err)
		}
		ns.Close()
		t.Cleanup(func() { lab.DeleteNamespace(name) })
	}
	ctl := filepath.Join(root, "pc-stats", "sock", "sw1.sock") // where up puts it
	if err := os.MkdirAll(filepath.Dir(ctl), 0o755); err != nil {
		t.Fatal(err)
	}
	fakeLab(t, root, &lab.LabInfo{Lab: "pc-stats", Nodes: []lab.NodeInfo{
		{Name: "sw1", Kind: lab.KindSwitch, Control: ctl, Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:eth0"}, {Name: "p2", Peer: "h2:eth0"}}},
		{Name: "h1", Kind: lab.KindNIC, Control: filepath.Join(root, "h1.sock"), Ports: []lab.PortInfo{{Name: "eth0", Peer: "sw1:p1"}}},
	}})
	stats := func(arg string) error {
		return runStats(io.Discard, io.Discard, arg, &statsFlags{stateDir: root})
	}
	for _, arg := range []string{"sw1:p9", "h1:eth9"} {
		err := stats(arg)
		if err == nil || !strings.Contains(err.Error(), "has no port") || strings.Contains(err.Error(), "does not answer") {
			t.Errorf("stats %s: %v; want has no port, without asking the daemon", arg, err)
		}
	}
	if err := stats("sw1:p9"); err == nil || !strings.Contains(err.Error(), "(ports: p1, p2)") {
		t.Errorf("stats sw1:p9: %v; want the ports listed", err)
	}
	// No daemon on the socket: it does not answer.
	if err := stats("sw1:p1"); err == nil || !strings.Contains(err.Error(), "does not answer on its control socket") {
		t.Errorf("stats sw1:p1 without a daemon: %v", err)
	} else if !strings.Contains(err.Error(), "`emulab status --state-dir "+root+" pc-stats`") || strings.Count(err.Error(), "running") != 1 {
		// The user's --state-dir in the hint, and "not running" said once.
		t.Errorf("stats sw1:p1 without a daemon, the hint: %v", err)
	}
	// A daemon that answers with an error is quoted, not called silent.
	ln, err := net.Listen("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadBytes('\n')
			io.WriteString(c, `{"ok":false,"error":"counters: something broke"}`+"\n")
			c.Close()
		}
	}()
	err = stats("sw1:p1")
	if err == nil || !strings.Contains(err.Error(), "something broke") || strings.Contains(err.Error(), "does not answer") {
		t.Errorf("stats sw1:p1, the daemon refusing: %v", err)
	}
}
