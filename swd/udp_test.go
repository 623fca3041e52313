package swd

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/rt"
)

// TestUDPPortLiveness: a UDP port is down until its peer is heard, up
// while the peer's keepalives or frames arrive, down (peer silent) when
// they stop, with frames toward it dropped as link_down and the link loss
// counted, and up again when a peer answers on the same address. A port
// set down by the link op tells the peer in its keepalive.
func TestUDPPortLiveness(t *testing.T) {
	dir := t.TempDir()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ours := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	peerRx := make(chan []byte, 64)
	// startPeer binds the far end (a switch on another machine) with a
	// reader that keeps its keepalives going and hands over frames.
	startPeer := func(addr netip.AddrPort) *rt.UDP {
		u, err := rt.ListenUDP(addr)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			bufs, sizes := [][]byte{make([]byte, 2048)}, []int{0}
			for {
				n, err := u.Read(bufs, sizes, 0)
				if err != nil {
					return
				}
				for i := range n {
					peerRx <- bytes.Clone(bufs[i][:sizes[i]])
				}
			}
		}()
		return u
	}
	peer := startPeer(netip.MustParseAddrPort("127.0.0.1:0"))
	peerAddr := peer.LocalAddr()

	o := Options{Lab: testLab, Node: "sw1", Control: filepath.Join(dir, "ctl.sock")}
	for _, uri := range []string{"p1=seqpacket-listen:" + filepath.Join(dir, "p1.sock"), fmt.Sprintf("p2=udp:%s,%s", ours, peerAddr)} {
		b, err := ParsePortFlag(uri)
		if err != nil {
			t.Fatal(err)
		}
		o.Ports = append(o.Ports, b)
	}
	var logBuf syncBuffer // the daemon writes while the test reads
	d, err := New(o, &logBuf)
	if err != nil {
		t.Fatal(err)
	}
	d.Start()
	t.Cleanup(func() {
		d.Close()
		peer.Close()
		if t.Failed() {
			t.Logf("daemon log:\n%s", logBuf.String())
		}
	})
	td := &testDaemon{d: d, ctl: o.Control}
	p2 := func() PortStatus {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		return st.Ports[1]
	}
	if err := peer.Connect(ours); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p2 up once the peer is heard", func() bool { return p2().Up })
	if td.link[0], err = rt.DialSeqpacket(o.Ports[0].Path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p1 up", func() bool {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		return st.Ports[0].Up
	})
	f := udpFrame(100, 0)
	send(t, td.link[0], f)
	select {
	case got := <-peerRx:
		if !bytes.Equal(got, f) {
			t.Fatalf("peer got %x, want %x", got, f)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("frame not forwarded over the UDP port")
	}

	// Set down by hand: the peer hears it in the next keepalive.
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p2", State: "down"}, &st)
	waitFor(t, "the peer to hear p2 down", func() bool { st := peer.PeerState(); return !st.Up && !st.Silent })
	time.Sleep(rt.UDPDeadAfter + 500*time.Millisecond)
	if s := p2(); s.PeerSilent || s.PeerDown || peer.PeerState().Silent {
		t.Fatalf("keepalives stopped while p2 was set down: %+v, the peer %+v", s, peer.PeerState())
	}
	td.call(t, Request{Op: "link", Port: "p2", State: "up"}, &st)
	waitFor(t, "the peer to hear p2 up", func() bool { return peer.PeerState().Up })

	// The peer dies: silence, then down.
	peer.Close()
	waitFor(t, "p2 down for the silence", func() bool { s := p2(); return !s.Up && s.PeerDown && s.PeerSilent })
	send(t, td.link[0], f)
	waitFor(t, "link_down drop", func() bool { return td.counters(t, "p2")["drop_link_down"] == 1 })
	if n := td.counters(t, "p2")["link_down_events_phy"]; n != 2 {
		t.Errorf("link_down_events_phy %d, want 2 (set down by hand, then the silence)", n)
	}
	if !strings.Contains(logBuf.String(), "port p2: the peer is silent") {
		t.Errorf("the log does not say the peer went silent")
	}

	// A new peer on the same address brings it back.
	peer = startPeer(peerAddr)
	if err := peer.Connect(ours); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p2 up again", func() bool { s := p2(); return s.Up && !s.PeerSilent })
}
