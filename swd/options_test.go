package swd

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePortFlag(t *testing.T) {
	good := []struct {
		in   string
		want PortBind
	}{
		{"p1=seqpacket-listen:/run/x/sock/a.sock", PortBind{Port: "p1", Kind: SeqpacketListen, Path: "/run/x/sock/a.sock"}},
		{"p2=seqpacket-dial:/s.sock", PortBind{Port: "p2", Kind: SeqpacketDial, Path: "/s.sock"}},
		{"p3=udp:10.0.0.1:4000,10.0.0.2:4001", PortBind{Port: "p3", Kind: UDPLink,
			Local: netip.MustParseAddrPort("10.0.0.1:4000"), Remote: netip.MustParseAddrPort("10.0.0.2:4001")}},
		{"p4=udp:[::1]:0,[::1]:7", PortBind{Port: "p4", Kind: UDPLink,
			Local: netip.MustParseAddrPort("[::1]:0"), Remote: netip.MustParseAddrPort("[::1]:7")}},
		{"p5=tap:eth0@emu-lab-h1", PortBind{Port: "p5", Kind: TAPLink, IfName: "eth0", NetNS: "emu-lab-h1"}},
		{"p6=tap:tap0", PortBind{Port: "p6", Kind: TAPLink, IfName: "tap0"}},
	}
	for _, c := range good {
		got, err := ParsePortFlag(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		c.want.URI = c.in[strings.IndexByte(c.in, '=')+1:]
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, c.want)
		}
	}
	// Every error names the flag and the value, and says what is wrong.
	bad := []struct{ in, why string }{
		{"p1", "PORTNAME=URI"},
		{"=tap:eth0", "PORTNAME=URI"},
		{"p1=", "PORTNAME=URI"},
		{"p1=ftp:x", `unknown scheme "ftp"`},
		{"p1=tap", "SCHEME:ARGS"},
		{"p1=seqpacket-listen:relative.sock", "must be absolute"},
		{"p1=seqpacket-dial:/" + strings.Repeat("a", 120), "at most 107"},
		{"p1=udp:10.0.0.1:1", "LOCAL_ADDR:PORT,REMOTE_ADDR:PORT"},
		{"p1=udp:10.0.0.1,10.0.0.2:1", "local address"},
		{"p1=udp:10.0.0.1:1,10.0.0.2:0", "remote port 0"},
		{"p1=tap:eth0;rm -rf /@ns", "only letters"},
		{"p1=tap:averyveryverylongname@ns", "1 to 15 bytes"},
		{"p1=tap:eth0@../../etc", "namespace"},
		{"p1=tap:eth0@-x", "starts with '-'"},
	}
	for _, c := range bad {
		_, err := ParsePortFlag(c.in)
		if err == nil {
			t.Errorf("%s: accepted", c.in)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, `--port "`+c.in+`"`) || !strings.Contains(msg, c.why) {
			t.Errorf("%s: error %q, want it to start with the flag and value and mention %q", c.in, msg, c.why)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Lab: "x.yaml", Node: "sw1", Control: "/run/x/ctl.sock"}
	cases := []struct {
		mod  func(o *Options)
		want string
	}{
		{func(o *Options) { o.Lab = "" }, "--lab is required"},
		{func(o *Options) { o.Node = "" }, "--node is required"},
		{func(o *Options) { o.Control = "" }, "--control is required"},
		{func(o *Options) { o.Control = "ctl.sock" }, `--control "ctl.sock"`},
		{func(o *Options) { o.Metrics = "localhost" }, `--metrics "localhost"`},
		{func(o *Options) { o.Dilation = -2 }, "--time-dilation -2"},
		{func(o *Options) {
			o.Ports = []PortBind{{Port: "p1", URI: "tap:a"}, {Port: "p1", URI: "tap:b"}}
		}, "--port p1=tap:b: port p1 bound twice"},
	}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, c := range cases {
		o := ok
		c.mod(&o)
		err := o.validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
