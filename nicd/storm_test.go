package nicd

import (
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/wire"
)

// TestStormEvery: without an interval a storming emunic re-sends its XOFF
// every half of the pause, as the simulator's storming host does (it sent
// at nine tenths of the pause, the simulator at half, and the lab file's
// documentation said "just before the quanta expire").
func TestStormEvery(t *testing.T) {
	if got, want := stormEvery(lab.PFCStorm{}, 100e9), wire.QuantaToTime(0xFFFF, 100e9)/2; got != want {
		t.Errorf("default at 100G: %v, want %v", got, want)
	}
	if got := stormEvery(lab.PFCStorm{Interval: 7 * clock.Microsecond}, 100e9); got != 7*clock.Microsecond {
		t.Errorf("interval 7us: %v", got)
	}
}
