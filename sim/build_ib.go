package sim

import (
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
		SM:     sm.Config{LightSweep: spec.IB.SM.SweepInterval},
	})
	return err
}

// SubnetManager returns the SM that ManageIB (or a lab file's ib.sm)
// started, or nil when the fabric is configured statically.
func (s *Sim) SubnetManager() *SubnetManager { return s.sm }

// SetUp takes the link down or brings it up now, as a LinkEvent would:
// both ends see the change at once (a switch's SMA then flags
// PortStateChange for the SM's next light sweep). Call it between
// RunUntil calls.
func (l *Link) SetUp(up bool) { l.setUp(up) }
