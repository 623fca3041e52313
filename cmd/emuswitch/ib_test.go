package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestIBRefusesTAP: the command refuses a tap: port on a switch of an IB
// lab and names the flag.
func TestIBRefusesTAP(t *testing.T) {
	ctl := filepath.Join(t.TempDir(), "c.sock")
	err := run([]string{"--lab", "../../swd/testdata/ib-two-hosts.yaml", "--node", "sw1", "--control", ctl,
		"--port", "p1=tap:ib0@emu-x-h1"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--port p1=tap:ib0@emu-x-h1: fabric ib") {
		t.Fatalf("err = %v, want the tap port refused", err)
	}
}
