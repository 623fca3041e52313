package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestIBCountersSwitch: ib counters reads a switch port's IBA counters
// from emuswitch's control socket (it has no PMA) and prints them as
// perfquery does, the port's number in the header.
func TestIBCountersSwitch(t *testing.T) {
	root := t.TempDir()
	file, err := filepath.Abs("../../examples/ib-two-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(root, "sw1.sock")
	fakeLab(t, root, &lab.LabInfo{Lab: "ibc", Fabric: lab.FabricIB, File: file, Nodes: []lab.NodeInfo{
		{Name: "sw1", Kind: lab.KindSwitch, Control: ctl, Ports: []lab.PortInfo{{Name: "p1", Peer: "h1:ib0"}, {Name: "p2", Peer: "h2:ib0"}}},
	}})
	ln, err := net.Listen("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	asked := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadBytes('\n')
			var req struct{ Op, Port string }
			json.Unmarshal(line, &req)
			asked <- req.Op + " " + req.Port
			io.WriteString(c, `{"ok":true,"ports":[{"port":"p2","counters":{"rx_packets_phy":40,"tx_packets_phy":139,"port_rcv_packets":12,"port_xmit_packets":10,"port_xmit_data":1132,"port_rcv_data":77,"port_xmit_wait":5,"drop_no_route":3,"port_rcv_switch_relay_errors":1,"drop_link_down":4,"port_xmit_discards":2}}]}`+"\n")
			c.Close()
		}
	}()
	fl := &ibFlags{stateDir: root, node: "sw1", port: "p2"}
	var out, errOut strings.Builder
	if err := runIBCounters(&out, &errOut, "ibc", fl); err != nil {
		t.Fatal(err)
	}
	if a := <-asked; a != "counters p2" {
		t.Errorf("asked %q, want counters p2", a)
	}
	for _, want := range []string{" port 2 (CapMask: ", "\nPortXmitPkts:....................10\n", "\nPortRcvPkts:.....................12\n",
		"\nPortXmitData:....................1132\n", "\nPortXmitWait:....................5\n", "\nPortRcvSwitchRelayErrors:........1\n",
		"\nPortXmitDiscards:................2\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "no performance management agent") {
		t.Errorf("no note that the counters come from the control socket: %q", errOut.String())
	}
	// By number too; without --port the switch's ports are listed.
	fl.port = "2"
	if err := runIBCounters(io.Discard, io.Discard, "ibc", fl); err != nil {
		t.Errorf("--port 2: %v", err)
	}
	fl.port = ""
	if err := runIBCounters(io.Discard, io.Discard, "ibc", fl); err == nil || !strings.Contains(err.Error(), "give --port (ports: p1, p2)") {
		t.Errorf("no --port: %v", err)
	}
}
