package lab

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// waitRoutes waits, in a RoCE lab whose switches are linked to one
// another, until their link-state routing has converged: every switch
// holds the same advertisements and, every link being up, routes around
// none. While the links came up one by one, each switch advertised the
// ports still down, and a switch that has not yet heard the last word of
// every other floods over a stale tree and routes around links that are
// up, for a few milliseconds after the interfaces are. `up` promises a
// lab that works when it returns. Not converging by the deadline is
// reported, not fatal: the lab is built, and the switches keep
// advertising. A daemon that exits meanwhile fails up, as it does while
// up waits for the daemons to be ready: a switch killed here left up
// asking its socket until the deadline, then saying the lab was up with
// a warning, one switch dead.
func (l *Lab) waitRoutes(ctx context.Context, plan *upPlan, deadline time.Time, say func(string, ...any)) error {
	if plan.spec.Fabric == FabricIB {
		return nil // the subnet manager routes an IB fabric
	}
	var sws []*planNode
	for _, pn := range plan.nodes {
		if pn.node.Kind == KindSwitch && pn.daemon != nil && linksSwitch(pn.node) {
			sws = append(sws, pn)
		}
	}
	if len(sws) < 2 {
		return nil
	}
	start := time.Now()
	for {
		if err := l.died(plan); err != nil {
			return err
		}
		waiting := routesWaiting(sws)
		if len(waiting) == 0 {
			say("link-state routing: %d switches agree, no link routed around, after %.2fs", len(sws), time.Since(start).Seconds())
			return nil
		}
		if err := l.died(plan); err != nil {
			return err // what it was waiting for
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			say("warning: link-state routing has not converged yet (the switches keep advertising; `%s` shows it): %s",
				StatusCommand(l.State.Root, plan.spec.Name), strings.Join(waiting, "; "))
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// linksSwitch says whether n has a link to another switch.
func linksSwitch(n *Node) bool {
	return slices.ContainsFunc(n.Ports, func(p *Port) bool { return p.Peer != nil && p.Peer.Node.Kind == KindSwitch })
}

// routesWaiting asks each switch for its link-state view and says, per
// switch not converged, why: an error, the links it routes around, or
// advertisements that differ from the first switch's.
func routesWaiting(sws []*planNode) []string {
	var waiting []string
	var first map[string][]string
	var firstName string
	for _, pn := range sws {
		var r linkStateReply
		err := ControlRequest(pn.daemon.control, map[string]string{"op": "status"}, &r, time.Second)
		switch {
		case err != nil:
			waiting = append(waiting, pn.node.Name+": "+err.Error())
			continue
		case r.LinkState == nil:
			waiting = append(waiting, pn.node.Name+": no link-state routing in its status")
			continue
		case len(r.LinkState.RoutedAround) > 0:
			waiting = append(waiting, fmt.Sprintf("%s routes around %s", pn.node.Name, strings.Join(r.LinkState.RoutedAround, " ")))
			continue
		}
		if first == nil {
			first, firstName = r.LinkState.Down, pn.node.Name
			continue
		}
		if !maps.EqualFunc(first, r.LinkState.Down, slices.Equal) {
			waiting = append(waiting, fmt.Sprintf("%s holds advertisements %v, %s %v", pn.node.Name, r.LinkState.Down, firstName, first))
		}
	}
	return waiting
}
