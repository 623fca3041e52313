package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
)

// FuzzHostReceive feeds arbitrary bytes to a RoCE and an IB host's receive
// path: it must never panic, and every frame must be either accounted or
// counted as an error.
func FuzzHostReceive(f *testing.F) {
	// Seeds: real frames of both fabrics captured from a short run.
	for _, fab := range []Fabric{FabricRoCE, FabricIB} {
		s := pair(f, Options{Seed: 1, Duration: 20 * clock.Microsecond}, LinkConfig{Rate: 100e9, Delay: clock.Microsecond}, fab,
			FlowConfig{Name: "a", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 5000}, Count: 1, PMTU: 1024, Priority: 3},
			FlowConfig{Name: "b", Src: "h1", Dst: []string{"h2"}, Kind: UDSend, Size: SizeDist{Kind: Fixed, Bytes: 3}, Count: 1, Priority: 3})
		k := 0
		s.SetTap(func(_ *Link, _ int, fr *frame.Frame) {
			if k < 12 {
				f.Add(byte(fab), append([]byte(nil), fr.Data...))
				k++
			}
		})
		if _, err := s.Run(nil); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(byte(0), []byte{})
	f.Add(byte(1), []byte{0, 0, 0, 0, 0, 0})
	sims := [2]*Sim{}
	for i, fab := range []Fabric{FabricRoCE, FabricIB} {
		sims[i] = pair(f, Options{Seed: 1, Duration: clock.Microsecond}, LinkConfig{Rate: 100e9}, fab,
			FlowConfig{Name: "a", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 5000}, Count: 1, Priority: 3})
		if err := sims[i].Start(); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, fab byte, b []byte) {
		if len(b) > frame.MaxFrame {
			return
		}
		s := sims[fab&1]
		h := s.Host("h2")
		fr := s.pool.Get(len(b))
		copy(fr.Data, b)
		before := h.Stats
		h.deliver(0, fr)
		st := h.Stats
		errs := st.ICRCErrors + st.VCRCErrors + st.Malformed + st.UnknownFlow - before.ICRCErrors - before.VCRCErrors - before.Malformed - before.UnknownFlow
		if st.RxFrames != before.RxFrames+1 || errs > 1 {
			t.Fatalf("frame counted %d times as an error", errs)
		}
	})
}
