package nicd

import (
	"testing"

	"github.com/emufabric/emufabric/wire"
)

// TestCaptureNote: a RoCE record says its direction and, sent, its
// priority; an IB record its VL and SL, or a link packet's flow control,
// never a priority, which IB does not have.
func TestCaptureNote(t *testing.T) {
	link := make([]byte, wire.IBLinkSize)
	wire.IBLink(link).Encode(&wire.IBLinkFields{Op: wire.IBLinkOpNormal, FCTBS: 100, VL: 0, FCCL: 612})
	data := make([]byte, 64)
	wire.LRH(data).Encode(&wire.LRHFields{VL: 15, SL: 0, LNH: wire.LNHLocal, DLID: 1, SLID: 2, PktLen: 16})
	for _, c := range []struct {
		r    capRec
		ib   bool
		want string
	}{
		{capRec{tx: true, prio: 3, data: make([]byte, 60)}, false, "tx prio 3"},
		{capRec{data: make([]byte, 60)}, false, "rx"},
		{capRec{tx: true, data: link}, true, "tx flow control: VL 0 FCTBS 100 FCCL 612"},
		{capRec{data: data}, true, "rx VL 15 SL 0"},
		{capRec{tx: true, data: []byte{1, 2}}, true, "tx"},
	} {
		if got := captureNote(c.r, c.ib); got != c.want {
			t.Errorf("captureNote(%v, ib %v) = %q, want %q", c.r.data[:min(len(c.r.data), 8)], c.ib, got, c.want)
		}
	}
}
