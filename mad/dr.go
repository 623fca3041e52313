package mad

// Directed-route forwarding (IBA 14.2.2). The rules below are those of
// IBA compliance statements C14-9 (outbound, D = 0) and C14-13 (returning,
// D = 1), in the form the Linux kernel's smi.c applies them, with the
// receive-side and send-side halves of a hop done in one step.
//
// Outbound, a node receiving with hop pointer hp and hop count hc:
//   - 0 < hp < hc: an intermediate hop (switches only). ReturnPath[hp] =
//     arrival port, hp++, send out InitialPath[hp].
//   - hp == hc: the end of the directed part. ReturnPath[hp] = arrival
//     port (when hc > 0), hp++ (now hc+1), and the node's SMA handles it.
//   - anything else is discarded (C14-9:1, C14-9:5).
// The originator sends with hp = 1 out InitialPath[1] (hp = 0 and no
// packet at all when hc = 0: the SMP is for its own SMA).
//
// The responder sets D = 1, hp-- (back to hc) and sends out
// ReturnPath[hc]. Returning, a node receiving with hp:
//   - 2 <= hp <= hc: an intermediate hop (switches only): hp--, send out
//     ReturnPath[hp].
//   - hp == 1: the end of the directed part, the originator: hp = 0, the
//     SM takes it.
//   - hp == 0 with hc == 0: the originator's own loopback.
//
// Only purely directed SMPs (DrSLID = DrDLID = permissive) are handled;
// SMPs with LID-routed legs are reported DRUnsupported.

// DRVerdict is what a node does with a directed-route SMP.
type DRVerdict uint8

const (
	// DRDiscard: the SMP breaks a hop rule and is dropped (IBA C14-9,
	// C14-13).
	DRDiscard DRVerdict = iota
	// DRLocal: the SMP has arrived; an outbound one goes to this node's
	// SMA, a returning one to the SM that sent it.
	DRLocal
	// DRForward: send the SMP (hop pointer already moved) out Port.
	DRForward
	// DRUnsupported: a DrSLID or DrDLID other than the permissive LID.
	DRUnsupported
)

func (v DRVerdict) String() string {
	switch v {
	case DRDiscard:
		return "discard"
	case DRLocal:
		return "local"
	case DRForward:
		return "forward"
	case DRUnsupported:
		return "unsupported"
	}
	return "verdict?"
}

// DRReceive applies the hop rules to s, which arrived on inPort of a node
// with numPorts ports (isSwitch: a switch may be an intermediate hop). It
// updates the hop pointer and ReturnPath in place and returns the verdict
// and, for DRForward, the output port. s must have passed Validate.
func DRReceive(s SMP, inPort int, isSwitch bool, numPorts int) (DRVerdict, int) {
	if s.DrSLID() != PermissiveLID || s.DrDLID() != PermissiveLID {
		return DRUnsupported, 0
	}
	hp, hc := int(s.HopPointer()), int(s.HopCount())
	if hc >= MaxHops {
		return DRDiscard, 0
	}
	if !s.Direction() {
		switch {
		case hc > 0 && hp == 0: // C14-9:1: the sender did not advance
			return DRDiscard, 0
		case hp > 0 && hp < hc: // C14-9:2: intermediate hop
			if !isSwitch {
				return DRDiscard, 0
			}
			s.ReturnPath()[hp] = byte(inPort)
			hp++
			out := int(s.InitialPath()[hp])
			if out < 1 || out > numPorts {
				return DRDiscard, 0
			}
			s.SetHopPointer(uint8(hp))
			return DRForward, out
		case hp == hc: // C14-9:3: end of the directed part
			if hc > 0 {
				s.ReturnPath()[hp] = byte(inPort)
			}
			s.SetHopPointer(uint8(hc + 1))
			return DRLocal, 0
		}
		return DRDiscard, 0 // C14-9:5
	}
	switch {
	case hp >= 2 && hp <= hc: // C14-13:2: intermediate hop
		if !isSwitch {
			return DRDiscard, 0
		}
		hp--
		out := int(s.ReturnPath()[hp])
		if out < 1 || out > numPorts {
			return DRDiscard, 0
		}
		s.SetHopPointer(uint8(hp))
		return DRForward, out
	case hp == 1: // C14-13:3: back at the originator
		s.SetHopPointer(0)
		return DRLocal, 0
	case hp == 0 && hc == 0: // C14-13:4
		return DRLocal, 0
	}
	return DRDiscard, 0 // C14-13:5
}

// DRTurn makes s, an outbound directed-route SMP that reached its
// destination (hop pointer hc+1, or 0 when hc is 0), the returning
// response: D = 1, hop pointer hc, and returns the port to send it out of
// (ReturnPath[hc]), or 0 when hc is 0 (the originator is this node).
// The caller has set the method and status.
func DRTurn(s SMP) int {
	s.SetDirection(true)
	hc := s.HopCount()
	if hc == 0 {
		s.SetHopPointer(0)
		return 0
	}
	s.SetHopPointer(hc)
	return int(s.ReturnPath()[hc])
}

// DRPath builds the directed-route fields of an outbound SMP along path:
// path[0] is the originator's exit port and path[i] the exit port of hop
// i. It sets HopCount = len(path), HopPointer = 1 (0 for an empty path:
// the originator's own SMA), the D bit clear, permissive DrSLID/DrDLID,
// InitialPath[1..] = path and a zero ReturnPath. It reports false,
// changing nothing, for a path of 64 hops or more (IBA C14-6).
func DRPath(f *SMPFields, path []uint8) bool {
	if len(path) >= MaxHops {
		return false
	}
	f.MgmtClass = ClassSubnDR
	f.Direction = false
	f.HopCount = uint8(len(path))
	f.HopPointer = 0
	if len(path) > 0 {
		f.HopPointer = 1
	}
	f.DrSLID, f.DrDLID = PermissiveLID, PermissiveLID
	f.InitialPath = [MaxHops]byte{}
	f.ReturnPath = [MaxHops]byte{}
	copy(f.InitialPath[1:], path)
	return true
}
