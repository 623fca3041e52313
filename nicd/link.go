package nicd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/emufabric/emufabric/rt"
)

// openLink binds the link port: an in-process link or a dialled or UDP
// one is attached now; a listening port accepts its peer in the
// background. Dialling retries until DialTimeout or until ctx is done.
func (d *Daemon) openLink(ctx context.Context) error {
	if d.opts.Link != nil {
		return d.attachLink(d.opts.Link)
	}
	switch d.uri.Kind {
	case "seqpacket-dial":
		d.log.Printf("port %s: dialling", d.uri)
		deadline := time.Now().Add(d.opts.DialTimeout)
		retry := time.NewTimer(0)
		defer retry.Stop()
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("--port %s: %w", d.uri, ctx.Err())
			case <-retry.C:
			}
			sp, err := rt.DialSeqpacket(d.uri.Path)
			if err == nil {
				var l rt.Link
				if l, err = d.linkOver(sp, false); err == nil {
					return d.attachLink(l)
				}
				d.log.Printf("port %s: %v", d.uri, err)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("--port %s: %w", d.uri, err)
			}
			retry.Reset(20 * time.Millisecond)
		}
	case "udp":
		u, err := rt.DialUDP(d.uri.Local, d.uri.Remote)
		if err != nil {
			return fmt.Errorf("--port %s: %w", d.uri, err)
		}
		return d.attachLink(u)
	}
	if err := removeStaleSocket(d.uri.Path, "unixpacket"); err != nil {
		return fmt.Errorf("--port %s: %w", d.uri, err)
	}
	ln, err := rt.ListenSeqpacket(d.uri.Path)
	if err != nil {
		return fmt.Errorf("--port %s: %w", d.uri, err)
	}
	d.mu.Lock()
	d.listener = ln
	d.mu.Unlock()
	go d.accept(ln)
	return nil
}

// accept waits for the one peer of a listening port and attaches it on
// the loop. The socket file is removed once the peer is connected.
func (d *Daemon) accept(ln *rt.SeqpacketListener) {
	for {
		sp, err := ln.Accept()
		d.mu.Lock()
		d.listener = nil
		d.mu.Unlock()
		ln.Close()
		if err != nil {
			if !errors.Is(err, rt.ErrClosed) {
				d.setLink(LinkDown, err)
				d.log.Printf("port %s: accept: %v", d.uri, err)
			}
			return
		}
		link, err := d.linkOver(sp, true)
		if err != nil {
			// The peer left before taking the rings, or is not using
			// them: wait for the next, and say why in the status.
			d.log.Printf("port %s: %v", d.uri, err)
			if ln = d.listenAgain(); ln == nil {
				return
			}
			d.setLink(LinkWaiting, err)
			continue
		}
		ok := d.loop.Post(func() {
			if err := d.attachLink(link); err != nil {
				d.log.Printf("port %s: %v", d.uri, err)
			}
		})
		if !ok {
			link.Close()
		}
		return
	}
}

// linkOver is the link a freshly connected socket carries: the socket
// itself, or the shared-memory rings set up over it (shm-listen/shm-dial:
// the accepting side creates them, the dialling side joins).
func (d *Daemon) linkOver(sp *rt.Seqpacket, accepted bool) (rt.Link, error) {
	if !d.uri.Shm {
		return sp, nil
	}
	return rt.ShmOver(sp, accepted, d.closing)
}

// listenAgain listens on the port's path again (the peer went away); nil
// when that fails or the daemon is closing.
func (d *Daemon) listenAgain() *rt.SeqpacketListener {
	ln, err := rt.ListenSeqpacket(d.uri.Path)
	if err != nil {
		d.log.Printf("port %s: listen again: %v", d.uri, err)
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.closing:
		ln.Close()
		return nil
	default:
	}
	d.listener = ln
	d.linkState = LinkWaiting
	return ln
}

// attachLink connects the NIC to link. Before Run or on the loop.
func (d *Daemon) attachLink(link rt.Link) error {
	p, err := d.loop.Attach(link, rt.PortConfig{Index: 0, Name: d.cfg.NIC.Name + ":" + d.cfg.Port,
		Log: d.rtLogger(), TxQueue: linkTxQueue, Deliver: d.fromLink})
	if err != nil {
		link.Close()
		return err
	}
	d.linkPort = p
	d.mu.Lock()
	if d.pubLink != nil {
		d.linkBase.Add(d.pubLink)
	}
	d.pubLink = p
	d.mu.Unlock()
	if d.gate != nil {
		d.gate.retire()
	}
	d.gate = newTxGate(d.nic, p, d.clk)
	d.gate.tap = d.capture
	d.gate.admin = !d.adminDown
	d.stateLink = nil
	d.setPeer(rt.PeerState{Up: true})
	if sl, ok := link.(rt.StateLink); ok {
		// The switch port's state (set down by hand) and ours travel on
		// the link, as a cable's carrier: a ring link's socket, a UDP
		// link's keepalives (which also show a peer gone silent). On IB
		// the port goes Down, and Init when the switch's comes back; the
		// subnet manager activates it.
		// The callback first, then the state: no change falls between.
		d.stateLink = sl
		sl.OnPeerState(func(st rt.PeerState) {
			d.loop.Post(func() {
				if d.linkPort != p {
					return
				}
				d.setPeer(st)
				d.gate.apply()
				d.syncCarrier()
				d.log.Printf("port %s: %s", d.cfg.Port, rt.PeerStateWords(st))
			})
		})
		d.setPeer(sl.PeerState())
		if d.adminDown {
			sl.SetState(false)
		}
	}
	d.nic.Attach(d.gate)
	d.gate.setUp(true)
	d.setLink(LinkUp, nil)
	// "peer gone, redialling" (or "listening again") was logged when the
	// link went: say when it is back, as emuswitch says "peer connected".
	if d.attaches++; d.attaches > 1 {
		d.log.Printf("port %s: peer connected again on %s: link up", d.cfg.Port, d.uri)
	}
	d.startSM()
	go func() {
		<-p.Done()
		d.loop.Post(func() {
			if d.linkPort == p {
				d.gate.setUp(false)
			}
		})
		if err := p.Err(); err != nil && !errors.Is(err, rt.ErrClosed) {
			d.setLink(LinkDown, err)
		} else {
			d.setLink(LinkDown, errors.New("peer closed the link"))
		}
		d.reconnect(p)
	}()
	return nil
}

// reconnect waits for the peer to come back after the link went away (a
// restarted daemon): a listening port listens again on its path, a
// dialling port redials until it connects or the daemon closes. UDP
// links and in-process links have no connection to lose.
func (d *Daemon) reconnect(old *rt.Port) {
	select {
	case <-d.closing:
		return
	default:
	}
	switch {
	case d.opts.Link != nil || d.uri.Kind == "udp":
		return
	case d.uri.Kind == "seqpacket-listen":
		ln := d.listenAgain()
		if ln == nil {
			return
		}
		d.log.Printf("port %s: peer gone, listening again", d.uri)
		old.Close()
		d.accept(ln)
	default:
		old.Close()
		d.log.Printf("port %s: peer gone, redialling", d.uri)
		for {
			sp, err := rt.DialSeqpacket(d.uri.Path)
			if err == nil {
				l, err := d.linkOver(sp, false)
				if err != nil {
					d.log.Printf("port %s: %v", d.uri, err)
				} else {
					if !d.loop.Post(func() {
						if err := d.attachLink(l); err != nil {
							d.log.Printf("port %s: %v", d.uri, err)
						}
					}) {
						l.Close()
					}
					return
				}
			}
			select {
			case <-d.closing:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (d *Daemon) setLink(state string, err error) {
	d.mu.Lock()
	d.linkState, d.linkErr = state, err
	d.mu.Unlock()
	d.syncCarrier()
}

// syncCarrier shows the NIC's link to its host as a NIC's PHY does: the
// TAP has carrier while the link to the switch is up and not set down by
// the link op, and the host's `ip link` says NO-CARRIER otherwise (its
// kernel then sends nothing on it and takes its routes out of use). Any
// goroutine; the ioctl is made under d.mu so that two changes cannot land
// in the wrong order.
func (d *Daemon) syncCarrier() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.carrierTAP == nil {
		return
	}
	on := d.linkState == LinkUp && !d.adminDownFlag.Load() && !d.peerDownFlag.Load()
	if err := d.carrierTAP.SetCarrier(on); err != nil {
		d.log.Printf("tap %s: carrier: %v", d.carrierTAP.Name(), err)
	}
}

// linkStats are the link's transport counters, over the ports it had
// (as emuswitch's trStats).
type linkStats = rt.PortTotals

// linkCounters are the link's transport counters since the daemon
// started: those of the links it had before (linkBase) plus the current
// one's; ok is false while it never had a link.
func (d *Daemon) linkCounters() (s linkStats, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s = d.linkBase
	if d.pubLink != nil {
		s.Add(d.pubLink)
	}
	return s, d.pubLink != nil
}

// LinkState is the link's state and, when down, why.
func (d *Daemon) LinkState() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.linkState, d.linkErr
}

// setPeer records the far end's state as the link shows it: the gate
// holds transmission while it is down; status reads the flags. Loop
// goroutine.
func (d *Daemon) setPeer(st rt.PeerState) {
	d.gate.peer = st.Up
	d.peerDownFlag.Store(!st.Up)
	d.peerSilentFlag.Store(!st.Up && st.Silent)
}
