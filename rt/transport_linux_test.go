package rt

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// linkPair is a connected pair of one transport kind.
type linkPair struct {
	name string
	make func(t *testing.T) (Link, Link)
}

var linkPairs = []linkPair{
	{"seqpacket-listen", func(t *testing.T) (Link, Link) {
		path := filepath.Join(t.TempDir(), "l.sock")
		ln, err := ListenSeqpacket(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		acc := make(chan *Seqpacket, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				t.Error(err)
			}
			acc <- c
		}()
		d, err := DialSeqpacket(path)
		if err != nil {
			t.Fatal(err)
		}
		a := <-acc
		t.Cleanup(func() { a.Close(); d.Close() })
		return d, a
	}},
	{"seqpacket-pair", func(t *testing.T) (Link, Link) {
		a, b, err := SeqpacketPair()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}},
	{"shm", func(t *testing.T) (Link, Link) {
		a, b := shmPair(t)
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}},
	{"udp-loopback", func(t *testing.T) (Link, Link) {
		lo := netip.MustParseAddrPort("127.0.0.1:0")
		a, err := ListenUDP(lo)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ListenUDP(lo)
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		if err := a.Connect(b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if err := b.Connect(a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		return a, b
	}},
}

func testFrame(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i + j*3)
	}
	return b
}

// TestLinkRoundTrip sends batches of frames of varied sizes (with an
// offset: headroom in front of each) and checks they arrive whole, in
// order, one frame per message.
func TestLinkRoundTrip(t *testing.T) {
	const offset = 16
	for _, lp := range linkPairs {
		t.Run(lp.name, func(t *testing.T) {
			a, b := lp.make(t)
			sizes := []int{60, 1514, 9000, 64, 4200, 1}
			var sent [][]byte
			for round := range 3 {
				bufs := make([][]byte, len(sizes))
				for i, n := range sizes {
					f := testFrame(round*10+i, n)
					sent = append(sent, f)
					bufs[i] = append(make([]byte, offset), f...)
				}
				n, err := a.Write(bufs, offset)
				if err != nil || n != len(bufs) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			var got [][]byte
			rb := make([][]byte, b.BatchSize())
			rs := make([]int, b.BatchSize())
			for i := range rb {
				rb[i] = make([]byte, offset+9600)
			}
			for len(got) < len(sent) {
				n, err := b.Read(rb, rs, offset)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					got = append(got, bytes.Clone(rb[i][offset:offset+rs[i]]))
				}
			}
			for i := range sent {
				if !bytes.Equal(got[i], sent[i]) {
					t.Fatalf("frame %d: got %d bytes, want %d", i, len(got[i]), len(sent[i]))
				}
			}
		})
	}
}

// TestLinkCloseUnblocksRead: Close from another goroutine ends a blocked
// Read with ErrClosed (the water issue 22 failure mode).
func TestLinkCloseUnblocksRead(t *testing.T) {
	for _, lp := range linkPairs {
		t.Run(lp.name, func(t *testing.T) {
			_, b := lp.make(t)
			errc := make(chan error, 1)
			go func() {
				bufs := [][]byte{make([]byte, 2000)}
				_, err := b.Read(bufs, make([]int, 1), 0)
				errc <- err
			}()
			time.Sleep(10 * time.Millisecond) // let Read block; the assertion does not depend on it
			b.Close()
			select {
			case err := <-errc:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("Read after Close: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not unblock Read")
			}
		})
	}
}

func TestSeqpacketPeerCloseIsEOF(t *testing.T) {
	a, b, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Close()
	_, err = b.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0)
	if err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("peer close: %v, want EOF", err)
	}
}

func TestSeqpacketTooLarge(t *testing.T) {
	a, b, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if _, err := a.Write([][]byte{testFrame(1, 3000), testFrame(2, 100), testFrame(3, 200)}, 0); err != nil {
		t.Fatal(err)
	}
	rb := [][]byte{make([]byte, 1500), make([]byte, 1500), make([]byte, 1500)}
	rs := make([]int, 3)
	var got [][]byte
	tooLarge := 0
	for len(got) < 2 {
		n, err := b.Read(rb, rs, 0)
		if errors.Is(err, ErrFrameTooLarge) {
			tooLarge++
		} else if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			got = append(got, bytes.Clone(rb[i][:rs[i]]))
		}
	}
	if tooLarge != 1 {
		t.Fatalf("ErrFrameTooLarge reported %d times, want 1", tooLarge)
	}
	if !bytes.Equal(got[0], testFrame(2, 100)) || !bytes.Equal(got[1], testFrame(3, 200)) {
		t.Fatal("good frames after the dropped one were not delivered intact")
	}
}

func TestSeqpacketSocketFileRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sock")
	ln, err := ListenSeqpacket(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket file mode %v", st.Mode())
	}
	// Accept blocked in another goroutine ends on Close.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := ln.Accept(); !errors.Is(err, ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	}()
	ln.Close()
	wg.Wait()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file still there: %v", err)
	}
}

// benchLink measures frames/s of one transport, batch-shaped: one
// goroutine writes batches of 1500-byte frames, the benchmark goroutine
// reads them.
func benchLink(b *testing.B, a, c Link, size int) {
	bs := a.BatchSize()
	wb := make([][]byte, bs)
	for i := range wb {
		wb[i] = testFrame(i, size)
	}
	rb := make([][]byte, c.BatchSize())
	rs := make([]int, c.BatchSize())
	for i := range rb {
		rb[i] = make([]byte, 9600)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := a.Write(wb, 0); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	got := 0
	start := time.Now()
	for got < b.N {
		n, err := c.Read(rb, rs, 0)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	el := time.Since(start)
	b.StopTimer()
	close(stop)
	c.Close()
	a.Close()
	<-done
	b.ReportMetric(float64(got)/el.Seconds(), "frames/s")
}

func BenchmarkSeqpacket1500(b *testing.B) {
	x, y, err := SeqpacketPair()
	if err != nil {
		b.Fatal(err)
	}
	benchLink(b, x, y, 1500)
}

func BenchmarkSeqpacket64(b *testing.B) {
	x, y, err := SeqpacketPair()
	if err != nil {
		b.Fatal(err)
	}
	benchLink(b, x, y, 64)
}

func BenchmarkSeqpacket9000(b *testing.B) {
	x, y, err := SeqpacketPair()
	if err != nil {
		b.Fatal(err)
	}
	benchLink(b, x, y, 9000)
}

func BenchmarkShm64(b *testing.B) {
	x, y := shmPair(b)
	benchLink(b, x, y, 64)
}

func BenchmarkShm4200(b *testing.B) {
	x, y := shmPair(b)
	benchLink(b, x, y, 4200)
}

func BenchmarkSeqpacket4200(b *testing.B) {
	x, y, err := SeqpacketPair()
	if err != nil {
		b.Fatal(err)
	}
	benchLink(b, x, y, 4200)
}

func BenchmarkUDPLoopback1500(b *testing.B) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	x, _ := ListenUDP(lo)
	y, _ := ListenUDP(lo)
	if x == nil || y == nil {
		b.Fatal("listen")
	}
	x.Connect(y.LocalAddr())
	y.Connect(x.LocalAddr())
	benchLink(b, x, y, 1500)
}

// TestResolveUDPAddr: an end of a UDP link is an IP address or a host
// name with a port.
func TestResolveUDPAddr(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1:4000": "10.0.0.1:4000", "[::1]:7": "[::1]:7", "[fe80::1%eth0]:9": "[fe80::1%eth0]:9"} {
		if got, err := ResolveUDPAddr(in); err != nil || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
	if got, err := ResolveUDPAddr("localhost:4000"); err != nil || !got.Addr().IsLoopback() || got.Port() != 4000 || got.Addr().Is4In6() {
		t.Errorf("localhost:4000: %v %v", got, err)
	}
	for _, in := range []string{"nonsense", "10.0.0.1", ":"} {
		if _, err := ResolveUDPAddr(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
