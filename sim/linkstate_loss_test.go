package sim

// A lab's link `loss` applies to link-state advertisements too: a lost
// one is replaced by its origin's refresh (linkStateRefresh), so after the
// scheduled link comes back every switch routes over it again. (Without
// the refresh 2 of 40 seeds kept routing around it for the rest of the
// run; from a review.)

import (
	"strings"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
)

func TestLinkStateLossRepaired(t *testing.T) {
	src := strings.Replace(rerouteLab, "defaults: {rate: 100G, delay: 1us, mtu: 4200}",
		"defaults: {rate: 100G, delay: 1us, mtu: 4200, loss: 0.1}", 1)
	src = strings.Replace(src, "sim: {duration: 500us, sample_interval: 10us}", "sim: {duration: 5ms, sample_interval: 100us}", 1)
	spec, err := lab.Parse("reroute-lossy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for seed := uint64(1); seed <= 40; seed++ {
		s, err := Build(spec, seed)
		if err != nil {
			t.Fatal(err)
		}
		var bad []string
		s.At(4900*clock.Microsecond, func() {
			for _, sw := range []string{"spine1", "spine2", "leaf1", "leaf2"} {
				for o, down := range s.Switch(sw).LinkStateDB() {
					if len(down) > 0 {
						bad = append(bad, sw+" believes "+o+" has "+strings.Join(down, ",")+" down")
					}
				}
			}
		})
		if _, err := s.Run(nil); err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			stale++
			if stale == 1 {
				t.Logf("seed %d, 4.6 ms after every link is back up: %v", seed, bad)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d of 40 seeds end with a stale down link in some database (10%% link loss, link back up at 300us, run 5ms)", stale)
	}
}
