package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// TestLinkBusyCutAtEnd: a saturated link is at most 100 % busy. A frame
// handed to the link just before the end of the run counts only the part
// of its serialization before the end: the whole frame made two-hosts'
// h1 -> sw1 100.1 % busy.
func TestLinkBusyCutAtEnd(t *testing.T) {
	const rate = 100e9
	// A 4 KiB payload packet takes a little over 330 ns at 100G; 1 ms and
	// 100 ns end the run in the middle of one.
	end := clock.Millisecond + 100*clock.Nanosecond
	s := pair(t, Options{Seed: 1, Duration: end}, LinkConfig{Rate: rate, Delay: clock.Microsecond, MTU: 4200}, FabricRoCE,
		FlowConfig{Name: "f", Src: "h1", Dst: []string{"h2"}, Size: SizeDist{Kind: Fixed, Bytes: 1 << 20}, Priority: 3, PMTU: 4096})
	r, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := dirStats(r, "h1", "h2")
	frame := clock.SerializationTime(4096+100, rate)
	t.Logf("end %v, busy %v (data %v), %.3f%%", r.End, st.Busy, st.DataBusy, 100*float64(st.Busy)/float64(r.End))
	if st.Busy > r.End || st.DataBusy > st.Busy {
		t.Fatalf("busy %v, data busy %v in a run of %v", st.Busy, st.DataBusy, r.End)
	}
	// Back to back from time 0: busy all along but for the first packet's
	// start.
	if st.Busy < r.End-frame {
		t.Fatalf("busy %v in a run of %v: the cut took too much", st.Busy, r.End)
	}
	if l := s.Links()[0]; l.Stats(0).Busy != st.Busy {
		t.Fatalf("Link.Stats %v, results %v", l.Stats(0).Busy, st.Busy)
	}
}
