package rt

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func skipUnlessRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and TAP devices (CI runs as root)")
	}
}

// newTestNetns creates an anonymous network namespace; it disappears when
// the handle is closed at cleanup and nothing else holds it.
func newTestNetns(t testing.TB) netns.NsHandle {
	t.Helper()
	skipUnlessRoot(t)
	type res struct {
		h   netns.NsHandle
		err error
	}
	c := make(chan res)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			c <- res{netns.None(), err}
			return
		}
		defer orig.Close()
		h, err := netns.New()
		if rerr := netns.Set(orig); rerr != nil {
			c <- res{h, rerr} // thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		c <- res{h, err}
	}()
	r := <-c
	if r.err != nil {
		if r.h.IsOpen() {
			r.h.Close()
		}
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.h.Close() })
	return r.h
}

// testTAP creates a TAP in a fresh namespace with 10.77.0.1/24 and a
// permanent neighbour 10.77.0.2 at peerMAC, and returns it with a
// netlink handle in the namespace.
func testTAP(t testing.TB, cfg TAPConfig) (*TAP, netns.NsHandle, *netlink.Handle) {
	t.Helper()
	ns := newTestNetns(t)
	cfg.NetNS, cfg.Up = ns, true
	if cfg.Name == "" {
		cfg.Name = "emut0"
	}
	tap, err := CreateTAP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tap.Close() })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	l, err := nl.LinkByName(tap.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := nl.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 77, 0, 1), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := nl.NeighAdd(&netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT,
		IP: net.IPv4(10, 77, 0, 2), HardwareAddr: peerMAC}); err != nil {
		t.Fatal(err)
	}
	return tap, ns, nl
}

var peerMAC = net.HardwareAddr{0x02, 0xee, 0, 0, 0, 2}

// nsUDPSocket opens a UDP socket inside ns bound to port (0: any).
func nsUDPSocket(t testing.TB, ns netns.NsHandle, port int) int {
	t.Helper()
	fd := -1
	err := inNetns(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Port: port})
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// readUDP reads frames from tap until want UDP frames to dport arrived
// (skipping IPv6 router solicitations and the like) and returns them.
func readUDP(t *testing.T, tap *TAP, dport uint16, want int) []gopacket.Packet {
	t.Helper()
	bufs := make([][]byte, tap.BatchSize())
	sizes := make([]int, len(bufs))
	for i := range bufs {
		bufs[i] = make([]byte, 9600)
	}
	var out []gopacket.Packet
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < want {
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d UDP frames", len(out), want)
		}
		n, err := tap.Read(bufs, sizes, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p := gopacket.NewPacket(bytes.Clone(bufs[i][:sizes[i]]), layers.LayerTypeEthernet, gopacket.Default)
			if u, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok && uint16(u.DstPort) == dport {
				out = append(out, p)
			}
		}
	}
	return out
}

func checkUDP(t *testing.T, p gopacket.Packet) {
	t.Helper()
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	u := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if err, r := ip.VerifyChecksum(); err != nil || !r.Valid {
		t.Errorf("IPv4 checksum %#x, want %#x (%v)", r.Actual, r.Correct, err)
	}
	u.SetNetworkLayerForChecksum(ip)
	if err, r := u.VerifyChecksum(); err != nil || !r.Valid || u.Checksum == 0 {
		t.Errorf("UDP checksum %#x, want %#x (%v)", r.Actual, r.Correct, err)
	}
}

func TestTAPLifecycle(t *testing.T) {
	tap, ns, nl := testTAP(t, TAPConfig{Name: "emut-life", MTU: 4200})
	l, err := nl.LinkByName("emut-life")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().MTU != 4200 || l.Attrs().Flags&net.FlagUp == 0 {
		t.Fatalf("mtu %d flags %v", l.Attrs().MTU, l.Attrs().Flags)
	}
	if _, err := netlink.LinkByName("emut-life"); err == nil {
		t.Fatal("TAP visible in the caller's namespace")
	}
	// The carrier follows SetCarrier (the host sees NO-CARRIER: the link
	// is not "lower up").
	carrier := func() bool {
		l, err := nl.LinkByName("emut-life")
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0
	}
	if !carrier() {
		t.Error("a new TAP has no carrier")
	}
	if err := tap.SetCarrier(false); err != nil {
		t.Fatal(err)
	}
	if carrier() {
		t.Error("carrier on after SetCarrier(false)")
	}
	if err := tap.SetCarrier(true); err != nil {
		t.Fatal(err)
	}
	if !carrier() {
		t.Error("carrier off after SetCarrier(true)")
	}
	// Close unblocks a pending Read.
	errc := make(chan error, 1)
	go func() {
		bufs := [][]byte{make([]byte, 9600)}
		for {
			_, err := tap.Read(bufs, make([]int, 1), 0)
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	tap.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	// Not persistent: the device went with the descriptor.
	// The kernel removes the device asynchronously, behind rtnl, which
	// parallel namespace tests contend for.
	var gone bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := nl.LinkByName("emut-life"); err != nil {
			gone = true
			break
		}
	}
	if !gone {
		t.Fatal("TAP still exists after Close")
	}
	_ = ns
}

// TestTAPChecksumOffload: the kernel hands a UDP datagram with a partial
// checksum (TUN_F_CSUM); Read completes it.
func TestTAPChecksumOffload(t *testing.T) {
	tap, ns, _ := testTAP(t, TAPConfig{MTU: 1500})
	fd := nsUDPSocket(t, ns, 0)
	payload := bytes.Repeat([]byte("emufabric"), 33)
	if err := unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Port: 9999, Addr: [4]byte{10, 77, 0, 2}}); err != nil {
		t.Fatal(err)
	}
	p := readUDP(t, tap, 9999, 1)[0]
	checkUDP(t, p)
	if !bytes.Equal(p.Layer(layers.LayerTypeUDP).LayerPayload(), payload) {
		t.Fatal("payload differs")
	}
	if tap.Counters.CsumPartial.Load() == 0 {
		t.Error("the kernel sent no partial checksum: offload not exercised")
	}
}

// TestTAPUDPSegmentation: a UDP_SEGMENT send of 5 x 1000 bytes arrives as
// one USO frame that Read cuts into five datagrams with valid checksums.
func TestTAPUDPSegmentation(t *testing.T) {
	tap, ns, _ := testTAP(t, TAPConfig{MTU: 1500})
	fd := nsUDPSocket(t, ns, 0)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 1000); err != nil {
		t.Skipf("kernel without UDP GSO: %v", err)
	}
	payload := make([]byte, 4500)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	if err := unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Port: 9997, Addr: [4]byte{10, 77, 0, 2}}); err != nil {
		t.Fatal(err)
	}
	ps := readUDP(t, tap, 9997, 5)
	var got []byte
	for i, p := range ps {
		checkUDP(t, p)
		pl := p.Layer(layers.LayerTypeUDP).LayerPayload()
		if want := min(1000, 4500-i*1000); len(pl) != want {
			t.Errorf("segment %d: %d bytes, want %d", i, len(pl), want)
		}
		got = append(got, pl...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("reassembled payload differs")
	}
	if tap.Counters.GSOFrames.Load() == 0 {
		t.Log("kernel segmented in software (no USO towards the TAP); segmentation not exercised here")
	} else if tap.Counters.Segments.Load() < 5 {
		t.Errorf("segments counter %d", tap.Counters.Segments.Load())
	}
}

// TestTAPWrite: a frame written to the TAP (zeroed vnet header) reaches a
// socket in the namespace.
func TestTAPWrite(t *testing.T) {
	tap, ns, nl := testTAP(t, TAPConfig{MTU: 1500})
	fd := nsUDPSocket(t, ns, 9998)
	l, _ := nl.LinkByName(tap.Name())
	payload := []byte("hello from the wire")
	eth := &layers.Ethernet{SrcMAC: peerMAC, DstMAC: l.Attrs().HardwareAddr, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(10, 77, 0, 2), DstIP: net.IPv4(10, 77, 0, 1)}
	u := &layers.UDP{SrcPort: 1234, DstPort: 9998}
	u.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, u, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	// Once in place (headroom for the vnet header), once copied.
	for _, off := range []int{VnetHdrLen + 6, 0} {
		frame := append(bytes.Repeat([]byte{0xff}, off), buf.Bytes()...)
		if n, err := tap.Write([][]byte{frame}, off); n != 1 || err != nil {
			t.Fatalf("Write: %d %v", n, err)
		}
		rb := make([]byte, 100)
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 30})
		n, _, err := unix.Recvfrom(fd, rb, 0)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if !bytes.Equal(rb[:n], payload) {
			t.Fatalf("offset %d: received %q", off, rb[:n])
		}
	}
}

// BenchmarkTAPRead measures frames/s from the kernel through the TAP:
// a UDP socket in the namespace sends 64-byte datagrams (sendmmsg-free,
// one syscall each, so the sender is the bottleneck on a 2-core machine)
// and the benchmark reads them in batches.
func BenchmarkTAPRead(b *testing.B) {
	tap, ns, _ := testTAP(b, TAPConfig{MTU: 1500})
	fd := nsUDPSocket(b, ns, 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := make([]byte, 64-42) // 64-byte frames: 14 + 20 + 8 + 22
		to := &unix.SockaddrInet4{Port: 9996, Addr: [4]byte{10, 77, 0, 2}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Sendto(fd, p, 0, to)
		}
	}()
	bufs := make([][]byte, tap.BatchSize())
	sizes := make([]int, len(bufs))
	for i := range bufs {
		bufs[i] = make([]byte, 9600)
	}
	b.ReportAllocs()
	start := time.Now()
	got := 0
	for got < b.N {
		n, err := tap.Read(bufs, sizes, 0)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "frames/s")
	close(stop)
	<-done
}

// BenchmarkTAPWrite measures frames/s into the kernel: 64-byte UDP frames
// written in batches to the TAP, delivered to a bound socket in the
// namespace (which is not read: the kernel's receive path up to the
// socket queue is part of the cost).
func BenchmarkTAPWrite(b *testing.B) {
	tap, ns, nl := testTAP(b, TAPConfig{MTU: 1500})
	nsUDPSocket(b, ns, 9995)
	l, err := nl.LinkByName(tap.Name())
	if err != nil {
		b.Fatal(err)
	}
	eth := &layers.Ethernet{SrcMAC: peerMAC, DstMAC: l.Attrs().HardwareAddr, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(10, 77, 0, 2), DstIP: net.IPv4(10, 77, 0, 1)}
	u := &layers.UDP{SrcPort: 1234, DstPort: 9995}
	u.SetNetworkLayerForChecksum(ip)
	sb := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, u, gopacket.Payload(make([]byte, 22))); err != nil {
		b.Fatal(err)
	}
	bufs := make([][]byte, tap.BatchSize())
	for i := range bufs {
		bufs[i] = append(make([]byte, VnetHdrLen), sb.Bytes()...) // headroom: written in place
	}
	b.ReportAllocs()
	start := time.Now()
	sent := 0
	for sent < b.N {
		n, err := tap.Write(bufs[:min(len(bufs), b.N-sent)], VnetHdrLen)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "frames/s")
}

// TestTAPNameTaken: a second TAP of a name another holder has open is
// refused with a message that says so, not the bare ioctl's "device or
// resource busy"; and a name taken by an interface that is no TAP says that.
func TestTAPNameTaken(t *testing.T) {
	tap, ns, nl := testTAP(t, TAPConfig{Name: "emut-taken"})
	_, err := CreateTAP(TAPConfig{Name: tap.Name(), NetNS: ns})
	if err == nil || !strings.Contains(err.Error(), "another process holds it open") {
		t.Errorf("second TAP of the same name: %v, want it said the name is held open", err)
	}
	if err := nl.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "emut-br"}}); err != nil {
		t.Fatalf("add a bridge in the test namespace: %v", err)
	}
	_, err = CreateTAP(TAPConfig{Name: "emut-br", NetNS: ns})
	if err == nil || !strings.Contains(err.Error(), "is not a TAP") {
		t.Errorf("TAP named as a bridge: %v, want it said the name is not a TAP", err)
	}
}
