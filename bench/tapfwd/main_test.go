//go:build linux

package main

import "testing"

func TestParseTAP(t *testing.T) {
	for _, tc := range []struct {
		in, ifname, ns string
		ok             bool
	}{
		{"p1=tap:eth0@hostA", "eth0", "hostA", true},
		{"p1=tap:eth0", "", "", false},
		{"p1=seqpacket-listen:/x", "", "", false},
		{"tap:eth0@hostA", "", "", false},
		{"p1=tap:@hostA", "", "", false},
		{"p1=tap:averyveryverylongname@hostA", "", "", false},
	} {
		ifname, ns, err := parseTAP(tc.in)
		if (err == nil) != tc.ok || ifname != tc.ifname || ns != tc.ns {
			t.Errorf("parseTAP(%q) = %q, %q, %v; want %q, %q, ok=%v", tc.in, ifname, ns, err, tc.ifname, tc.ns, tc.ok)
		}
	}
}

func TestRunRefusesBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "p1=tap:a@x"},
		{"--port", "p1=tap:a@x", "--port", "p2=tap:b@y", "--port", "p3=tap:c@z"},
		{"--bogus"},
		{"--port"},
	} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}
