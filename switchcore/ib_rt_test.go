package switchcore

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// TestIBHoldTxKeepsFlowControl: a port held by a real-time driver (its
// transport fell behind) sends no data, but its flow-control packets still
// go, as HoldTx promises for control frames: the peer keeps getting the
// credits it needs to send to us.
func TestIBHoldTxKeepsFlowControl(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	s.Receive(1, fcPkt(pool, 0, 0, 2048)) // credits for port 1, VL 0
	s.HoldTx(1, true)
	fc := len(sinks[1].fc)
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen)) // DLID 2 -> port 1
	clk.runUntil(clk.now + 4*DefaultIBCreditTick)
	if len(sinks[1].data) != 0 {
		t.Fatalf("a held port sent %d data packets", len(sinks[1].data))
	}
	if len(sinks[1].fc) <= fc {
		t.Fatalf("a held port sent no flow-control packet in %v", 4*DefaultIBCreditTick)
	}
	s.HoldTx(1, false)
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].data) != 1 {
		t.Fatalf("released port sent %d data packets, want 1", len(sinks[1].data))
	}
}

// TestIBResetFlowControl: after ResetIBFlowControl the port's counters
// start at 0 and it waits for the new peer's first flow-control packet.
func TestIBResetFlowControl(t *testing.T) {
	s, clk, pool, sinks := newIB(t, ibConfig(2))
	s.Receive(1, fcPkt(pool, 0, 0, 2048))
	for range 3 {
		deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
	}
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].data) != 3 {
		t.Fatalf("sent %d, want 3", len(sinks[1].data))
	}
	s.SetPortUp(1, false)
	s.ResetIBFlowControl(1)
	if _, ok := s.Credits(1, 0); ok {
		t.Fatal("the old peer's credit limit survived the reset")
	}
	sinks[1].fc = nil
	s.SetPortUp(1, true)
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].fc) == 0 || sinks[1].fc[0].FCTBS != 0 {
		t.Fatalf("first flow-control packets after the reset: %+v, want FCTBS 0", sinks[1].fc)
	}
	deliver(s, clk, 0, ibPkt(pool, 0, 0, 2, ibLen))
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].data) != 3 {
		t.Fatal("sent before the new peer granted credit")
	}
	s.Receive(1, fcPkt(pool, 0, 0, 100))
	clk.runUntil(clk.now + clock.Microsecond)
	if len(sinks[1].data) != 4 {
		t.Fatalf("sent %d after the new peer's credit, want 4", len(sinks[1].data))
	}
	if avail, _ := s.Credits(1, 0); avail != 100-wire.CreditBlocks(ibLen+wire.VCRCSize) {
		t.Errorf("credits left %d, want FCTBS counted from 0", avail)
	}
}
