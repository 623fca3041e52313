package rt

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestTAPQueueOnTheWire: the kernel, not our own segmenter, cuts a merged
// train back into the very segments it was merged from. In a namespace a
// bridge joins TAP "in" (which we Queue the segments to) and TAP "out"
// (opened without offloads, so the kernel segments in software and
// completes every checksum before handing frames to us); the bridge floods
// the unknown destination to "out". The frames read there must equal the
// segments byte for byte, and "in" must have written each case's segments
// with one write(2).
func TestTAPQueueOnTheWire(t *testing.T) {
	ns := newTestNetns(t)
	in, err := CreateTAP(TAPConfig{Name: "emug-in", NetNS: ns, Up: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	out, err := CreateTAP(TAPConfig{Name: "emug-out", NetNS: ns, Up: true, NoOffload: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	la := netlink.NewLinkAttrs()
	la.Name = "emug-br"
	br := &netlink.Bridge{LinkAttrs: la}
	if err := nl.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{in.Name(), out.Name()} {
		l, err := nl.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := nl.LinkSetMaster(l, br); err != nil {
			t.Fatal(err)
		}
	}
	if err := nl.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}

	cases := []gsoCase{
		{name: "tcp4", payload: 20000, mss: 1448, flags: flACK | flPSH},
		{name: "tcp4-cwr-fin", payload: 5000, mss: 1448, flags: flACK | flCWR | flFIN},
		{name: "tcp6", v6: true, payload: 9000, mss: 1428, flags: flACK},
		{name: "tcp4-vlan", vlan: true, payload: 6000, mss: 1444, flags: flACK},
		{name: "udp4-64B", udp: true, payload: 30 * 22, mss: 22},
		{name: "udp6", v6: true, udp: true, payload: 4000, mss: 1000},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := groPayload(c.payload)
			payload[0] = byte(i) // tells this case's frames from an earlier one's
			segs := groSegments(t, c, payload)
			gso0, frames0 := in.Counters.TxGSOWrites.Load(), in.Counters.TxFrames.Load()
			for _, s := range segs {
				// Headroom as the switch's frames have it.
				if err := in.Queue(append(make([]byte, 64), s...), 64); err != nil {
					t.Fatal(err)
				}
			}
			if err := in.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := in.Counters.TxGSOWrites.Load() - gso0; got != 1 {
				t.Errorf("%d merged writes, want 1", got)
			}
			if got := in.Counters.TxFrames.Load() - frames0; got != uint64(len(segs)) {
				t.Errorf("TxFrames grew by %d, want %d", got, len(segs))
			}
			got := readMatching(t, out, len(segs), func(b []byte) bool {
				return len(b) > len(segs[0])-c.mss && bytes.Equal(b[6:12], srcMAC) && bytes.Equal(b[:l3Len(segs[0])], segs[0][:l3Len(segs[0])])
			})
			for k := range segs {
				if !bytes.Equal(got[k], segs[k]) {
					t.Fatalf("segment %d on the wire differs:\n got %x\nwant %x", k, got[k], segs[k])
				}
			}
			if out.Counters.GSOFrames.Load() != 0 || out.Counters.CsumPartial.Load() != 0 {
				t.Fatal("the kernel handed the offload-less TAP GSO or partial-checksum frames; the test proves nothing")
			}
		})
	}
}

// l3Len is the length of the Ethernet header and tag of frame b.
func l3Len(b []byte) int {
	n, _, _ := l3Offset(b)
	return n
}

// readMatching reads frames from tap until want of them satisfy match,
// failing after 10 s.
func readMatching(t *testing.T, tap *TAP, want int, match func([]byte) bool) [][]byte {
	t.Helper()
	if err := tap.f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	defer tap.f.SetReadDeadline(time.Time{})
	bufs := make([][]byte, tap.BatchSize())
	sizes := make([]int, len(bufs))
	for i := range bufs {
		bufs[i] = make([]byte, 9600)
	}
	var out [][]byte
	for len(out) < want {
		n, err := tap.Read(bufs, sizes, 0)
		if err != nil {
			t.Fatalf("after %d of %d frames: %v", len(out), want, err)
		}
		for i := range n {
			if b := bufs[i][:sizes[i]]; match(b) {
				out = append(out, bytes.Clone(b))
			}
		}
	}
	return out
}

// TestTAPQueueLocalUDP: a merged train of 64-byte UDP datagrams (one
// write(2)) reaches a socket in the namespace as the datagrams it was
// merged from, in order.
func TestTAPQueueLocalUDP(t *testing.T) {
	tap, ns, nl := testTAP(t, TAPConfig{MTU: 1500})
	fd := nsUDPSocket(t, ns, 9994)
	l, err := nl.LinkByName(tap.Name())
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	c := gsoCase{udp: true, payload: n * 22, mss: 22}
	payload := groPayload(c.payload)
	segs := groSegments(t, c, payload)
	for _, s := range segs {
		// Addressed to the namespace's stack instead of the test's hosts.
		copy(s[0:6], l.Attrs().HardwareAddr)
		copy(s[6:12], peerMAC)
		ip := s[14:]
		copy(ip[12:16], net.IPv4(10, 77, 0, 2).To4())
		copy(ip[16:20], net.IPv4(10, 77, 0, 1).To4())
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:20]))
		u := ip[20:]
		binary.BigEndian.PutUint16(u[2:], 9994)
		u[6], u[7] = 0, 0
		binary.BigEndian.PutUint16(u[6:], ^csumFold(csumAdd(pseudoHeaderSum(ip[12:16], ip[16:20], ipProtoUDP, len(u)), u)))
		if err := tap.Queue(s, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	if w := tap.Counters.TxGSOWrites.Load(); w != 1 {
		t.Fatalf("%d merged writes, want 1", w)
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	rb := make([]byte, 100)
	for i := range n {
		m, _, err := unix.Recvfrom(fd, rb, 0)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if want := payload[i*22 : (i+1)*22]; !bytes.Equal(rb[:m], want) {
			t.Fatalf("datagram %d: %x, want %x", i, rb[:m], want)
		}
	}
}

// BenchmarkTAPQueueUDP64 measures 64-byte UDP frames/s into the kernel
// through Queue and Flush, in trains of 64 as one batch of a switch
// brings them, merged into GSO frames or (none) written one by one; the
// kernel delivers them to a bound socket in the namespace that is not
// read (its receive path up to the socket queue is part of the cost).
func BenchmarkTAPQueueUDP64(b *testing.B) {
	for _, bc := range []struct {
		name       string
		noCoalesce bool
	}{{"merged", false}, {"none", true}} {
		b.Run(bc.name, func(b *testing.B) {
			tap, ns, nl := testTAP(b, TAPConfig{MTU: 1500, NoCoalesce: bc.noCoalesce})
			nsUDPSocket(b, ns, 9992)
			l, err := nl.LinkByName(tap.Name())
			if err != nil {
				b.Fatal(err)
			}
			c := gsoCase{udp: true, payload: 64 * 22, mss: 22}
			segs := groSegments(b, c, groPayload(c.payload))
			for i, s := range segs {
				copy(s[0:6], l.Attrs().HardwareAddr)
				copy(s[6:12], peerMAC)
				ip := s[14:]
				copy(ip[12:16], net.IPv4(10, 77, 0, 2).To4())
				copy(ip[16:20], net.IPv4(10, 77, 0, 1).To4())
				ip[10], ip[11] = 0, 0
				binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:20]))
				u := ip[20:]
				binary.BigEndian.PutUint16(u[2:], 9992)
				u[6], u[7] = 0, 0
				binary.BigEndian.PutUint16(u[6:], ^csumFold(csumAdd(pseudoHeaderSum(ip[12:16], ip[16:20], ipProtoUDP, len(u)), u)))
				segs[i] = append(make([]byte, VnetHdrLen), s...) // headroom, as a switch's frames have
			}
			b.ReportAllocs()
			start := time.Now()
			sent := 0
			for sent < b.N {
				for _, s := range segs {
					if err := tap.Queue(s, VnetHdrLen); err != nil {
						b.Fatal(err)
					}
				}
				if err := tap.Flush(); err != nil {
					b.Fatal(err)
				}
				sent += len(segs)
			}
			b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "frames/s")
		})
	}
}
