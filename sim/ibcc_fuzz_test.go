package sim

import (
	"testing"

	"github.com/emufabric/emufabric/cc"
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// FuzzIBCNReceive feeds arbitrary bytes to the receive path of an IB host
// with congestion control (CN packets are decoded there, before the bth
// decoder): it must never panic, a frame is counted once at most as an
// error, and only a well-formed CN packet for one of its QPs moves a CCTI.
func FuzzIBCNReceive(f *testing.F) {
	good := make([]byte, ibCNPLen)
	encodeIBCNP(good, 0, 0, 2, 1, srcQPBase)
	f.Add(good)
	other := make([]byte, ibCNPLen)
	encodeIBCNP(other, 0, 5, 2, 1, srcQPBase+7) // no such QP
	f.Add(other)
	bad := append([]byte(nil), good...)
	bad[13] ^= 1
	f.Add(bad)
	f.Add(good[:ibCNPLen-1])
	f.Add([]byte{})
	cfg := cc.DefaultIBCC()
	s := New(Options{Seed: 1, Duration: clock.Microsecond})
	for _, n := range []string{"h1", "h2"} {
		if err := s.AddHost(HostConfig{Name: n, Fabric: FabricIB, IBCC: &cfg}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := s.Connect(PortRef{"h1", 0}, PortRef{"h2", 0}, LinkConfig{Rate: 100e9}); err != nil {
		f.Fatal(err)
	}
	if err := s.AddFlow(FlowConfig{Name: "a", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 4096}, Count: 1}); err != nil {
		f.Fatal(err)
	}
	if err := s.Start(); err != nil {
		f.Fatal(err)
	}
	h := s.Host("h1")
	rp := h.ccRP(h.flows[0])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > frame.MaxFrame {
			return
		}
		fr := s.pool.Get(len(b))
		copy(fr.Data, b)
		before, becns := h.Stats, rp.Stats.BECNs
		h.deliver(0, fr)
		st := h.Stats
		errs := st.ICRCErrors + st.VCRCErrors + st.Malformed + st.UnknownFlow - before.ICRCErrors - before.VCRCErrors - before.Malformed - before.UnknownFlow
		if errs > 1 {
			t.Fatalf("frame counted %d times as an error", errs)
		}
		if rp.Stats.BECNs != becns && (errs != 0 || st.IBCC.BECNRx != before.IBCC.BECNRx+1) {
			t.Fatalf("a CCTI moved for a frame that was not a good CN packet")
		}
	})
}
