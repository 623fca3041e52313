package sim

import (
	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/switchcore"
)

// hostIBCC is a host's congestion control settings from its ib section's
// cc key, nil when it has none.
func hostIBCC(ibc *lab.IBConfig) *cc.IBCC {
	if ibc.CC == nil {
		return nil
	}
	c := ibc.CC.CA
	c.CCT = append([]cc.CCTEntry(nil), c.CCT...)
	return &c
}

// applyIBCC sets a switch's FECN marking from the cc key. The victim mask
// is per port: "ca" sets the ports whose peer is a NIC node.
func applyIBCC(c *switchcore.IBConfig, ibc *lab.IBConfig, n *lab.Node) {
	if ibc.CC == nil {
		return
	}
	x := ibc.CC
	c.CC = switchcore.IBCCConfig{Enabled: true, Threshold: x.Threshold, MarkingRate: x.MarkingRate, PacketSize: x.PacketSize}
	if x.VictimMask == lab.VictimNone {
		return
	}
	c.CC.VictimMask = make([]bool, len(n.Ports))
	for i, p := range n.Ports {
		c.CC.VictimMask[i] = x.VictimMask == lab.VictimAll || (p.Peer != nil && p.Peer.Node.Kind == lab.KindNIC)
	}
}
