package sim

import (
	"fmt"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/switchcore"
)

// net is a small topology builder for the scenario tests.
type net struct {
	t testing.TB
	s *Sim
}

func newNet(t testing.TB, opt Options) *net { return &net{t: t, s: New(opt)} }

func (n *net) must(err error) {
	n.t.Helper()
	if err != nil {
		n.t.Fatal(err)
	}
}

// sw adds a switch of ports ports at rate with DefaultConfig, then mod.
func (n *net) sw(name string, ports int, rate uint64, mod func(c *switchcore.Config)) *switchcore.Config {
	n.t.Helper()
	c := switchcore.DefaultConfig(name, ports, rate)
	c.CutThrough = true
	if mod != nil {
		mod(c)
	}
	n.must(n.s.AddSwitch(name, c))
	return c
}

func (n *net) host(name string, fab Fabric) {
	n.t.Helper()
	n.must(n.s.AddHost(HostConfig{Name: name, Fabric: fab}))
}

func (n *net) link(a string, ap int, b string, bp int, rate uint64, delay clock.Time) *Link {
	n.t.Helper()
	l, err := n.s.Connect(PortRef{a, ap}, PortRef{b, bp}, LinkConfig{Rate: rate, Delay: delay, MTU: 4200})
	n.must(err)
	return l
}

func (n *net) flow(fc FlowConfig) {
	n.t.Helper()
	n.must(n.s.AddFlow(fc))
}

func (n *net) run() *Results {
	n.t.Helper()
	r, err := n.s.Run(nil)
	n.must(err)
	return r
}

func hostNames(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// linkDir finds the result direction from node a to node b.
func dirStats(r *Results, a, b string) *LinkStats {
	for i := range r.Links {
		l := &r.Links[i]
		if l.A.Node == a && l.B.Node == b {
			return &l.Dir[0]
		}
		if l.B.Node == a && l.A.Node == b {
			return &l.Dir[1]
		}
	}
	return nil
}

// busy is the direction's utilisation between its first data frame's start
// and its last data frame's tail.
func busy(d *LinkStats) float64 {
	if d.LastDataTail <= d.FirstDataTx {
		return 0
	}
	return float64(d.DataBusy) / float64(d.LastDataTail-d.FirstDataTx)
}

func sumPrio(r *Results, sw string, fn func(pc *switchcore.PrioCounters) uint64) uint64 {
	var n uint64
	for i := range r.Ports {
		if r.Ports[i].Switch != sw {
			continue
		}
		for p := range r.Ports[i].Prio {
			n += fn(&r.Ports[i].Prio[p])
		}
	}
	return n
}
