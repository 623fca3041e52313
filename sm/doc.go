// Package sm is an InfiniBand subnet manager as an I/O-free state machine:
// it discovers the fabric with directed-route SMPs (NodeInfo,
// NodeDescription, PortInfo, SwitchInfo), assigns LIDs, computes min-hop
// routes that spread destinations over equal-cost ports, programs every
// switch's LinearForwardingTable, moves ports Init -> Armed -> Active, and
// re-sweeps when the fabric changes.
//
// The driver (a simulated or real HCA's QP0) moves bytes; the SM only
// produces and consumes 256-byte SMPs:
//
//	m := sm.New(sm.Config{...})
//	m.Start(now)
//	for { port, ok := m.Poll(now, buf); if !ok { break }; send buf out port (0: own SMA) }
//	m.Receive(now, resp)      // every GetResp that comes back
//	m.Tick(now)               // at m.Deadline(): timeouts, retries, light sweeps
//
// Change detection (documented choice): a periodic light sweep reads
// SwitchInfo from every known switch; a switch sets PortStateChange when any
// of its ports goes down or comes up (IBA 14.2.5.4), and a set bit, an
// unanswered SMP or a changed NodeInfo starts a heavy sweep (rediscovery).
// This is OpenSM's light sweep; traps (IBA 14.2.5.1 Notice 128) are not
// sent by the emulated agents.
//
// Public API:
//
//	func New(cfg Config) *SM
//	func (m *SM) Start(now clock.Time)
//	func (m *SM) Poll(now clock.Time, buf mad.SMP) (port int, ok bool)
//	func (m *SM) Receive(now clock.Time, smp mad.SMP)
//	func (m *SM) Tick(now clock.Time)
//	func (m *SM) Deadline() clock.Time
//	func (m *SM) Idle() bool
//	func (m *SM) Stats() Stats
//	func (m *SM) Errors() []string
//	func (m *SM) Topology() *Topology        // last complete sweep
//	func (t *Topology) Node(guid) / NodeByDesc(desc) / Switches() / CAs() / LIDs()
//	func (t *Topology) Route(sw *Node, lid uint16) ([]*Node, bool)   // walk the LFTs
//	func (t *Topology) WriteIBNetDiscover(w io.Writer) error
//	func (t *Topology) WriteIBStat(w io.Writer) error
//	func (t *Topology) WriteRoutes(w io.Writer) error
package sm
