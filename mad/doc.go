// Package mad is InfiniBand subnet management: the Management Datagram
// (MAD) base header and the Subnet Management Packet (SMP) of IBA Vol 1
// chapters 13.4 and 14.2, the SMP attributes a subnet manager needs to
// bring up a fabric (NodeInfo, NodeDescription, PortInfo, SwitchInfo,
// LinearForwardingTable), the directed-route hop rules of IBA 14.2.2, the
// framing of SMPs as UD SEND ONLY packets to QP0 on VL15, and an I/O-free
// Subnet Management Agent (Agent) that answers and forwards SMPs for one
// node.
//
// Headers and attributes are byte-slice views with accessors, a Fields
// struct with Encode, and an explicit Validate returning *wire.Error that
// names the spec header and field, like package wire. Accessors do not
// bounds-check: validate first.
//
// Public API:
//
//	type MAD []byte                 // 24-byte common header; Fields/Encode/Validate
//	type SMP []byte                 // 256-byte SMP, LID-routed or directed-route; Fields/Encode/Validate
//	type NodeInfo, PortInfo, SwitchInfo []byte   // attributes: Fields/Encode/Validate
//	type NodeDescription, LFTBlock []byte
//	func EncodePacket(b []byte, f *PacketFields, smp SMP) (int, error)   // LRH VL15 BTH DETH MAD ICRC VCRC
//	func DecodePacket(pkt []byte, p *Packet, flags bth.DecodeFlags) error
//	func DRReceive(s SMP, inPort int, isSwitch bool, numPorts int) (DRVerdict, int)  // IBA 14.2.2 hop rules
//	func DRTurn(s SMP) int                                          // make the returning response
//	func DRPath(f *SMPFields, path []uint8) bool                    // outbound path fields
//	func NewAgent(cfg AgentConfig) *Agent
//	func (a *Agent) Handle(inPort int, smp SMP, lidMatch bool) Action
//	func (a *Agent) SetLinkUp(port int, up bool) bool
//	func (a *Agent) LID() / PortState(p) / LFTPort(lid) / LinearFDBTop() ...
//	func LinkFor(bps uint64) (width, speed, speedExt uint8)
//
// Port numbering is IBA's: a switch's management port is 0 and its
// external ports are 1..N; a channel adapter's ports are 1..N.
package mad
