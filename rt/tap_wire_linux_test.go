package rt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestTAPWireTCP is the TAP path end to end, as a switch uses it: two
// namespaces, each with a TAP, joined by a forwarder that reads frames
// from one TAP (TSO frames cut into MTU segments) and Queues them to the
// other (segments merged into GSO frames again), flushing after every
// batch. 8 MiB sent over TCP from one namespace arrive intact in the
// other: the receiving kernel trusts a merged frame's checksum
// (CHECKSUM_PARTIAL), so a merge that got a byte wrong would show here as
// corrupted data, not as a retransmission.
func TestTAPWireTCP(t *testing.T) {
	nsA, nsB := newTestNetns(t), newTestNetns(t)
	a := wireTAP(t, nsA, "emuw-a", "10.78.0.1/24")
	b := wireTAP(t, nsB, "emuw-b", "10.78.0.2/24")

	var wg sync.WaitGroup
	forward := func(src, dst *TAP) {
		defer wg.Done()
		bufs := make([][]byte, src.BatchSize())
		sizes := make([]int, len(bufs))
		for i := range bufs {
			bufs[i] = make([]byte, VnetHdrLen+9600)
		}
		for {
			n, err := src.Read(bufs, sizes, VnetHdrLen)
			if err != nil {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("read %s: %v", src.Name(), err)
				}
				return
			}
			for i := range n {
				if err := dst.Queue(bufs[i][:VnetHdrLen+sizes[i]], VnetHdrLen); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("queue %s: %v", dst.Name(), err)
				}
			}
			if err := dst.Flush(); err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("flush %s: %v", dst.Name(), err)
			}
		}
	}
	wg.Add(2)
	go forward(a, b)
	go forward(b, a)
	defer wg.Wait()
	defer b.Close()
	defer a.Close()

	var ln net.Listener
	if err := inNetns(nsB, func() (err error) { ln, err = net.Listen("tcp4", "10.78.0.2:0"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sum := make(chan [32]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			sum <- [32]byte{}
			return
		}
		defer c.Close()
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			t.Error(err)
		}
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	data := make([]byte, 8<<20)
	rng := rand.NewChaCha8([32]byte{7})
	rng.Read(data)
	var c net.Conn
	if err := inNetns(nsA, func() (err error) { c, err = net.Dial("tcp4", ln.Addr().String()); return }); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(c, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got, want := <-sum, sha256.Sum256(data); got != want {
		t.Fatal("data arrived corrupted")
	}
	if a.Counters.GSOFrames.Load() == 0 {
		t.Error("the sender's kernel sent no TSO frames: segmentation not exercised")
	}
	if b.Counters.TxGSOWrites.Load() == 0 {
		t.Error("no merged GSO write towards the receiver: coalescing not exercised")
	}
	t.Logf("sender: %d TSO frames cut into %d segments; receiver: %d frames in %d merged writes",
		a.Counters.GSOFrames.Load(), a.Counters.Segments.Load(), b.Counters.TxGSOSegments.Load(), b.Counters.TxGSOWrites.Load())
}

// wireTAP creates an up TAP with address cidr in ns.
func wireTAP(t *testing.T, ns netns.NsHandle, name, cidr string) *TAP {
	t.Helper()
	tap, err := CreateTAP(TAPConfig{Name: name, NetNS: ns, MTU: 1500, Up: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tap.Close() })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	l, err := nl.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if err := nl.AddrAdd(l, addr); err != nil {
		t.Fatal(err)
	}
	return tap
}
