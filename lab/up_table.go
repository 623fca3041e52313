package lab

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints what `up` built: one row per node with its namespace,
// daemon and pid, and per connected port its peer and transport (a host's
// row shows its interface's address, MTU and MAC instead).
func (li *LabInfo) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "lab %s is up (%s, hosts %s, %.2fs); state %s\n", li.Lab, li.File, li.Hosts, li.Took.Seconds(), li.StateDir)
	if li.TimeDilation > 1 {
		fmt.Fprintf(w, "time dilation %d: the emulated fabric runs %d times slower than the wall clock\n", li.TimeDilation, li.TimeDilation)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tNAMESPACE\tDAEMON\tPID\tPORT\tPEER\tTRANSPORT / ADDRESS")
	for _, n := range li.Nodes {
		daemon, pid := "-", "-"
		if n.Daemon != "" {
			daemon, pid = n.Binary, strconv.Itoa(n.Pid)
		}
		rows := nodeRows(&n)
		if len(rows) == 0 {
			rows = [][3]string{{"-", "-", "-"}}
		}
		for i, r := range rows {
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Kind, n.Namespace, daemon, pid, r[0], r[1], r[2])
			} else {
				fmt.Fprintf(tw, "\t\t\t\t\t%s\t%s\t%s\n", r[0], r[1], r[2])
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return li.writeMetrics(w, "")
}

// writeMetrics lists the daemons' Prometheus endpoints (up --metrics), one
// line each after indent; nothing without them.
func (li *LabInfo) writeMetrics(w io.Writer, indent string) error {
	for _, n := range li.Nodes {
		if n.Metrics == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "%smetrics %s: http://%s/metrics\n", indent, n.Name, n.Metrics); err != nil {
			return err
		}
	}
	return nil
}

// WriteMetrics lists the daemons' Prometheus endpoints, indented (status).
func (li *LabInfo) WriteMetrics(w io.Writer) error { return li.writeMetrics(w, "  ") }

// nodeRows is a node's (port, peer, detail) rows.
func nodeRows(n *NodeInfo) [][3]string {
	var rows [][3]string
	for _, p := range n.Ports {
		detail := p.Transport
		if n.Iface != nil && n.Iface.Name == p.Name {
			detail = ifaceSummary(n.Iface)
			if n.Daemon != "" {
				detail += " via " + shortURI(p.Transport)
			}
		} else {
			detail = shortURI(detail)
		}
		if p.NoFlood {
			detail += " (no flooding: outside the spanning tree)"
		}
		rows = append(rows, [3]string{p.Name, p.Peer, detail})
	}
	return rows
}

func ifaceSummary(f *IfaceInfo) string {
	s := fmt.Sprintf("%s mtu %d %s", f.Addr, f.MTU, f.MAC)
	if len(f.Routes) > 0 {
		s += " routes " + strings.Join(f.Routes, ",")
	}
	if f.Owner != "" {
		s += " (TAP held by " + f.Owner + ")"
	}
	return s
}

// shortURI drops the state directory from a socket URI: the table names
// sock/link3.sock, the full path is in up.json.
func shortURI(u string) string {
	scheme, rest, ok := strings.Cut(u, ":")
	if !ok || !strings.HasPrefix(scheme, "seqpacket") && !strings.HasPrefix(scheme, "shm") {
		return u
	}
	if i := strings.LastIndex(rest, "/sock/"); i >= 0 {
		rest = rest[i+1:]
	}
	return scheme + ":" + rest
}
