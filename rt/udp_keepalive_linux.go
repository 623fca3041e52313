package rt

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A UDP link has no carrier: a peer that died, a machine that went away or
// a firewall in between look like an idle wire. So each end sends a
// keepalive (emufabric's own, no standard's) every UDPHelloInterval: an
// 8-byte datagram, "EMUF", version 1, a flags byte (bit 0: this end is
// up), two zero bytes. An Ethernet frame is at least 14 bytes, so a
// keepalive is never taken for one (an emuswitch that predates them counts
// it as a malformed frame). Every datagram, frame or keepalive, shows the
// peer alive; one not heard for UDPDeadAfter is lost, and the link is down
// until it is heard again, as a PHY that lost its signal. The keepalive
// also carries the peer's administrative state (SetState), as a ring link's
// socket does, so a port set down by hand takes the far end down too.
// Both ends must send keepalives: a peer that predates them is lost
// whenever it sends nothing for UDPDeadAfter.
const (
	UDPHelloInterval = 250 * time.Millisecond
	UDPDeadAfter     = time.Second

	udpHelloLen     = 8
	udpHelloVersion = 1
	udpHelloUp      = 1 << 0
)

var udpHelloMagic = []byte("EMUF")

// udpHello builds the keepalive that announces up.
func udpHello(up bool) []byte {
	b := make([]byte, udpHelloLen)
	copy(b, udpHelloMagic)
	b[4] = udpHelloVersion
	if up {
		b[5] = udpHelloUp
	}
	return b
}

// parseUDPHello reports whether b is a keepalive and the state it
// announces. A keepalive of another version is one still (the peer is
// alive); its flags are read as version 1's.
func parseUDPHello(b []byte) (ok, up bool) {
	if len(b) != udpHelloLen || !bytes.Equal(b[:4], udpHelloMagic) {
		return false, false
	}
	return true, b[5]&udpHelloUp != 0
}

// udpPeer is a UDP link's view of its peer: when it was last heard, what
// it last announced, and the keepalive goroutine.
//
// Locks: mu guards the state; cbMu is taken before mu by whatever changes
// the state, and held while the callback runs, so callbacks come in the
// order of the changes. The callback runs outside mu: SetState and
// PeerState take mu only, so a callback that blocks (a daemon loop's full
// queue) cannot stall the loop that calls them.
type udpPeer struct {
	start     time.Time
	lastHeard atomic.Int64 // since start, ns, |1; 0: never heard
	lost      atomic.Bool  // not heard for deadAfter (or never)
	interval  atomic.Int64 // ns
	deadAfter atomic.Int64 // ns
	silences  atomic.Uint64

	cbMu     sync.Mutex
	mu       sync.Mutex
	reported PeerState // what the callback last heard (or was registered against)
	peerDown bool      // the peer's last announcement: set down
	adminUp  bool      // ours, sent in every keepalive
	onPeer   func(PeerState)
	started  bool
	closed   bool

	kick chan struct{} // send a keepalive now
	quit chan struct{}
	wg   sync.WaitGroup
}

func (p *udpPeer) init() {
	p.start = time.Now()
	p.lost.Store(true)
	p.adminUp = true
	p.reported = PeerState{Silent: true}
	p.interval.Store(int64(UDPHelloInterval))
	p.deadAfter.Store(int64(UDPDeadAfter))
	p.kick = make(chan struct{}, 1)
	p.quit = make(chan struct{})
}

// stateLocked is the state the link shows. Called with mu held.
func (p *udpPeer) stateLocked() PeerState {
	lost := p.lost.Load()
	return PeerState{Up: !lost && !p.peerDown, Silent: lost}
}

// update changes the state with fn (under mu) and tells the callback
// when what the link shows changed.
func (p *udpPeer) update(fn func()) {
	p.cbMu.Lock()
	defer p.cbMu.Unlock()
	p.mu.Lock()
	fn()
	st := p.stateLocked()
	changed, cb := st != p.reported, p.onPeer
	p.reported = st
	p.mu.Unlock()
	if changed && cb != nil {
		cb(st)
	}
}

// heard records a batch of datagrams from the peer (Read's goroutine),
// once per batch so that a peer first heard in a keepalive that says it
// is set down never shows up for a moment: hello says whether the batch
// held a keepalive, up what the last one announced. Cheap when the peer
// was already alive and only frames came.
func (u *UDP) heard(hello, up bool) {
	p := &u.peer
	p.lastHeard.Store(int64(time.Since(p.start)) | 1)
	if !hello && !p.lost.Load() {
		return
	}
	wasLost := false
	p.update(func() {
		wasLost = p.lost.Swap(false)
		if hello {
			p.peerDown = !up
		}
	})
	if wasLost {
		// Answer at once, so the far end need not wait an interval to
		// hear that we are here too.
		u.kickHello()
	}
}

func (u *UDP) kickHello() {
	select {
	case u.peer.kick <- struct{}{}:
	default:
	}
}

// startKeepalive starts the keepalive goroutine once the peer is known;
// not after Close.
func (u *UDP) startKeepalive() {
	p := &u.peer
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closed {
		return
	}
	p.started = true
	p.wg.Add(1)
	go u.keepalive()
}

// keepalive sends a keepalive every interval (and when kicked) and declares
// the peer lost when it was not heard for deadAfter.
func (u *UDP) keepalive() {
	p := &u.peer
	defer p.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-p.kick:
			if !t.Stop() {
				<-t.C
			}
		case <-p.quit:
			return
		}
		if last := p.lastHeard.Load(); !p.lost.Load() && time.Since(p.start)-time.Duration(last) > time.Duration(p.deadAfter.Load()) && !u.rxPending() {
			p.update(func() {
				p.lost.Store(true)
				if p.lastHeard.Load() != last {
					// heard raced us: it stored its time before it
					// looked at lost, so the peer is alive after all.
					p.lost.Store(false)
					return
				}
				p.silences.Add(1)
			})
		}
		p.mu.Lock()
		hello := udpHello(p.adminUp)
		p.mu.Unlock()
		// A peer not up yet refuses it (ECONNREFUSED): as a frame
		// into a dead wire, nothing to do.
		u.wmu.Lock()
		_, _ = sendmmsg(u.rc, u.tx, [][]byte{hello}, 0)
		u.wmu.Unlock()
		t.Reset(time.Duration(p.interval.Load()))
	}
}

// rxPending reports whether datagrams wait in the socket unread: then the
// peer spoke and our reader is late (a stalled process, a busy loop), and
// the silence is ours, not the peer's.
func (u *UDP) rxPending() bool {
	n := 0
	_ = u.rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n > 0
}

// setKeepalive changes the keepalive's interval and the silence after
// which the peer is lost (UDPHelloInterval and UDPDeadAfter by default;
// tests shorten them). deadAfter should be several intervals.
func (u *UDP) setKeepalive(interval, deadAfter time.Duration) {
	u.peer.interval.Store(int64(interval))
	u.peer.deadAfter.Store(int64(deadAfter))
	u.kickHello()
}

// SetState tells the peer that this end of the link was set up or down,
// in the next keepalive, which goes at once.
func (u *UDP) SetState(up bool) error {
	u.peer.mu.Lock()
	u.peer.adminUp = up
	u.peer.mu.Unlock()
	u.kickHello()
	return nil
}

// PeerState reports whether the peer was heard within the keepalive's
// silence and did not announce its end down. Down and silent until it is
// first heard.
func (u *UDP) PeerState() PeerState {
	u.peer.mu.Lock()
	defer u.peer.mu.Unlock()
	return u.peer.stateLocked()
}

// OnPeerState sets fn to hear every change of PeerState from now on, in
// order, on the goroutine that saw it (the reader or the keepalive). fn
// may block, but must not call back into the link. Register before
// reading PeerState: a change between the two is then heard.
func (u *UDP) OnPeerState(fn func(PeerState)) {
	p := &u.peer
	p.cbMu.Lock()
	defer p.cbMu.Unlock()
	p.mu.Lock()
	p.onPeer = fn
	p.reported = p.stateLocked()
	p.mu.Unlock()
}

// stopKeepalive ends the keepalive goroutine (Close). Close must not be
// called from a goroutine a callback could be waiting for: the keepalive
// may be in one.
func (u *UDP) stopKeepalive() {
	p := &u.peer
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.quit)
	p.wg.Wait()
}
