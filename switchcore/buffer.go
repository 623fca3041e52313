package switchcore

import (
	"fmt"

	"github.com/emufabric/emufabric/frame"
)

// Ingress buffer accounting with SONiC semantics (cc-anchors §4).
//
// Each PG owns a reserved part (BUFFER_PROFILE size), then borrows from its
// BUFFER_POOL's shared part up to a threshold, then — lossless PGs only —
// absorbs in-flight traffic in headroom (xoff) after sending XOFF.
//
// Threshold: in a dynamic pool a PG may hold alpha * (free shared pool)
// bytes of shared buffer, alpha = 2^dynamic_th. One congested PG on an
// otherwise empty pool of size S settles where s = alpha * (S - s), i.e.
// s = S * alpha / (1 + alpha): 1/2 for dynamic_th 0, 1/9 for -3. In a static
// pool the limit is static_th bytes.
//
// XOFF is sent when a lossless PG's next frame would not fit under its
// threshold; from then on frames that do not fit go to headroom. XON is sent
// when the headroom is empty and shared usage <= max(xon, limit - xon_offset)
// (the SONiC resume rule quoted in cc-anchors §4).
//
// Buffer is released when a frame leaves its egress queue (starts
// transmission) or is dropped after admission; headroom is released first,
// as in the HPCC/ns-3 MMU, so a PG leaves headroom as soon as it drains.

type poolState struct {
	size   int // shared bytes
	mode   PoolMode
	xoff   int // shared headroom pool size (0: private headroom)
	shared int // bytes of the shared part in use
	hdrm   int // bytes of the shared headroom pool in use
}

func (ps *poolState) free() int {
	if f := ps.size - ps.shared; f > 0 {
		return f
	}
	return 0
}

// account is one PG's or egress queue's usage of a profile and pool.
type account struct {
	prof *BufferProfile
	pool *poolState
	used int // reserved + shared bytes
}

// sharedUsed is the part of used beyond the reservation.
func (a *account) sharedUsed() int {
	if s := a.used - a.prof.Size; s > 0 {
		return s
	}
	return 0
}

// limit is the shared-buffer threshold in bytes, from the current free pool.
func (a *account) limit() int {
	if a.pool.mode == PoolStatic {
		return a.prof.StaticTh
	}
	th := a.prof.DynamicTh
	switch {
	case th <= -8:
		return 0
	case th >= 7:
		return a.pool.size // "infinite": bounded by the pool itself
	case th >= 0:
		return a.pool.free() << th
	default:
		return a.pool.free() >> -th
	}
}

// fits reports whether n more bytes stay within the reservation or the
// shared threshold, with the pool able to supply them.
func (a *account) fits(n int) bool {
	if a.used+n <= a.prof.Size {
		return true
	}
	grow := a.used + n - a.prof.Size - a.sharedUsed()
	return a.sharedUsed()+grow <= a.limit() && grow <= a.pool.free()
}

func (a *account) add(n int) {
	before := a.sharedUsed()
	a.used += n
	a.pool.shared += a.sharedUsed() - before
}

func (a *account) sub(n int) {
	before := a.sharedUsed()
	a.used -= n
	a.pool.shared += a.sharedUsed() - before
}

// pgState is one ingress priority group of a port.
type pgState struct {
	account
	lossless bool
	prios    uint8 // PFC priorities (TCs) mapped here and enabled on the port
	hdrm     int
	xoff     bool // we assert XOFF for this PG
}

func (s *Switch) initPG(p *port, pg int) error {
	g := &p.pg[pg]
	name := p.cfg.BufferPG[pg]
	if name == "" {
		return nil
	}
	g.prof = s.cfg.BufferProfiles[name]
	g.pool = s.pools[g.prof.Pool]
	for tc := range NumPriorities {
		if int(s.cfg.TCToPG[tc]) == pg && p.cfg.PFCEnable&(1<<tc) != 0 {
			g.prios |= 1 << tc
		}
	}
	g.lossless = g.prof.Lossless() && g.prios != 0
	return nil
}

// SetPGHeadroom sets the headroom (xoff, bytes) of a lossless ingress PG,
// as a buffer manager re-sizes a port's lossless profile when its speed
// or cable changes: the PG gets its own copy of its profile. Frames
// already in the headroom stay; a smaller one counts the excess as
// headroom overflow when the next frame arrives.
func (s *Switch) SetPGHeadroom(port, pg, xoff int) error {
	if port < 0 || port >= len(s.ports) || pg < 0 || pg >= NumPriorities {
		return fmt.Errorf("switchcore: no PG %d on port %d", pg, port)
	}
	g := &s.ports[port].pg[pg]
	if g.prof == nil || !g.prof.Lossless() {
		return fmt.Errorf("switchcore: port %s PG %d is not lossless", s.ports[port].cfg.Name, pg)
	}
	cp := *g.prof
	cp.Xoff = xoff
	g.prof = &cp
	return nil
}

// PGXoff is the headroom (xoff, bytes) of an ingress PG, 0 for a lossy one.
func (s *Switch) PGXoff(port, pg int) int {
	if g := &s.ports[port].pg[pg]; g.prof != nil {
		return g.prof.Xoff
	}
	return 0
}

// admit accounts f (already classified: f.PG, f.Priority) into its ingress
// PG. It returns false, having dropped and counted the frame, when a lossy PG
// is over its threshold. A lossless PG never drops.
func (s *Switch) admit(p *port, f *frame.Frame) bool {
	g := &p.pg[f.PG]
	n := f.Len()
	if g.prof == nil {
		s.drop(p, int(f.Priority), f, DropLossyThreshold)
		return false
	}
	if !g.lossless {
		if !g.fits(n) {
			s.drop(p, int(f.Priority), f, DropLossyThreshold)
			return false
		}
		g.add(n)
		s.pgWatermark(p, int(f.PG), g)
		return true
	}
	if g.hdrm == 0 && g.fits(n) {
		g.add(n)
		s.pgWatermark(p, int(f.PG), g)
		return true
	}
	// Over the threshold (or already draining headroom): XOFF and absorb.
	if !g.xoff {
		s.sendXoff(p, int(f.PG))
	}
	g.hdrm += n
	g.pool.hdrm += n
	if g.hdrm > g.prof.Xoff || (g.pool.xoff > 0 && g.pool.hdrm > g.pool.xoff) {
		// Headroom too small for what was in flight: a configuration error
		// (xoff below the round trip). Dropping would break the lossless
		// promise, so the frame is admitted beyond headroom and counted.
		pc := &p.c.Prio[f.Priority]
		pc.HeadroomOverflow++
		p.c.Drops[DropHeadroomOverflow]++
		pc.Drops[DropHeadroomOverflow]++
		s.emit(TraceEvent{Kind: TraceHeadroomOverflow, Port: p.idx, Prio: int(f.PG), Bytes: g.hdrm, Frame: f})
	}
	s.pgWatermark(p, int(f.PG), g)
	return true
}

func (s *Switch) pgWatermark(p *port, pg int, g *pgState) {
	c := &p.c.Prio[pg]
	if sh := g.sharedUsed(); sh > c.PGSharedWatermark {
		c.PGSharedWatermark = sh
	}
	if g.hdrm > c.PGHeadroomWatermark {
		c.PGHeadroomWatermark = g.hdrm
	}
}

// release returns f's ingress buffer (f.InPort, f.PG) and sends XON when
// the PG has drained enough.
func (s *Switch) release(f *frame.Frame) {
	if f.InPort < 0 || f.InPort >= len(s.ports) {
		return
	}
	p := &s.ports[f.InPort]
	if s.cfg.Fabric == FabricIB {
		s.ibRelease(p, f)
		return
	}
	g := &p.pg[f.PG]
	if g.prof == nil {
		return
	}
	n := f.Len()
	if h := min(n, g.hdrm); h > 0 {
		g.hdrm -= h
		g.pool.hdrm -= h
		n -= h
	}
	if n > 0 {
		g.sub(min(n, g.used))
	}
	if g.xoff && g.hdrm == 0 && g.sharedUsed() <= max(g.prof.Xon, g.limit()-g.prof.XonOffset) {
		s.sendXon(p, int(f.PG))
	}
}
