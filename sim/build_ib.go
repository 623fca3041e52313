package sim

import (
	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sm"
)

// manageFromSpec hands an IB lab with an ib.sm section to a subnet
// manager (ManageIB): the fabric starts unconfigured and the SM's first
// heavy sweep begins at time zero. Build calls it last, so the returned
// Sim is already started.
func manageFromSpec(s *Sim, spec *lab.Spec) error {
	if spec.Fabric != lab.FabricIB || spec.IB == nil || spec.IB.SM == nil {
		return nil
	}
	_, err := s.ManageIB(IBManagement{
		SMHost: spec.IB.SM.Host,
		SM:     sm.Config{LightSweep: spec.IB.SM.SweepInterval, Timeout: smpTimeout(spec)},
	})
	return err
}

// smpTimeout is how long the simulated SM waits for an SMP's answer: the
// SM's default (100 µs, a fabric of short cables) plus twice the delay of
// every link, which bounds the round trip of a directed route across the
// fabric however long its cables. With the default alone an SMP across
// two 25 µs links timed out before its answer could come, every time, and
// the fabric never came up.
func smpTimeout(spec *lab.Spec) clock.Time {
	t := 100 * clock.Microsecond
	for _, l := range spec.Links {
		t += 2 * l.Delay
	}
	return t
}

// SubnetManager returns the SM that ManageIB (or a lab file's ib.sm)
// started, or nil when the fabric is configured statically.
func (s *Sim) SubnetManager() *SubnetManager { return s.sm }

// SetUp takes the link down or brings it up now, as a LinkEvent would:
// both ends see the change at once (a switch's SMA then flags
// PortStateChange for the SM's next light sweep). Call it between
// RunUntil calls.
func (l *Link) SetUp(up bool) { l.setUp(up) }
