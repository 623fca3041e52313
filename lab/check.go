package lab

import "fmt"

// Checked is what `up` would build from a lab file, computed as up
// computes it but without touching anything (no root needed): for
// `emulab check`.
type Checked struct {
	Mode       HostMode // HostsNIC or HostsTAP
	Namespaces []string // one per node, in file order
	Switches   int      // emuswitch daemons
	NICs       int      // emunic daemons
	TAPHosts   int      // hosts that are TAP ports of their switch (HostsTAP)
	// NoFlood names the switch ports outside the spanning tree
	// ("sw1:p3"), which do not flood.
	NoFlood []string
}

// Check plans spec as `up` would in mode (HostsAuto counts as HostsNIC,
// since emunic is what up looks for first) and reports what it would
// create, or why up would refuse the lab: a namespace name too long, two
// NICs linked directly with --hosts tap, an IB lab without emunic.
func Check(spec *Spec, mode HostMode) (*Checked, error) {
	if mode == HostsAuto {
		mode = HostsNIC
	}
	p, err := makePlan(spec, mode, spec.File, func(name string) (string, error) { return name + ".sock", nil })
	if err != nil {
		return nil, err
	}
	c := &Checked{Mode: mode}
	for _, pn := range p.nodes {
		c.Namespaces = append(c.Namespaces, pn.namespace)
		switch {
		case pn.daemon != nil && pn.daemon.binary == SwitchBinary:
			c.Switches++
		case pn.daemon != nil:
			c.NICs++
		case pn.iface != nil:
			c.TAPHosts++
		}
		for _, pt := range pn.ports {
			if pt.noFlood {
				c.NoFlood = append(c.NoFlood, fmt.Sprintf("%s:%s", pn.node.Name, pt.name))
			}
		}
	}
	return c, nil
}
