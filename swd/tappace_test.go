package swd

import (
	"testing"

	"github.com/emufabric/emufabric/lab"
)

// TestTAPHostIsNotAnEmunic: a lab's `kind: nic` host behind a TAP
// (`emulab up --hosts tap`) is the kernel, which does not pace its
// frames, so the switch paces the host -> switch direction at the link
// rate and `link set ... rate` changes it. Taken for an emunic, the TAP
// host sent at whatever the machine could: iperf3 moved 2 Gb/s from a
// TAP host over a link of `rate: 100M`.
func TestTAPHostIsNotAnEmunic(t *testing.T) {
	nic := &lab.Port{Node: &lab.Node{Kind: lab.KindNIC}}
	sw := &lab.Port{Node: &lab.Node{Kind: lab.KindSwitch}}
	tap := &PortBind{Port: "p1", Kind: TAPLink, IfName: "eth0", NetNS: "emu-x-h1"}
	ring, err := ParsePortFlag("p1=seqpacket-listen:/nonexistent/p1.sock")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		bind *PortBind
		peer *lab.Port
		want bool
	}{
		{"emunic over a ring", &ring, nic, true},
		{"nic host over a TAP", tap, nic, false},
		{"switch over a ring", &ring, sw, false},
		{"no peer", &ring, nil, false},
	} {
		if got := emunicPeer(c.bind, c.peer); got != c.want {
			t.Errorf("%s: emunicPeer = %v, want %v", c.name, got, c.want)
		}
	}
}
