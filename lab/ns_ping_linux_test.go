package lab

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A Go ICMP echo ("ping") so the namespace tests need no ping binary: the
// test binary is re-run as TestNsPingHelper through `ip netns exec`, which
// also proves iproute2 sees our namespaces.

// nsICMPEcho sends count echo requests to dst (RFC 792 / RFC 4443) on a
// raw socket in the caller's namespace and waits for each reply.
func nsICMPEcho(dst netip.Addr, count int, timeout time.Duration) error {
	family, proto, reqType, repType := unix.AF_INET, unix.IPPROTO_ICMP, byte(8), byte(0)
	if dst.Is6() {
		family, proto, reqType, repType = unix.AF_INET6, unix.IPPROTO_ICMPV6, 128, 129
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	var sa unix.Sockaddr
	if dst.Is6() {
		sa = &unix.SockaddrInet6{Addr: dst.As16()}
	} else {
		sa = &unix.SockaddrInet4{Addr: dst.As4()}
	}
	id := uint16(os.Getpid())
	buf := make([]byte, 1500)
	for seq := uint16(1); seq <= uint16(count); seq++ {
		msg := make([]byte, 8+56)
		msg[0] = reqType
		binary.BigEndian.PutUint16(msg[4:], id)
		binary.BigEndian.PutUint16(msg[6:], seq)
		for i := 8; i < len(msg); i++ {
			msg[i] = byte(i)
		}
		if !dst.Is6() { // the kernel fills the ICMPv6 checksum itself
			binary.BigEndian.PutUint16(msg[2:], nsInetChecksum(msg))
		}
		if err := unix.Sendto(fd, msg, 0, sa); err != nil {
			return fmt.Errorf("send seq %d: %w", seq, err)
		}
		deadline := time.Now().Add(timeout)
		for {
			if time.Now().After(deadline) {
				return fmt.Errorf("no reply to seq %d from %s", seq, dst)
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			icmp := buf[:n]
			if !dst.Is6() { // raw IPv4 sockets receive the IP header
				if n < 20 {
					continue
				}
				icmp = buf[int(buf[0]&0x0f)*4 : n]
			}
			if len(icmp) >= 8 && icmp[0] == repType && binary.BigEndian.Uint16(icmp[4:]) == id &&
				binary.BigEndian.Uint16(icmp[6:]) == seq && len(icmp) == len(msg) && string(icmp[8:]) == string(msg[8:]) {
				break
			}
		}
	}
	return nil
}

// nsInetChecksum is the RFC 1071 checksum of b.
func nsInetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// TestNsPingHelper is not a test: nsPing runs it inside a namespace.
func TestNsPingHelper(t *testing.T) {
	dst := os.Getenv("EMU_NS_PING")
	if dst == "" {
		t.Skip("helper process for nsPing")
	}
	if err := nsICMPEcho(netip.MustParseAddr(dst), 3, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fmt.Println("icmp echo ok")
}

// nsPing pings dst from inside namespace ns with `ip netns exec`.
func nsPing(t *testing.T, ipPath, ns, dst string) {
	t.Helper()
	cmd := exec.Command(ipPath, "netns", "exec", ns, os.Args[0], "-test.run=^TestNsPingHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "EMU_NS_PING="+dst)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "icmp echo ok") {
		t.Fatalf("ping %s from %s: %v\n%s", dst, ns, err, out)
	}
}

func TestNsInetChecksum(t *testing.T) {
	// RFC 1071 §3 example: the sum of 0001 f203 f4f5 f6f7 is ddf2.
	if got := nsInetChecksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != ^uint16(0xddf2) {
		t.Fatalf("checksum %#04x, want %#04x", got, ^uint16(0xddf2))
	}
}
