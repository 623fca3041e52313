package rt

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
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
type udpPeer struct {
	start     time.Time
	lastHeard atomic.Int64 // since start, ns; 0: never heard
	lost      atomic.Bool  // not heard for deadAfter (or never)
	interval  atomic.Int64 // ns
	deadAfter atomic.Int64 // ns

	mu       sync.Mutex // orders the reported state and its callbacks
	reported bool       // the state OnPeerState's callback last heard
	peerDown bool       // the peer's last announcement: set down
	adminUp  bool       // ours, sent in every keepalive
	onPeer   func(up bool)

	kick    chan struct{} // send a keepalive now
	quit    chan struct{}
	wg      sync.WaitGroup
	started bool
}

func (p *udpPeer) init() {
	p.start = time.Now()
	p.lost.Store(true)
	p.adminUp = true
	p.interval.Store(int64(UDPHelloInterval))
	p.deadAfter.Store(int64(UDPDeadAfter))
	p.kick = make(chan struct{}, 1)
	p.quit = make(chan struct{})
}

// up is the state the link shows: the peer heard lately and not set down.
// Called with mu held.
func (p *udpPeer) upLocked() bool { return !p.lost.Load() && !p.peerDown }

// reportLocked tells the callback when the shown state changed.
func (p *udpPeer) reportLocked() {
	if up := p.upLocked(); up != p.reported {
		p.reported = up
		if p.onPeer != nil {
			p.onPeer(up)
		}
	}
}

// heard records a datagram from the peer (Read's goroutine): cheap when the
// peer was already alive.
func (u *UDP) heard() {
	p := &u.peer
	p.lastHeard.Store(int64(time.Since(p.start)) | 1)
	if !p.lost.Load() {
		return
	}
	p.mu.Lock()
	wasLost := p.lost.Swap(false)
	p.reportLocked()
	p.mu.Unlock()
	if wasLost {
		// Answer at once, so the far end need not wait an interval to
		// hear that we are here too.
		u.kickHello()
	}
}

// heardHello records the state a keepalive announced.
func (u *UDP) heardHello(up bool) {
	p := &u.peer
	p.mu.Lock()
	p.peerDown = !up
	p.reportLocked()
	p.mu.Unlock()
}

func (u *UDP) kickHello() {
	select {
	case u.peer.kick <- struct{}{}:
	default:
	}
}

// startKeepalive starts the keepalive goroutine once the peer is known.
func (u *UDP) startKeepalive() {
	p := &u.peer
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
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
		p.mu.Lock()
		hello := udpHello(p.adminUp)
		if last := p.lastHeard.Load(); !p.lost.Load() && time.Since(p.start)-time.Duration(last) > time.Duration(p.deadAfter.Load()) {
			p.lost.Store(true)
			if p.lastHeard.Load() != last {
				// heard raced us: it stored its time before it
				// looked at lost, so the peer is alive after all.
				p.lost.Store(false)
			} else {
				u.Silences.Add(1)
				p.reportLocked()
			}
		}
		p.mu.Unlock()
		// A peer not up yet refuses it (ECONNREFUSED): as a frame
		// into a dead wire, nothing to do.
		u.wmu.Lock()
		_, _ = sendmmsg(u.rc, u.tx, [][]byte{hello}, 0)
		u.wmu.Unlock()
		t.Reset(time.Duration(p.interval.Load()))
	}
}

// SetKeepalive changes the keepalive's interval and the silence after
// which the peer is lost (UDPHelloInterval and UDPDeadAfter by default;
// tests shorten them). deadAfter should be several intervals.
func (u *UDP) SetKeepalive(interval, deadAfter time.Duration) {
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

// PeerUp reports whether the peer was heard within the keepalive's
// silence and did not announce its end down. False until it is first
// heard.
func (u *UDP) PeerUp() bool {
	u.peer.mu.Lock()
	defer u.peer.mu.Unlock()
	return u.peer.upLocked()
}

// PeerLost reports whether the peer is silent: never heard, or not for
// the keepalive's silence.
func (u *UDP) PeerLost() bool { return u.peer.lost.Load() }

// OnPeerState sets fn to hear every change of PeerUp from now on (fn must
// not block and must not call back into the link). The state before it
// was set is in PeerUp.
func (u *UDP) OnPeerState(fn func(up bool)) {
	u.peer.mu.Lock()
	u.peer.onPeer = fn
	u.peer.reported = u.peer.upLocked()
	u.peer.mu.Unlock()
}

// stopKeepalive ends the keepalive goroutine (Close).
func (u *UDP) stopKeepalive() {
	close(u.peer.quit)
	u.peer.wg.Wait()
}
