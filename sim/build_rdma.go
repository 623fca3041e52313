package sim

import (
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
)

// nicConfig converts a lab nic node that carries RDMA flows into a NIC
// host: its addresses, classification, PFC honouring and congestion
// control (the node's dcqcn section, else the lab's, else the NIC's
// default NVIDIA profile).
func nicConfig(spec *lab.Spec, n *lab.Node) NICConfig {
	c := NICConfig{Name: n.Name, MAC: n.MAC, IP: n.IPv4, Tagged: n.Tagged, VID: n.VID, IgnorePFC: n.IgnorePFC,
		CC: n.CC, DCQCN: spec.DCQCNOf(n)}
	if n.Trust == lab.TrustPCP {
		c.Trust = nic.TrustPCP
	}
	if spec.Fabric == lab.FabricIB {
		c.Fabric, c.LID, c.DCQCN = FabricIB, n.LID, nil
		if ibc := spec.IBOf(n); ibc != nil {
			c.IBDataVLs, c.IBBlocksPerVL = ibc.MaxVLs, ibc.BlocksPerVL()
			sl2vl := ibc.SLToVL()
			c.IBSL2VL = &sl2vl
			c.IBCC = hostIBCC(ibc)
		}
		if c.CC == lab.CCNone {
			c.IBCC = nil
		}
		c.CC = ""
	}
	return c
}

// rdmaFlowConfig converts a lab RDMA flow (op set). A flow with neither a
// count nor a stop time posts until the end of the run.
func rdmaFlowConfig(spec *lab.Spec, fl *lab.Flow) RDMAFlowConfig {
	c := RDMAFlowConfig{Name: fl.Name, Src: fl.Src.Name, Dst: fl.Dst[0].Name, Size: int(fl.Size.Size),
		Count: fl.Count, QPs: fl.QPs, Depth: fl.Depth, Start: fl.Start, Stop: fl.Stop,
		DSCP: fl.DSCP, Priority: int(fl.Priority), MTU: fl.PMTU, SL: fl.SL}
	if spec.Fabric == lab.FabricIB {
		c.Priority, c.DSCP = -1, 0 // an IB flow is placed by its SL
	}
	if c.Count == 0 && c.Stop == 0 {
		c.Stop = spec.Sim.Duration
	}
	switch fl.Op {
	case lab.OpRead:
		c.Op = OpRead
	case lab.OpSend:
		c.Op = OpSend
	default:
		c.Op = OpWrite
	}
	return c
}
