package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/bth"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/wire"
)

// TestKernelRoCEQoS: RoCEv2 packets from a host's own RoCE stack get the
// QoS of the NIC's RDMA traffic (issue: "RoCEv2 frames from the kernel's
// soft-RoCE get the same QoS"). This machine's kernel may have no rxe, so
// the test writes on h1's interface what rxe writes: RC SEND ONLY packets
// for a QP the emulated NIC does not have, UDP 4791, DSCP 26, Not-ECT,
// UDP checksum 0, a valid ICRC (rxe_net.c, rxe_icrc.c). The frames go in
// through an AF_PACKET socket in h1's namespace, the way the kernel hands
// rxe's skbs to the netdev, and the test reads what reaches h2's kernel
// (testdata/up/kernel-roce.yaml: h2's link runs at 10 Mb/s, priority 3 is
// lossless). It checks that h1's emunic
//   - classified them to priority 3 by their DSCP (tx_prio3_packets),
//   - marked them ECT(0), as it does its own RoCE packets, the ICRC still
//     valid (the ICRC masks the traffic class, IBA A17.3.3),
//   - held them while the switch paused priority 3 (XOFF sent on p1,
//     received by h1's NIC; nothing dropped on the way),
//
// and that h2's emunic passed them up to h2's kernel (a QP it does not
// have is the host stack's), every one, in order and intact.
func TestKernelRoCEQoS(t *testing.T) {
	const (
		frames  = 300
		payload = 1024
		qpn     = 0x00ABCD
		dscp    = 26
		prio    = 3
	)
	e := newUpEnv(t)
	l := e.lab(t, "testdata/up/kernel-roce.yaml")
	e.up(t, l, "nic")
	ctl := e.controls(t, l)
	// One ping resolves h2's address in h1's neighbour table: the frames
	// go to the MAC the kernel would use.
	e.mustRun(t, "exec", l.node("h1"), "--", "ping", "-c", "1", "-W", "5", l.ip("h2"))
	out := e.mustRun(t, "exec", l.node("h1"), "--", "ip", "-j", "neigh", "show", l.ip("h2"))
	var neigh []struct {
		LLAddr string `json:"lladdr"`
	}
	if err := json.Unmarshal([]byte(out), &neigh); err != nil || len(neigh) != 1 {
		t.Fatalf("ip -j neigh show %s in h1: %q %v", l.ip("h2"), out, err)
	}
	var dstMAC [6]byte
	if _, err := fmt.Sscanf(neigh[0].LLAddr, "%x:%x:%x:%x:%x:%x", &dstMAC[0], &dstMAC[1], &dstMAC[2], &dstMAC[3], &dstMAC[4], &dstMAC[5]); err != nil {
		t.Fatalf("h2's MAC %q: %v", neigh[0].LLAddr, err)
	}

	tx := openPacketSocket(t, l.name, "h1", "eth0")
	rx := openPacketSocket(t, l.name, "h2", "eth0")
	h1, h2 := l.spec.Node("h1"), l.spec.Node("h2")

	swBefore := switchCounters(t, ctl["sw1"])
	h1Before, h2Before := nicCounters(t, ctl["h1"]), nicCounters(t, ctl["h2"])

	// rx reads until it has every frame or 30 s pass without one (at 10
	// Mb/s the 300 frames take a quarter of a second on the wire).
	got := make(chan [][]byte, 1)
	go func() {
		var pkts [][]byte
		buf := make([]byte, 1<<16)
		unix.SetsockoptTimeval(rx.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 30})
		for len(pkts) < frames {
			n, _, err := unix.Recvfrom(rx.fd, buf, 0)
			if err == unix.EINTR {
				continue // the runtime's preemption signal, not the timeout
			}
			if err != nil {
				break
			}
			if ip, ok := roceIPv4(buf[:n]); ok && bth.BTH(ip[wire.IPv4MinSize+wire.UDPSize:]).DestQP() == qpn {
				pkts = append(pkts, append([]byte(nil), ip...))
			}
		}
		got <- pkts
	}()
	for i := range frames {
		f := rxeFrame(h1.MAC, dstMAC, h1.IPv4, h2.IPv4, dscp, qpn, uint32(i), payload)
		to := &unix.SockaddrLinklayer{Ifindex: tx.ifindex, Halen: 6, Addr: [8]byte(append(dstMAC[:], 0, 0))}
		for {
			err := unix.Sendto(tx.fd, f, 0, to)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				t.Fatalf("frame %d: send on h1:eth0: %v", i, err)
			}
			break
		}
		if i%64 == 63 {
			// The TAP's queue towards emunic holds 500 frames; a
			// pause every 64 keeps a descheduled emunic from losing
			// any to the kernel, which would not be the NIC's doing.
			time.Sleep(5 * time.Millisecond)
		}
	}
	pkts := <-got

	swAfter := switchCounters(t, ctl["sw1"])
	h1After, h2After := nicCounters(t, ctl["h1"]), nicCounters(t, ctl["h2"])
	d := func(after, before map[string]uint64, k string) uint64 { return after[k] - before[k] }
	p := func(f string) string { return fmt.Sprintf(f, prio) }

	t.Logf("h2's kernel received %d of %d frames; h1's NIC: tx_prio3_packets +%d, rx_prio3_pause +%d (paused %d us), tx_queue_dropped +%d; sw1:p1 XOFF +%d; h2's NIC rx_unknown_qp +%d",
		len(pkts), frames, d(h1After, h1Before, p("tx_prio%d_packets")), d(h1After, h1Before, p("rx_prio%d_pause")),
		d(h1After, h1Before, p("rx_prio%d_pause_duration")), d(h1After, h1Before, "hw.tx_queue_dropped"),
		d(swAfter["p1"], swBefore["p1"], p("tx_prio%d_pause")), d(h2After, h2Before, "hw.rx_unknown_qp"))

	// Classified by DSCP: every frame went out on priority 3 (the ping's
	// reply and ARP may add a few frames on priority 0, none on 3).
	if n := d(h1After, h1Before, p("tx_prio%d_packets")); n != frames {
		t.Errorf("h1's NIC sent %d frames on priority %d, want %d (DSCP %d)", n, prio, frames, dscp)
	}
	// PFC: the switch paused h1's NIC on priority 3, which honoured it,
	// and nothing was dropped anywhere.
	if n := d(swAfter["p1"], swBefore["p1"], p("tx_prio%d_pause")); n == 0 {
		t.Errorf("sw1:p1 sent no XOFF for priority %d: the 10 Mb/s port did not back up", prio)
	}
	if n := d(h1After, h1Before, p("rx_prio%d_pause")); n == 0 {
		t.Errorf("h1's NIC received no XOFF for priority %d", prio)
	}
	if n := d(h1After, h1Before, "hw.tx_queue_dropped"); n != 0 {
		t.Errorf("h1's NIC dropped %d host frames", n)
	}
	for _, port := range []string{"p1", "p2"} {
		for k, v := range swAfter[port] {
			lossless := strings.HasPrefix(k, p("prio%d_drop_")) || k == p("pg%d_headroom_overflow")
			if dd := v - swBefore[port][k]; dd != 0 && (lossless || strings.HasPrefix(k, "drop_")) {
				t.Errorf("sw1:%s: %s +%d", port, k, dd)
			}
		}
	}
	if n := d(h2After, h2Before, "hw.rx_unknown_qp"); n != frames {
		t.Errorf("h2's NIC counted %d packets for a QP it does not have, want %d (handed to the host's stack)", n, frames)
	}
	// What h2's kernel got: every frame, in order, DSCP kept, ECT(0) set by
	// h1's NIC, the ICRC valid, the payload intact.
	if len(pkts) != frames {
		t.Fatalf("h2's kernel received %d of %d RoCEv2 frames", len(pkts), frames)
	}
	for i, ip := range pkts {
		h := wire.IPv4(ip)
		b := bth.BTH(ip[wire.IPv4MinSize+wire.UDPSize:])
		switch {
		case b.PSN() != uint32(i):
			t.Fatalf("frame %d has PSN %d: out of order or lost", i, b.PSN())
		case h.DSCP() != dscp:
			t.Fatalf("frame %d: DSCP %d, want %d", i, h.DSCP(), dscp)
		case h.ECN() != wire.ECNECT0:
			t.Fatalf("frame %d: ECN %d, want ECT(0) (%d): the NIC marks RoCE packets ECN-capable", i, h.ECN(), wire.ECNECT0)
		case !h.IsChecksumValid():
			t.Fatalf("frame %d: IPv4 header checksum wrong after the ECN mark", i)
		case !bth.VerifyICRCRoCE(ip):
			t.Fatalf("frame %d: ICRC invalid", i)
		case !bytes.Equal(ip[wire.IPv4MinSize+wire.UDPSize+bth.BTHSize:len(ip)-bth.ICRCSize], rxePayload(uint32(i), payload)):
			t.Fatalf("frame %d: payload changed", i)
		}
	}
}

// rxeFrame builds the Ethernet frame of an RC SEND ONLY packet as Linux
// rxe sends it over IPv4 (rxe_net.c): DF set, TTL 64, Not-ECT, UDP
// checksum 0, a source port in the RoCEv2 entropy range 0xC000-0xFFFF, the
// ICRC over the masked headers (rxe_icrc.c).
func rxeFrame(src, dst [6]byte, sip, dip [4]byte, dscp uint8, qpn, psn uint32, size int) []byte {
	ipLen := wire.IPv4MinSize + wire.UDPSize + bth.BTHSize + size + bth.ICRCSize
	f := make([]byte, wire.EthernetSize+ipLen)
	copy(f[0:], dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], wire.EtherTypeIPv4)
	ip := f[wire.EthernetSize:]
	wire.IPv4(ip).Encode(&wire.IPv4Fields{DSCP: dscp, ECN: wire.ECNNotECT, TotalLength: uint16(ipLen), ID: uint16(psn),
		DF: true, TTL: 64, Protocol: wire.IPProtoUDP, Src: sip, Dst: dip})
	udp := ip[wire.IPv4MinSize:]
	binary.BigEndian.PutUint16(udp[0:], 0xC000|uint16(qpn&0x3FFF))
	binary.BigEndian.PutUint16(udp[2:], wire.RoCEv2Port)
	binary.BigEndian.PutUint16(udp[4:], uint16(ipLen-wire.IPv4MinSize))
	bth.BTH(udp[wire.UDPSize:]).Encode(&bth.BTHFields{OpCode: bth.RCSendOnly, PKey: 0xFFFF, DestQP: qpn, AckReq: true, PSN: psn})
	copy(udp[wire.UDPSize+bth.BTHSize:], rxePayload(psn, size))
	crc, _ := bth.ICRCRoCEv4(ip[:ipLen-bth.ICRCSize])
	bth.PutICRC(ip[ipLen-bth.ICRCSize:], crc)
	return f
}

// rxePayload is frame psn's payload: its number, then a pattern.
func rxePayload(psn uint32, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7) ^ byte(psn)
	}
	binary.BigEndian.PutUint32(b, psn)
	return b
}

// roceIPv4 returns the IPv4 packet of an untagged RoCEv2 frame.
func roceIPv4(f []byte) ([]byte, bool) {
	if len(f) < wire.EthernetSize+wire.IPv4MinSize+wire.UDPSize+bth.BTHSize+bth.ICRCSize ||
		binary.BigEndian.Uint16(f[12:]) != wire.EtherTypeIPv4 {
		return nil, false
	}
	ip := f[wire.EthernetSize:]
	h := wire.IPv4(ip)
	if h.HeaderLen() != wire.IPv4MinSize || h.Protocol() != wire.IPProtoUDP || int(h.TotalLength()) > len(ip) ||
		binary.BigEndian.Uint16(ip[wire.IPv4MinSize+2:]) != wire.RoCEv2Port {
		return nil, false
	}
	return ip[:h.TotalLength()], true
}

// packetSocket is an AF_PACKET socket bound to one interface of a node's
// namespace: it sends frames as the node's kernel would hand them to the
// interface and sees every frame the interface receives.
type packetSocket struct {
	fd      int
	ifindex int
}

func openPacketSocket(t *testing.T, labName, node, ifName string) *packetSocket {
	t.Helper()
	nsName, err := lab.NamespaceName(labName, node)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		t.Fatalf("namespace %s: %v", nsName, err)
	}
	defer ns.Close()
	// A socket belongs to the namespace it was created in; a thread of
	// its own enters the node's namespace for the socket(2) call. Should
	// it fail to return, it stays locked and ends with its goroutine.
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- result{-1, err}
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			ch <- result{-1, err}
			return
		}
		fd, serr := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err := netns.Set(orig); err != nil {
			if serr == nil {
				unix.Close(fd)
			}
			ch <- result{-1, fmt.Errorf("returning to the test's namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{fd, serr}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("AF_PACKET socket in %s: %v", nsName, r.err)
	}
	fd := r.fd
	t.Cleanup(func() { unix.Close(fd) })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	link, err := nl.LinkByName(ifName)
	if err != nil {
		t.Fatalf("%s in %s: %v", ifName, nsName, err)
	}
	idx := link.Attrs().Index
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx}); err != nil {
		t.Fatalf("bind to %s in %s: %v", ifName, nsName, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	return &packetSocket{fd: fd, ifindex: idx}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
