package sm

import "github.com/emufabric/emufabric/mad"

// Programming (after discovery): Set PortInfo where a LID or the SM LID
// differs, Set SwitchInfo (LinearFDBTop), Set
// every LinearForwardingTable block that differs from what the switch
// holds; then, once all of that is acknowledged, Set PortState Armed on
// every port in Init, and then Active on every port in Armed, switches
// before CAs (IBA
// 14.2.5.6: a port goes Init -> Armed -> Active only by SM command, and a
// subnet is brought up in that order so no data flows before every LFT
// is in place).

func (m *SM) smLID() uint16 {
	n := m.topo.Node(m.topo.SMGUID)
	if n == nil {
		return 0
	}
	if p := n.port(m.topo.SMPort); p != nil {
		return p.LID
	}
	return n.LID
}

func (m *SM) setPortInfo(n *Node, p *Port, state uint8) {
	f := p.Info
	f.MKey = m.cfg.SMKey
	f.PortState = state
	f.PhysState = mad.PhysStateNoChange
	f.LinkDownDefault = mad.PhysStateNoChange
	f.SubnetTimeOut = m.cfg.SubnetTimeOut
	if !n.IsSwitch() || p.Num == 0 {
		f.LID, f.MasterSMLID, f.LMC = p.LID, m.smLID(), 0
	}
	r := &req{kind: kSetPortInfo, method: mad.MethodSet, attr: mad.AttrPortInfo, am: uint32(p.Num), path: n.Path, node: n, port: p.Num}
	mad.PortInfo(r.data[:]).Encode(&f)
	m.push(r)
}

func (m *SM) queueProgram() {
	t := m.topo
	sm := m.smLID()
	for _, n := range t.Nodes {
		for _, p := range n.Ports {
			if p == nil || p.LID == 0 {
				continue
			}
			if p.Info.LID != p.LID || p.Info.MasterSMLID != sm {
				m.setPortInfo(n, p, mad.PortStateNoChange)
			}
		}
	}
	for _, n := range t.Nodes {
		if !n.IsSwitch() {
			continue
		}
		lft := t.LFT[n.GUID]
		top := uint16(len(lft) - 1)
		if n.LFTCap > 0 && top >= n.LFTCap {
			m.errorf("switch 0x%016x: %d LIDs exceed its LFT capacity %d", n.GUID, len(lft), n.LFTCap)
			top = n.LFTCap - 1
		}
		r := &req{kind: kSetSwitchInfo, method: mad.MethodSet, attr: mad.AttrSwitchInfo, path: n.Path, node: n}
		// PortStateChange is left alone: discovery cleared it before
		// reading the ports (clearPSC).
		mad.SwitchInfo(r.data[:]).Encode(&mad.SwitchInfoFields{LinearFDBTop: top})
		m.push(r)
		prog := m.programmed[n.GUID]
		for base := 0; base <= int(top); base += mad.LFTBlockSize {
			var blk [mad.LFTBlockSize]byte
			for i := range blk {
				blk[i] = mad.LFTNoPort
			}
			copy(blk[:], lft[base:min(base+mad.LFTBlockSize, len(lft))])
			if prog != nil && len(prog) >= base+mad.LFTBlockSize && string(prog[base:base+mad.LFTBlockSize]) == string(blk[:]) {
				continue
			}
			r := &req{kind: kSetLFT, method: mad.MethodSet, attr: mad.AttrLinearFwdTable, am: uint32(base / mad.LFTBlockSize), path: n.Path, node: n}
			copy(r.data[:], blk[:])
			m.push(r)
		}
	}
}

// queuePortState commands every port with a live link that is in state
// from into state to, on the switches or on the CAs.
func (m *SM) queuePortState(from, to uint8, switches bool) {
	for _, n := range m.topo.Nodes {
		if n.IsSwitch() != switches {
			continue
		}
		for _, p := range n.Ports {
			if p == nil || !portUp(n, p) || p.Info.PortState != from {
				continue
			}
			m.setPortInfo(n, p, to)
		}
	}
}
