package lab

import (
	"context"

	"slices"
	"strings"
	"time"
)

// waitIBActive waits, in an IB lab with a subnet manager, until the SM
// has made every HCA's port Active: until then the hosts' kernels cannot
// reach each other (a port in Init sends no data), and `up` promises a
// lab that works when it returns. A port still not Active at the deadline
// is reported, not fatal: the lab is built, and the SM keeps sweeping.
func (l *Lab) waitIBActive(ctx context.Context, plan *upPlan, deadline time.Time, say func(string, ...any)) {
	spec := plan.spec
	if spec.Fabric != FabricIB || spec.IB == nil || spec.IB.SM == nil {
		return
	}
	var hcas []*planNode
	for _, pn := range plan.nodes {
		if pn.node.Kind == KindNIC && pn.daemon != nil {
			hcas = append(hcas, pn)
		}
	}
	say("waiting for the subnet manager on %s to make %d HCA port(s) Active", spec.IB.SM.Host, len(hcas))
	start := time.Now()
	for {
		var waiting []string
		for _, pn := range hcas {
			var r struct {
				Status struct {
					IBState string `json:"ib_state"`
				} `json:"status"`
			}
			err := ControlRequest(pn.daemon.control, map[string]string{"op": "status"}, &r, time.Second)
			if err != nil || r.Status.IBState != "Active" {
				state := r.Status.IBState
				if err != nil {
					state = err.Error()
				}
				waiting = append(waiting, pn.node.Name+" "+state)
			}
		}
		if len(waiting) == 0 {
			say("subnet manager: every HCA port Active after %.2fs", time.Since(start).Seconds())
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			slices.Sort(waiting)
			say("warning: ports not Active yet (the subnet manager keeps sweeping; `emulab ib ports %s` shows them): %s",
				spec.Name, strings.Join(waiting, ", "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
