package rt

import (
	"bytes"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// udpEnd is one end of a test UDP link with a reader that keeps Read
// running (keepalives are consumed there) and collects frames and state
// changes.
type udpEnd struct {
	u      *UDP
	frames chan []byte
	states chan bool
}

func newUDPEnd(t *testing.T, local netip.AddrPort) *udpEnd {
	t.Helper()
	u, err := ListenUDP(local)
	if err != nil {
		t.Fatal(err)
	}
	e := &udpEnd{u: u, frames: make(chan []byte, 64), states: make(chan bool, 64)}
	u.setKeepalive(10*time.Millisecond, 500*time.Millisecond)
	u.OnPeerState(func(st PeerState) { e.states <- st.Up })
	go func() {
		bufs := [][]byte{make([]byte, 2048), make([]byte, 2048)}
		sizes := make([]int, 2)
		for {
			n, err := u.Read(bufs, sizes, 0)
			if err != nil {
				return
			}
			for i := range n {
				e.frames <- bytes.Clone(bufs[i][:sizes[i]])
			}
		}
	}()
	t.Cleanup(func() { u.Close() })
	return e
}

func (e *udpEnd) want(t *testing.T, up bool, why string) {
	t.Helper()
	select {
	case got := <-e.states:
		if got != up {
			t.Fatalf("%s: peer state %v, want %v", why, got, up)
		}
		if e.u.PeerState().Up != up {
			t.Fatalf("%s: PeerState %+v after the callback said %v", why, e.u.PeerState(), up)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no peer state change (want %v)", why, up)
	}
}

// TestUDPKeepalive: a UDP link shows its peer down until it is heard, up
// while its keepalives arrive, down when the peer sets its end down or
// goes silent (closed, as a killed daemon's socket), and up again when a
// new peer answers on the same address; keepalives never reach the reader
// as frames.
func TestUDPKeepalive(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	a, b := newUDPEnd(t, lo), newUDPEnd(t, lo)
	if st := a.u.PeerState(); st.Up || !st.Silent {
		t.Fatalf("a peer never heard: %+v", st)
	}
	if err := a.u.Connect(b.u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := b.u.Connect(a.u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	a.want(t, true, "both ends connected")
	b.want(t, true, "both ends connected")

	f := testFrame(7, 60)
	if n, err := a.u.Write([][]byte{f}, 0); n != 1 || err != nil {
		t.Fatalf("Write: %d %v", n, err)
	}
	select {
	case got := <-b.frames:
		if !bytes.Equal(got, f) {
			t.Fatalf("frame %x, want %x", got, f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("frame not received")
	}

	b.u.SetState(false)
	a.want(t, false, "b set its end down")
	if a.u.PeerState().Silent {
		t.Fatal("a peer that set its end down is alive, not silent")
	}
	b.u.SetState(true)
	a.want(t, true, "b set its end up")

	addr := b.u.LocalAddr()
	b.u.Close()
	a.want(t, false, "b closed")
	if !a.u.PeerState().Silent || a.u.peer.silences.Load() != 1 {
		t.Fatalf("after b's silence: %+v, silences %d", a.u.PeerState(), a.u.peer.silences.Load())
	}
	c := newUDPEnd(t, addr)
	if err := c.u.Connect(a.u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	a.want(t, true, "a new peer on b's address")
	c.want(t, true, "a answered")
	// Keepalives kept flowing all along: none was handed over as a frame.
	time.Sleep(50 * time.Millisecond)
	for _, e := range []*udpEnd{a, b, c} {
		if len(e.frames) != 0 {
			t.Fatalf("%d datagrams handed to the reader as frames", len(e.frames))
		}
	}
}

// TestUDPNoFlapOnFirstDownHello: a peer first heard in a keepalive that
// says it is set down shows down, never up for a moment.
func TestUDPNoFlapOnFirstDownHello(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	for i := range 20 {
		a, b := newUDPEnd(t, lo), newUDPEnd(t, lo)
		b.u.SetState(false)
		if err := b.u.Connect(a.u.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if err := a.u.Connect(b.u.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		// a's first change is from silent to heard, and down: never up.
		a.want(t, false, "b, set down, is heard")
		if st := a.u.PeerState(); st.Up || st.Silent {
			t.Fatalf("round %d: %+v, want down and heard", i, st)
		}
		b.want(t, true, "a is up")
		select {
		case up := <-a.states:
			t.Fatalf("round %d: a second change, to %v, with b still set down", i, up)
		case <-time.After(50 * time.Millisecond):
		}
		a.u.Close()
		b.u.Close()
	}
}

// TestUDPCallbackDoesNotBlockState: a callback that blocks (a daemon
// loop's full queue) holds up neither SetState nor PeerState, which that
// loop calls.
func TestUDPCallbackDoesNotBlockState(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	a, b := newUDPEnd(t, lo), newUDPEnd(t, lo)
	release := make(chan struct{})
	defer close(release)
	a.u.OnPeerState(func(PeerState) { <-release })
	if err := a.u.Connect(b.u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := b.u.Connect(a.u.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	b.want(t, true, "a is up") // a heard b too, and its callback now blocks
	done := make(chan struct{})
	go func() {
		a.u.SetState(false)
		a.u.PeerState()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SetState or PeerState waited for a blocked callback")
	}
}

// TestUDPCloseRacesConnect: Close racing Connect never starts the
// keepalives after Close waited for them (a WaitGroup Add after its Wait,
// which -race reports), and leaves no goroutine behind.
func TestUDPCloseRacesConnect(t *testing.T) {
	peer, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	before := runtime.NumGoroutine()
	for range 500 {
		u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { u.Connect(peer.LocalAddr()); close(done) }()
		u.Close()
		<-done
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Errorf("%d goroutines after 500 closed links, %d before", n, before)
	}
}

// TestUDPHello: the keepalive's encoding and what is not one.
func TestUDPHello(t *testing.T) {
	for _, up := range []bool{true, false} {
		if ok, got := parseUDPHello(udpHello(up)); !ok || got != up {
			t.Errorf("hello(%v) parsed as %v %v", up, ok, got)
		}
	}
	for _, b := range [][]byte{nil, []byte("EMUF"), []byte("EMUX\x01\x01\x00\x00"), append(udpHello(true), 0)} {
		if ok, _ := parseUDPHello(b); ok {
			t.Errorf("%q taken for a keepalive", b)
		}
	}
}

func FuzzUDPHello(f *testing.F) {
	f.Add(udpHello(true))
	f.Add(udpHello(false))
	f.Add([]byte("EMUF\x02\xff\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, up := parseUDPHello(b)
		if ok && len(b) != udpHelloLen {
			t.Fatalf("%d bytes taken for a keepalive", len(b))
		}
		if ok && b[4] == udpHelloVersion && b[6] == 0 && b[7] == 0 && b[5]&^udpHelloUp == 0 && !bytes.Equal(udpHello(up), b) {
			t.Fatalf("%x does not round-trip", b)
		}
	})
}
