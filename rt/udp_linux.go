package rt

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// UDP is a link to a switch on another machine: each frame is one UDP
// datagram (the whole Ethernet frame as payload, no extra header) on a
// connected socket, so the kernel drops datagrams from anyone but the
// configured peer. Unlike Seqpacket it may lose frames, as a wire may; the
// emulated link's own loss model comes on top.
type UDP struct {
	conn  *net.UDPConn
	rc    syscall.RawConn
	rmu   sync.Mutex
	rx    *mmsgBatch
	wmu   sync.Mutex
	tx    *mmsgBatch
	local netip.AddrPort
	peer  udpPeer // keepalives and the peer's state (udp_keepalive_linux.go)
	once  sync.Once
}

var _ Link = (*UDP)(nil)

// DialUDP binds local (port 0 picks one) and connects to remote. Both ends
// of a link call DialUDP with each other's address. Its errors name the
// step: "listen udp ADDR: bind: address already in use", "connect udp
// ADDR: ...".
func DialUDP(local, remote netip.AddrPort) (*UDP, error) {
	u, err := ListenUDP(local)
	if err != nil {
		return nil, err
	}
	if err := u.Connect(remote); err != nil {
		u.Close()
		return nil, fmt.Errorf("connect udp %s: %w", remote, err)
	}
	return u, nil
}

func newUDP(c *net.UDPConn, rc syscall.RawConn) *UDP {
	u := &UDP{
		conn:  c,
		rc:    rc,
		rx:    newMmsgBatch(DefaultBatchSize),
		tx:    newMmsgBatch(DefaultBatchSize),
		local: c.LocalAddr().(*net.UDPAddr).AddrPort(),
	}
	u.peer.init()
	return u
}

// ListenUDP binds local without a peer yet; Connect sets the peer. It lets
// two ends that both pick port 0 learn each other's port first.
func ListenUDP(local netip.AddrPort) (*UDP, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
	return newUDP(c, rc), nil
}

// Connect sets the peer with connect(2): afterwards only its datagrams are
// received and Write sends to it; the keepalives start.
func (u *UDP) Connect(remote netip.AddrPort) error {
	sa, err := sockaddr(remote)
	if err != nil {
		return err
	}
	var cerr error
	err = u.rc.Control(func(fd uintptr) { cerr = syscall.Connect(int(fd), sa) })
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	u.startKeepalive()
	return nil
}

func sockaddr(ap netip.AddrPort) (syscall.Sockaddr, error) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}, nil
	}
	if a.Is6() {
		return &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}, nil
	}
	return nil, &net.AddrError{Err: "not an IP address", Addr: ap.String()}
}

// LocalAddr is the bound address.
func (u *UDP) LocalAddr() netip.AddrPort { return u.local }

// BatchSize implements Link.
func (u *UDP) BatchSize() int { return DefaultBatchSize }

// Read implements Link. Keepalives and empty datagrams are consumed here;
// oversized ones are dropped and reported as ErrFrameTooLarge with the
// good frames. Any datagram shows the peer alive.
func (u *UDP) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	for {
		n, err := recvmmsg(u.rc, u.rx, bufs, sizes, offset)
		if errors.Is(err, syscall.ECONNREFUSED) {
			// An ICMP port unreachable from a peer that is not up yet
			// (or restarting): a wire would just lose the frames.
			continue
		}
		if err != nil {
			return 0, err
		}
		k := 0
		var errOut error
		hello, helloUp := false, false
		for i := 0; i < n; i++ {
			if sizes[i] < 0 {
				errOut = ErrFrameTooLarge
				continue
			}
			if sizes[i] == 0 {
				continue
			}
			if sizes[i] == udpHelloLen {
				if ok, up := parseUDPHello(bufs[i][offset : offset+udpHelloLen]); ok {
					hello, helloUp = true, up
					continue
				}
			}
			if k != i {
				copy(bufs[k][offset:], bufs[i][offset:offset+sizes[i]])
				sizes[k] = sizes[i]
			}
			k++
		}
		if n > 0 {
			u.heard(hello, helloUp)
		}
		if k > 0 || errOut != nil {
			return k, errOut
		}
	}
}

// Write implements Link. A datagram refused by the kernel (e.g.
// ECONNREFUSED while the peer is not up yet) is reported as an error after
// the datagrams before it.
func (u *UDP) Write(bufs [][]byte, offset int) (int, error) {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	return sendmmsg(u.rc, u.tx, bufs, offset)
}

// Close implements Link: the keepalives stop with the socket.
func (u *UDP) Close() error {
	err := ErrClosed
	u.once.Do(func() {
		err = u.conn.Close()
		u.stopKeepalive()
	})
	return err
}

// ResolveUDPAddr parses one end of a UDP link, ADDR:PORT: an IP address
// ([ADDR]:PORT for IPv6) or a host name, resolved now, once (the link is
// connected to one address for its life).
func ResolveUDPAddr(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if h, p, err := net.SplitHostPort(s); err != nil || h == "" || p == "" {
		return netip.AddrPort{}, fmt.Errorf("%q: want ADDR:PORT or HOST:PORT ([ADDR]:PORT for IPv6)", s)
	}
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: %w", s, err)
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}
