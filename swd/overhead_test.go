package swd

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
)

// TestWireOverheadPaced: the wire the daemon emulates takes the next frame
// the per-frame overhead after a tail, as the engine's egress and the
// simulator's links do: 24 byte times on Ethernet (preamble, FCS, gap), 0
// on IB. Before, the pacers were built without it and a TAP host's frames
// reached a 100G port 17 % faster than a real link carries 64-byte
// messages.
func TestWireOverheadPaced(t *testing.T) {
	for _, c := range []struct {
		lab  string
		want int
	}{{testLab, wire.EthernetOverhead}, {ibTestLab, wire.IBOverhead}} {
		t.Run(filepath.Base(c.lab), func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Lab: c.lab, Node: "sw1", Control: filepath.Join(dir, "ctl.sock")}
			for _, p := range []string{"p1", "p2"} {
				b, err := ParsePortFlag(p + "=seqpacket-listen:" + filepath.Join(dir, p+".sock"))
				if err != nil {
					t.Fatal(err)
				}
				o.Ports = append(o.Ports, b)
			}
			var logBuf bytes.Buffer
			d, err := New(o, &logBuf)
			if err != nil {
				t.Fatal(err)
			}
			d.Start()
			defer d.Close()
			for _, p := range d.ports {
				if got := p.out.Config().Overhead; got != c.want {
					t.Errorf("port %s: egress wire overhead %d, want %d", p.name, got, c.want)
				}
				if p.in != nil && p.in.Config().Rate != rt.Unpaced { // an emunic times its own frames
					if got := p.in.Config().Overhead; got != c.want {
						t.Errorf("port %s: ingress wire overhead %d, want %d", p.name, got, c.want)
					}
				}
			}
		})
	}
}
