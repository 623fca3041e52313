package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// An RDMA NIC paused by PFC is in the host pause series (host_pause.csv,
// pause.svg) as a synthetic host is: 8:1 incast with PFC alone, each
// sender's sampled paused time (samples paused × interval) is within 10%
// of its NIC's pause duration: the pauses are a few samples long, so the
// sampled state over- or under-counts each by up to one interval.
func TestNICPauseSeries(t *testing.T) {
	const dur = 3 * clock.Millisecond
	r := incastNIC(t, "none", nil, dur).run()
	iv := r.Series.Interval
	paused := make(map[string]clock.Time)
	for _, h := range r.Series.Hosts {
		for _, p := range h.Paused {
			if p {
				paused[h.Host] += iv
			}
		}
	}
	var checked int
	for _, n := range r.NICs {
		var want clock.Time
		for p := range 8 {
			want += n.PauseDuration[p]
		}
		if want == 0 {
			continue
		}
		checked++
		got := paused[n.Name]
		if d := got - want; d < -want/10 || d > want/10 {
			t.Errorf("%s: paused %v in the series, %v by the NIC's counter", n.Name, got, want)
		}
	}
	if checked == 0 {
		t.Fatal("no NIC was paused: the scenario does not exercise PFC")
	}
}
