package swd

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/emufabric/emufabric/rt"
)

// Options are the daemon's settings, one field per command-line flag of
// emuswitch. Errors about them name the flag and the value.
type Options struct {
	Lab     string     // --lab FILE
	Node    string     // --node NAME
	Ports   []PortBind // --port PORTNAME=URI, repeated
	Control string     // --control PATH
	Metrics string     // --metrics ADDR:PORT ("" = no HTTP server)
	// MetricsNetns is the network namespace the metrics listener is
	// opened in (--metrics-netns PATH; "" the daemon's own).
	MetricsNetns string
	// Dilation is --time-dilation N; 0 takes the lab file's time_dilation
	// (1, real time, when the file has none).
	Dilation int
	// Log is --log FILE ("" = standard error).
	Log string
	// NoFlood is --no-flood PORTNAME, repeated: ports left out of the
	// broadcast/multicast flooding always, besides those outside the lab's
	// spanning tree, which the daemon computes itself (linkstate.go). A
	// group-addressed frame arriving on one is not flooded either.
	NoFlood []string
}

// TransportKind is the scheme of a port URI.
type TransportKind string

const (
	SeqpacketListen TransportKind = "seqpacket-listen" // listen, accept one peer (again after it left)
	SeqpacketDial   TransportKind = "seqpacket-dial"   // dial, retrying until the peer listens
	UDPLink         TransportKind = "udp"              // LOCAL_ADDR:PORT,REMOTE_ADDR:PORT
	TAPLink         TransportKind = "tap"              // IFNAME@NETNS: a TAP in a named namespace
)

// The shm-listen: and shm-dial: schemes are seqpacket-listen and
// seqpacket-dial whose frames then travel through shared-memory rings
// (rt.Shm); the socket carries the setup and the end of the link. Both
// ends of a link must use them.
const (
	shmListen = "shm-listen"
	shmDial   = "shm-dial"
)

// PortBind is one --port PORTNAME=URI.
type PortBind struct {
	Port string // the switch port's name in the lab file
	URI  string // as written
	Kind TransportKind
	// Path is the socket file of seqpacket URIs.
	Path string
	// Shm: frames go through shared-memory rings set up over the socket
	// (shm-listen / shm-dial).
	Shm bool
	// Local and Remote are the addresses of a udp URI.
	Local, Remote netip.AddrPort
	// IfName and NetNS are the TAP device and its namespace ("" = the
	// daemon's own namespace).
	IfName, NetNS string
}

// Scheme is the URI's scheme as written (shm-listen for a seqpacket-listen
// port with rings).
func (b *PortBind) Scheme() string {
	switch {
	case b.Shm && b.Kind == SeqpacketListen:
		return shmListen
	case b.Shm:
		return shmDial
	}
	return string(b.Kind)
}

// ParsePortFlag parses the value of one --port flag, PORTNAME=URI.
func ParsePortFlag(v string) (PortBind, error) {
	name, uri, ok := strings.Cut(v, "=")
	if !ok || name == "" || uri == "" {
		return PortBind{}, fmt.Errorf("--port %q: want PORTNAME=URI", v)
	}
	b, err := ParseURI(uri)
	if err != nil {
		return PortBind{}, fmt.Errorf("--port %q: %w", v, err)
	}
	b.Port = name
	return b, nil
}

// ParseURI parses a port URI (see TransportKind).
func ParseURI(uri string) (PortBind, error) {
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || rest == "" {
		return PortBind{}, fmt.Errorf("URI %q: want SCHEME:ARGS with scheme seqpacket-listen, seqpacket-dial, shm-listen, shm-dial, udp or tap", uri)
	}
	b := PortBind{URI: uri, Kind: TransportKind(scheme)}
	switch scheme {
	case shmListen:
		b.Kind, b.Shm = SeqpacketListen, true
	case shmDial:
		b.Kind, b.Shm = SeqpacketDial, true
	}
	switch b.Kind {
	case SeqpacketListen, SeqpacketDial:
		if !strings.HasPrefix(rest, "/") {
			return PortBind{}, fmt.Errorf("URI %q: socket path %q must be absolute", uri, rest)
		}
		// sun_path holds 108 bytes including the terminating NUL.
		if len(rest) > 107 {
			return PortBind{}, fmt.Errorf("URI %q: socket path is %d bytes, at most 107 fit a unix socket address", uri, len(rest))
		}
		b.Path = rest
	case UDPLink:
		l, r, ok := strings.Cut(rest, ",")
		if !ok {
			return PortBind{}, fmt.Errorf("URI %q: want udp:LOCAL_ADDR:PORT,REMOTE_ADDR:PORT", uri)
		}
		var err error
		if b.Local, err = rt.ResolveUDPAddr(l); err != nil {
			return PortBind{}, fmt.Errorf("URI %q: local address %q: %w", uri, l, err)
		}
		if b.Remote, err = rt.ResolveUDPAddr(r); err != nil {
			return PortBind{}, fmt.Errorf("URI %q: remote address %q: %w", uri, r, err)
		}
		if b.Remote.Port() == 0 {
			return PortBind{}, fmt.Errorf("URI %q: remote port 0", uri)
		}
	case TAPLink:
		ifn, ns, _ := strings.Cut(rest, "@")
		if err := checkIfName(ifn); err != nil {
			return PortBind{}, fmt.Errorf("URI %q: interface: %w", uri, err)
		}
		if ns != "" {
			if err := checkNsName(ns); err != nil {
				return PortBind{}, fmt.Errorf("URI %q: namespace: %w", uri, err)
			}
		}
		b.IfName, b.NetNS = ifn, ns
	default:
		return PortBind{}, fmt.Errorf("URI %q: unknown scheme %q (seqpacket-listen, seqpacket-dial, shm-listen, shm-dial, udp, tap)", uri, scheme)
	}
	return b, nil
}

// checkIfName accepts Linux interface names made of letters, digits, '_',
// '-' and '.', 1 to 15 bytes (IFNAMSIZ-1), so a name never reaches a
// command or a path it could inject into.
func checkIfName(s string) error {
	if len(s) == 0 || len(s) > 15 {
		return fmt.Errorf("%q: 1 to 15 bytes", s)
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%q: only letters, digits, '_', '-', '.'", s)
		}
	}
	if s == "." || s == ".." {
		return fmt.Errorf("%q is not an interface name", s)
	}
	return nil
}

// checkNsName accepts the names of /run/netns entries we create
// (emu-<lab>-<node>) and any other plain file name of the same alphabet.
func checkNsName(s string) error {
	if len(s) == 0 || len(s) > 64 {
		return fmt.Errorf("%q: 1 to 64 bytes", s)
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%q: only letters, digits, '_', '-'", s)
		}
	}
	if s[0] == '-' {
		return fmt.Errorf("%q starts with '-'", s)
	}
	return nil
}

// validate checks the options that do not need the lab file.
func (o *Options) validate() error {
	if o.Lab == "" {
		return fmt.Errorf("--lab is required")
	}
	if o.Node == "" {
		return fmt.Errorf("--node is required")
	}
	if o.Control == "" {
		return fmt.Errorf("--control is required")
	}
	if !strings.HasPrefix(o.Control, "/") || len(o.Control) > 107 {
		return fmt.Errorf("--control %q: an absolute path of at most 107 bytes", o.Control)
	}
	if o.Metrics != "" {
		if _, err := netip.ParseAddrPort(o.Metrics); err != nil {
			return fmt.Errorf("--metrics %q: want ADDR:PORT: %w", o.Metrics, err)
		}
	}
	if o.MetricsNetns != "" && o.Metrics == "" {
		return fmt.Errorf("--metrics-netns %s without --metrics", o.MetricsNetns)
	}
	if o.Dilation < 0 {
		return fmt.Errorf("--time-dilation %d: must be >= 1", o.Dilation)
	}
	seen := map[string]bool{}
	for _, b := range o.Ports {
		if seen[b.Port] {
			return fmt.Errorf("--port %s=%s: port %s bound twice", b.Port, b.URI, b.Port)
		}
		seen[b.Port] = true
	}
	return nil
}
