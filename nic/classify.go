package nic

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// Classification, in mlnx_qos terms: under "trust dscp" an IP frame's
// priority is dscp2prio[DSCP] (default DSCP>>3, so DSCP 26 -> 3 and CNPs'
// 48 -> 6) and a non-IP frame's is 0; under "trust pcp" it is the 802.1Q
// PCP, 0 for untagged frames.

func defaultDSCP2Prio() (m [64]uint8) {
	for d := range m {
		m[d] = uint8(d >> 3)
	}
	return m
}

func (n *NIC) prioOfDSCP(dscp uint8) uint8 { return n.dscp2prio[dscp&63] }

// classify returns the priority of a frame (Ethernet header first). It
// reads only what it needs and never fails: a frame too short to show a
// field gets priority 0.
func (n *NIC) classify(b []byte) uint8 {
	if len(b) < wire.EthernetSize {
		return 0
	}
	et := binary.BigEndian.Uint16(b[12:])
	l3 := wire.EthernetSize
	tagged := et == wire.EtherTypeVLAN
	if tagged {
		if len(b) < wire.EthernetSize+wire.VLANTagSize {
			return 0
		}
		if n.cfg.Trust == TrustPCP {
			return b[14] >> 5
		}
		et = binary.BigEndian.Uint16(b[16:])
		l3 += wire.VLANTagSize
	}
	if n.cfg.Trust == TrustPCP {
		return 0
	}
	if et != wire.EtherTypeIPv4 && et != wire.EtherTypeIPv6 {
		return 0
	}
	return n.prioOfDSCP(wire.IPDSCP(b[l3:]))
}

// DSCP2Prio returns the NIC's dscp2prio table (for a `mlnx_qos` show).
func (n *NIC) DSCP2Prio() [64]uint8 { return n.dscp2prio }
