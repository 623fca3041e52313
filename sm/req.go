package sm

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
)

// reqKind says what a response means to the sweep.
type reqKind uint8

const (
	kNodeInfo        reqKind = iota + 1 // discovery: who is at the end of path
	kNodeDesc                           // discovery: the node's description
	kPortInfo                           // discovery: one port's state
	kSwitchInfo                         // discovery: LFT capacity, PortStateChange
	kClearPSC                           // discovery: clear PortStateChange, then read the ports
	kSetPortInfo                        // LID / state programming
	kSetSwitchInfo                      // LinearFDBTop
	kSetLFT                             // one LFT block
	kLightSwitchInfo                    // light sweep poll
	kLightPortInfo                      // light sweep poll of a CA's port (a fabric without switches)
)

// req is one SMP the SM sends, along a directed-route path from the SM
// node (path[0] = the SM node's exit port).
type req struct {
	kind   reqKind
	method uint8
	attr   uint16
	am     uint32
	data   [mad.DataSize]byte
	path   []uint8

	node *Node // the node the SMP addresses (nil for kNodeInfo)
	port int   // PortInfo port
	// kNodeInfo: the node and port the path leaves last (nil at the SM node).
	from     *Node
	fromPort int

	tid      uint64
	deadline clock.Time
	tries    int
}

func (m *SM) push(r *req) { m.queue = append(m.queue, r) }

// done dispatches a successful response.
func (m *SM) done(now clock.Time, r *req, smp mad.SMP) {
	data := smp.Data()
	switch r.kind {
	case kNodeInfo:
		m.gotNodeInfo(r, mad.NodeInfo(data))
	case kNodeDesc:
		r.node.Desc = mad.NodeDescription(data).String()
	case kPortInfo:
		m.gotPortInfo(r, mad.PortInfo(data))
	case kSwitchInfo:
		si := mad.SwitchInfo(data)
		r.node.LFTCap = si.LinearFDBCap()
		r.node.psc = si.PortStateChange()
		m.clearPSC(r, si.LinearFDBTop())
	case kClearPSC:
		r.node.psc = mad.SwitchInfo(data).PortStateChange()
		m.readPorts(r.node)
	case kSetPortInfo:
		if p := r.node.port(r.port); p != nil {
			p.Info = mad.PortInfo(data).Fields()
		}
	case kSetSwitchInfo:
		r.node.psc = mad.SwitchInfo(data).PortStateChange()
	case kSetLFT:
		prog := m.programmed[r.node.GUID]
		base := int(r.am) * mad.LFTBlockSize
		for len(prog) < base+mad.LFTBlockSize {
			prog = append(prog, mad.LFTNoPort)
		}
		copy(prog[base:], data)
		m.programmed[r.node.GUID] = prog
	case kLightSwitchInfo:
		if mad.SwitchInfo(data).PortStateChange() {
			m.changed = true
		}
	case kLightPortInfo:
		// A change from what the last sweep saw (as OpenSM sweeps on a
		// change): a link that went down and came back is Init, not the
		// Active the sweep left. A port that stays down, unchanged, asks
		// for nothing more: one heavy sweep per change, not one per light
		// sweep for as long as the link is down.
		got := mad.PortInfo(data).Fields()
		if p := r.node.port(r.port); p == nil || got.PortState != p.Info.PortState || got.PhysState != p.Info.PhysState {
			m.changed = true
		}
	}
}

// failed handles an SMP that got an error status or no answer.
func (m *SM) failed(now clock.Time, r *req) {
	switch r.kind {
	case kLightSwitchInfo, kLightPortInfo:
		m.changed = true // a switch vanished, or the link to a CA is down
	case kSetLFT:
		delete(m.programmed, r.node.GUID) // unknown now: reprogram it all next time
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
