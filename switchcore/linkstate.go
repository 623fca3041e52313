package switchcore

import (
	"maps"
	"slices"
	"strings"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/wire"
)

// Link-state routing (RoCE fabrics). A data-center fabric's switches run
// a routing protocol (OSPF, IS-IS, BGP with BFD) and route around a link
// that goes down; a switch that only takes the dead member out of its own
// ECMP groups (lpm.live) still receives, from its neighbours, traffic
// for the hosts it can no longer reach. Each switch advertises which of
// its ports are down (wire.LinkState: the whole list, every time one
// changes) on its links to other switches; every switch keeps the newest
// advertisement of every origin, passes a new one on, and sends its whole
// database to a neighbour whose link comes up. The driver gets the
// database each time the set of down links it describes changes,
// computes routes from the topology it knows without those links (the
// shortest paths the switches would converge to), and installs them with
// SetRoutes. So in the simulator and in real time alike the fabric
// converges in the time the advertisements take to cross it.

// lsaEntry is the newest advertisement of one origin.
type lsaEntry struct {
	epoch, seq uint64
	topology   uint64 // the origin's lab file's digest (0: not given)
	down       []string
}

func (e *lsaEntry) newer(epoch, seq uint64) bool {
	return epoch > e.epoch || epoch == e.epoch && seq > e.seq
}

type linkState struct {
	epoch, seq uint64
	peers      []string   // per port: the switch of the fabric at its other end, "" for none
	refresh    clock.Time // re-originate this often once advertising (0: never)
	timer      clock.Timer
	origins    map[string]bool // the fabric's switches: advertisements of others are refused
	db         map[string]*lsaEntry
	onChange   func(db map[string][]string)
	last       string         // the down set onChange last saw, for change detection
	scratch    wire.LinkState // receiveLinkState's decoding; its Down is its own
	// topology is this switch's lab file's digest, sent in its
	// advertisements (0: none); an origin whose newest advertisement's
	// digest differs is in mismatched, told to onMismatch when it enters.
	topology   uint64
	onMismatch func(origin string, theirs uint64)
	mismatched map[string]bool
}

// EnableLinkState turns on the switch's link-state routing: peers[i] names
// the switch at the other end of port i, "" where there is none (a host):
// advertisements go out on the ports to switches, and are taken from
// those only, so a host cannot inject one; origins names the fabric's
// switches (an advertisement from any other is refused); epoch orders this
// life's advertisements after an earlier one's (a restarted daemon: a
// wall-clock reading; the simulator: 0); and onChange gets, whenever it
// changes, every origin's ports that are down. Call it before the first
// frame; the switch sends its first advertisement when a port changes
// state (a fabric whose links never change sends none).
//
// Nothing acknowledges an advertisement: one lost (a lossy link, a
// corrupted frame) is repaired by the origin's next, every refresh once
// it has advertised (as OSPF's LSRefreshTime; 0: never).
func (s *Switch) EnableLinkState(epoch uint64, peers []string, origins []string, refresh clock.Time, onChange func(db map[string][]string)) {
	if s.cfg.Fabric == FabricIB {
		return // the subnet manager routes an IB fabric
	}
	o := make(map[string]bool, len(origins))
	for _, n := range origins {
		o[n] = true
	}
	s.ls = &linkState{epoch: min(epoch, maxEpoch), peers: peers, origins: o,
		db: map[string]*lsaEntry{}, onChange: onChange, refresh: refresh}
	if refresh > 0 {
		s.ls.timer = s.clk.NewTimer(s.refreshLSA)
	}
}

// maxEpoch is the highest epoch a switch takes: an advertisement at the
// very last number could never be outnumbered, and one claiming a
// switch's own name would start an exchange that never ends.
const maxEpoch = ^uint64(0) - 1

// SetLinkStateTopology gives the digest of the fabric as this switch's
// configuration describes it, sent in its advertisements; an
// advertisement of another switch whose digest differs (its lab file is
// not this one's: their routes will disagree) is counted
// (link_state_mismatch) and onMismatch is told of that origin when its
// newest advertisement starts to differ, and again, with theirs equal to
// digest, when it agrees again. After EnableLinkState.
func (s *Switch) SetLinkStateTopology(digest uint64, onMismatch func(origin string, theirs uint64)) {
	if s.ls == nil {
		return
	}
	s.ls.topology, s.ls.onMismatch = digest, onMismatch
}

// LinkStateMismatched is the origins whose newest advertisement carries
// a topology digest other than this switch's.
func (s *Switch) LinkStateMismatched() []string {
	if s.ls == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.ls.mismatched))
}

// noteTopology records whether origin's newest advertisement carries
// another digest than ours. The newest decides, not any one seen: a
// switch restarted with the right lab file agrees from its next
// advertisement on, where it stayed listed as mismatched for good (and
// `emulab status` said so); one that differs again is told again.
func (s *Switch) noteTopology(origin string, differs bool) {
	ls := s.ls
	if !differs {
		if ls.mismatched[origin] {
			delete(ls.mismatched, origin)
			if ls.onMismatch != nil {
				ls.onMismatch(origin, ls.topology) // theirs is ours again
			}
		}
		return
	}
	if ls.mismatched[origin] {
		return
	}
	if ls.mismatched == nil {
		ls.mismatched = map[string]bool{}
	}
	ls.mismatched[origin] = true
	if ls.onMismatch != nil {
		ls.onMismatch(origin, ls.db[origin].topology)
	}
}

// refreshLSA advertises this switch's ports again, with the next
// number, which every switch takes and passes on: one that missed an
// advertisement of this switch (a lost or corrupted frame, on any hop)
// has the truth again within a refresh period.
func (s *Switch) refreshLSA() { s.originate() }

// LinkStateDB is the advertisements the switch holds: origin switch ->
// its ports that are down.
func (s *Switch) LinkStateDB() map[string][]string {
	out := map[string][]string{}
	if s.ls != nil {
		for o, e := range s.ls.db {
			out[o] = slices.Clone(e.down)
		}
	}
	return out
}

// originate advertises this switch's down ports (a port changed state).
func (s *Switch) originate() {
	ls := s.ls
	if ls.seq == ^uint64(0) && ls.epoch < maxEpoch {
		ls.epoch, ls.seq = ls.epoch+1, 0 // a sequence that wrapped would be older than all before
	}
	if ls.seq < ^uint64(0) {
		ls.seq++
	}
	if ls.timer != nil {
		ls.timer.Reset(s.clk.Now() + ls.refresh)
	}
	var down []string
	for i := range s.ports {
		if !s.ports[i].up {
			down = append(down, s.cfg.Ports[i].Name)
		}
	}
	ls.db[s.cfg.Name] = &lsaEntry{epoch: ls.epoch, seq: ls.seq, topology: ls.topology, down: down}
	s.floodLSA(s.cfg.Name, -1)
	s.linkStateChanged()
}

// linkStateUp sends a neighbour whose link just came up every
// advertisement held (originate sent ours), so a switch that (re)starts
// learns the fabric's state at once, and one that was cut off replaces
// what changed meanwhile: an advertisement listing nothing down included,
// which supersedes an older one that listed a port (OSPF's database
// exchange, RFC 2328 section 10).
func (s *Switch) linkStateUp(port int) {
	if s.ls == nil || !s.isFabric(port) {
		return
	}
	for _, o := range slices.Sorted(maps.Keys(s.ls.db)) {
		if o != s.cfg.Name {
			s.sendLSA(&s.ports[port], o)
		}
	}
}

// sendDB sends every advertisement held, ours included, on port.
func (s *Switch) sendDB(port int) {
	if !s.ports[port].up {
		return
	}
	for _, o := range slices.Sorted(maps.Keys(s.ls.db)) {
		s.sendLSA(&s.ports[port], o)
	}
}

func (s *Switch) isFabric(port int) bool { return port < len(s.ls.peers) && s.ls.peers[port] != "" }

// receiveLinkState takes an advertisement arriving on p: one from a
// switch of the fabric, on a link to one, or it is refused and counted
// (link_state_refused).
func (s *Switch) receiveLinkState(p *port, f *frame.Frame) {
	ls := s.ls
	if ls == nil || !s.isFabric(p.idx) {
		p.c.LinkStateRefused++
		f.Put()
		return
	}
	in := &ls.scratch
	err := wire.DecodeLinkState(f.Data, in)
	f.Put()
	if err != nil {
		p.c.Drops[DropMalformed]++
		return
	}
	if in.Origin != s.cfg.Name && !ls.origins[in.Origin] || in.Epoch > maxEpoch {
		p.c.LinkStateRefused++
		return
	}
	p.c.LinkStateRx++
	differs := in.Topology != 0 && ls.topology != 0 && in.Topology != ls.topology
	if differs && in.Origin != s.cfg.Name {
		// Ours from an earlier life (another lab file then) is not
		// another switch's fabric.
		p.c.LinkStateMismatch++
	}
	if in.Origin == s.cfg.Name {
		if !(&lsaEntry{epoch: ls.epoch, seq: ls.seq}).newer(in.Epoch, in.Seq) {
			if in.Epoch != ls.epoch || in.Seq != ls.seq {
				// An older one of ours: the neighbour missed our newest
				// (sent while its end of the link was still down).
				s.sendLSA(p, s.cfg.Name)
			}
			return // our own, back round a cycle
		}
		// Ours from an earlier life still circulating with a higher
		// number: outnumber it (originate moves to the next epoch if
		// the sequence is spent).
		ls.epoch, ls.seq = in.Epoch, in.Seq
		s.originate()
		return
	}
	e := ls.db[in.Origin]
	if e != nil && !e.newer(in.Epoch, in.Seq) {
		if e.epoch != in.Epoch || e.seq != in.Seq {
			// Older than ours: the neighbour missed the newer one (it was
			// cut off); send it ours (RFC 2328 13, step 8).
			s.sendLSA(p, in.Origin)
		}
		return
	}
	ls.db[in.Origin] = &lsaEntry{epoch: in.Epoch, seq: in.Seq, topology: in.Topology, down: slices.Clone(in.Down)}
	s.noteTopology(in.Origin, differs)
	s.floodLSA(in.Origin, p.idx)
	if in.Origin == ls.peers[p.idx] && (e == nil || !slices.Equal(e.down, in.Down)) {
		// The neighbour itself says its ports changed, as it does when
		// its end of the link comes up: what we sent while its end was
		// down was lost there, so it gets our database again. A refresh,
		// the same ports, does not ask for it (the refreshes repair the
		// rarer losses), and the exchanges end: what we send it is
		// nothing new about itself.
		s.sendDB(p.idx)
	}
	s.linkStateChanged()
}

// floodLSA sends origin's advertisement on every up fabric port but from.
func (s *Switch) floodLSA(origin string, from int) {
	for i := range s.ports {
		if i != from && s.isFabric(i) && s.ports[i].up {
			s.sendLSA(&s.ports[i], origin)
		}
	}
}

// sendLSA queues origin's advertisement on p's control queue, ahead of
// data as PFC is.
func (s *Switch) sendLSA(p *port, origin string) {
	e := s.ls.db[origin]
	if e == nil {
		return // ours, before we first advertised
	}
	l := &wire.LinkState{Origin: origin, Epoch: e.epoch, Seq: e.seq, Topology: e.topology, Down: e.down}
	n := wire.LinkStateLen(l)
	if n < 0 || n > frame.MaxFrame || n-wire.EthernetSize > p.cfg.MTU {
		// More ports down than one frame carries: counted, not sent.
		p.c.Drops[DropMTUExceeded]++
		return
	}
	f := s.pool.Get(n)
	wire.EncodeLinkState(f.Data, p.mac, l)
	f.Priority = 7
	p.c.LinkStateTx++
	p.ctrl.push(f)
	s.tryTx(p)
}

// linkStateChanged tells the driver the database when it differs from the
// last time: the down ports, and which switches have advertised at all
// (a driver tells a link still coming up from one that went down by it).
func (s *Switch) linkStateChanged() {
	ls := s.ls
	db := make(map[string][]string, len(ls.db))
	var key strings.Builder
	for _, o := range slices.Sorted(maps.Keys(ls.db)) {
		e := ls.db[o]
		db[o] = slices.Clone(e.down) // an empty list too: that switch has spoken
		key.WriteString(o)
		for _, d := range e.down {
			key.WriteByte(0)
			key.WriteString(d)
		}
		key.WriteByte(1)
	}
	if key.String() == ls.last {
		return
	}
	ls.last = key.String()
	if ls.onChange != nil {
		ls.onChange(db)
	}
}
