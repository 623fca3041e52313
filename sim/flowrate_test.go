package sim

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
)

// TestFlowRatesWithinLinkRate: no 10 us sample of flow_rates.csv (received
// payload rate per flow) exceeds the link rate, nor does the sum of the
// flows an incast sends into one 100G link. A 4 KiB payload rides in a
// 4154-byte frame that holds the link for 4178 byte times with preamble,
// FCS and inter-frame gap: 29.9 of them fit in 10 us, so a sample holds at
// most 30 (98.3 Gb/s). Before the links counted the wire overhead, 30.1
// fitted and some samples held 31: 101.6 Gb/s on a 100G link, for the
// back-to-back WRITE and for the incast's sum alike.
func TestFlowRatesWithinLinkRate(t *testing.T) {
	for _, file := range []string{"two-hosts", "incast"} {
		t.Run(file, func(t *testing.T) {
			spec, err := lab.Load("../examples/" + file + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			spec.Sim.SampleInterval = 10 * clock.Microsecond
			_, r := buildAndRun(t, spec)
			const rate = 100e9
			var top, topSum float64
			for i := range r.Series.Times {
				sum := 0.0
				for _, f := range r.Series.Flows {
					if i < len(f.Bps) {
						sum += f.Bps[i]
						top = max(top, f.Bps[i])
					}
				}
				topSum = max(topSum, sum)
			}
			t.Logf("%d samples of %v: largest %.2f Gb/s, largest sum over flows %.2f Gb/s", len(r.Series.Times), r.Series.Interval, top/1e9, topSum/1e9)
			if top == 0 {
				t.Fatal("no traffic sampled")
			}
			// Every flow of these labs ends on one 100G link.
			if top > rate || topSum > rate {
				t.Errorf("a 10 us sample of %.2f Gb/s (sum over flows %.2f Gb/s) on a %.0f Gb/s link", top/1e9, topSum/1e9, rate/1e9)
			}
		})
	}
}
