//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

type statusFlags struct {
	stateDir string
}

// statusControlTimeout bounds each question to a daemon's control socket.
const statusControlTimeout = time.Second

func init() {
	var fl statusFlags
	cmd := &cobra.Command{
		Use:   "status [LAB]",
		Short: "Show the labs that are up: namespaces, daemons, ports",
		Long: `status lists the labs under the state directory (or the one named) and, for
each, its namespaces with their interfaces (up, carrier, MTU, addresses), its
daemons with their pids and whether they still run, and every daemon's ports as
its control socket reports them (up, down, or waiting for the peer). A daemon
that is stopped (kill -STOP, Ctrl-Z, a debugger) is said to be, with its pid
and what continues it; a daemon that does not answer within a second is named
with its state from /proc.

It reads the state directory without locking it, so it also shows a lab whose
up is still running or was killed; "down" removes such a lab.

Exit status 3 (as systemctl status for a unit that is not running) when a lab
shown has a dead, stopped or silent daemon or an up that did not finish, so
that a script can check a lab's health; 0 when every lab shown is up whole.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd, args, &fl)
		},
	}
	cmd.Flags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	rootCmd.AddCommand(cmd)
}

func runStatus(cmd *cobra.Command, args []string, fl *statusFlags) error {
	out := cmd.OutOrStdout()
	var names []string
	if len(args) == 1 {
		name, err := labNameArg(args[0])
		if err != nil {
			return err
		}
		names = []string{name}
	} else {
		var err error
		if names, err = lab.Labs(fl.stateDir); err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintf(out, "no lab is up (state directory %s)\n", fl.stateDir)
			return nil
		}
	}
	var unwell []string
	for i, name := range names {
		if i > 0 {
			fmt.Fprintln(out)
		}
		st, err := lab.ReadStatus(fl.stateDir, name)
		if errors.Is(err, lab.ErrStateCorrupt) {
			return fmt.Errorf("lab %s: %w", name, err) // says what to do
		}
		if err != nil {
			return fmt.Errorf("lab %s: %w (is it up? `%s` lists the labs)", name, err, lab.StatusCommand(fl.stateDir, ""))
		}
		if !writeStatus(out, st) {
			unwell = append(unwell, name)
		}
	}
	if len(unwell) > 0 {
		return &exitError{code: exitUnwell, err: fmt.Errorf("not up whole: %s (above)", strings.Join(unwell, ", "))}
	}
	return nil
}

// exitUnwell is status's exit status for a lab that is not up whole.
const exitUnwell = 3

// writeStatus prints one lab's status and reports whether it is up whole:
// up finished (or is running) and no daemon died.
func writeStatus(w io.Writer, st *lab.LabStatus) bool {
	state := "up"
	switch {
	case st.Info == nil && st.Locked:
		state = "coming up (an emulab up is running)"
	case st.Info == nil:
		state = "incomplete (up was interrupted or killed: run down)"
	case st.Locked:
		state = "up (a controller holds it)"
	}
	dead, stopped := 0, 0
	for _, p := range st.Procs {
		switch {
		case !p.Alive:
			dead++
		case p.Stopped != "":
			stopped++
		}
	}
	if dead > 0 && st.Info != nil {
		state = fmt.Sprintf("up, %d daemon%s dead (its links are down; `%s` and up again)", dead, livePlural(dead), lab.DownCommand(filepath.Dir(st.Dir), st.Name))
	}
	if stopped > 0 && st.Info != nil {
		// A stopped daemon is not dead: continued, it goes on where it
		// was, and its peers see a link that was paused.
		if dead == 0 {
			state = "up"
		}
		state += fmt.Sprintf(", %d daemon%s stopped (below)", stopped, livePlural(stopped))
	}
	fmt.Fprintf(w, "lab %s: %s; state %s\n", st.Name, state, st.Dir)
	if st.Info != nil {
		fmt.Fprintf(w, "  file %s, hosts %s", st.Info.File, st.Info.Hosts)
		if st.Info.TimeDilation > 1 {
			fmt.Fprintf(w, ", time dilation %d", st.Info.TimeDilation)
		}
		fmt.Fprintln(w)
	}

	alive := map[string]lab.ProcStatus{}
	for _, p := range st.Procs {
		alive[p.Namespace] = p
	}
	// stoppedNode is the line said of a node whose daemon is stopped,
	// in place of asking it (it would not answer), or "".
	stoppedNode := func(n lab.NodeInfo) string {
		p, ok := alive[n.Namespace]
		if !ok || !p.Alive || p.Stopped == "" {
			return ""
		}
		s := fmt.Sprintf("  %s: %s (pid %d) is %s: it answers nothing and its links carry nothing until it is continued", n.Name, p.Name, p.Pid, p.Stopped)
		if p.Resume != "" {
			s += " (" + p.Resume + ")"
		}
		return s
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tDAEMON\tPID\tINTERFACES")
	for _, ns := range st.Namespaces {
		daemon, pid := "-", "-"
		if p, ok := alive[ns.Name]; ok {
			daemon = p.Name
			pid = fmt.Sprint(p.Pid)
			switch {
			case !p.Alive:
				pid += " (dead)"
			case p.Stopped != "":
				pid += " " + p.Stopped
			}
		}
		var ifs []string
		switch {
		case !ns.Exists:
			ifs = []string{"(namespace missing)"}
		case ns.Err != nil:
			ifs = []string{"(" + ns.Err.Error() + ")"}
		}
		for _, f := range ns.Ifaces {
			s := f.Name
			switch {
			case !f.Up:
				s += " down"
			case !f.Carrier:
				s += " up no-carrier"
			default:
				s += " up"
			}
			s += fmt.Sprintf(" mtu %d %s", f.MTU, f.MAC)
			if len(f.Addrs) > 0 {
				s += " " + strings.Join(f.Addrs, ",")
			}
			ifs = append(ifs, s)
		}
		if len(ifs) == 0 {
			ifs = []string{"-"}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", ns.Name, daemon, pid, ifs[0])
		for _, s := range ifs[1:] {
			fmt.Fprintf(tw, "  \t\t\t%s\n", s)
		}
	}
	tw.Flush()

	var unreachable, routing []string
	var around routedAround
	if st.Info != nil {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PORT\tPEER\tLINK\tWIRE\tTRANSPORT")
		for _, n := range st.Info.Nodes {
			if n.Control == "" {
				continue
			}
			if line := stoppedNode(n); line != "" {
				unreachable = append(unreachable, line)
				continue
			}
			if p, ok := alive[n.Namespace]; ok && !p.Alive {
				// Asking it would only say its socket refuses, and
				// tell the reader to run the status they are reading.
				unreachable = append(unreachable, deadNodeLine(n, p))
				continue
			}
			view, err := lab.QueryDaemonView(n.Control, statusControlTimeout)
			if err != nil {
				unreachable = append(unreachable, fmt.Sprintf("  %s: no answer from its control socket: %v", n.Name, err))
				continue
			}
			// Link-state routing (RoCE), said after the table.
			around.add(n.Name, view.RoutedAround)
			if len(view.Mismatched) > 0 {
				routing = append(routing, fmt.Sprintf("  %s: the lab files of %s describe another fabric: routes may disagree", n.Name, strings.Join(view.Mismatched, ", ")))
			}
			ports := view.Ports
			peer := map[string]string{}
			for _, p := range n.Ports {
				peer[p.Name] = p.Peer
			}
			for _, p := range ports {
				link := p.Link
				if p.NoFlood {
					link += ", no flooding"
				}
				fmt.Fprintf(tw, "  %s:%s\t%s\t%s\t%s\t%s\n", n.Name, p.Port, peer[p.Port], link, p.Wire, p.Transport)
			}
		}
		tw.Flush()
		routing = append(around.lines(), routing...)
		for _, r := range routing {
			fmt.Fprintln(w, r)
		}
		for _, u := range unreachable {
			fmt.Fprintln(w, u)
		}
		st.Info.WriteMetrics(w)
	}
	// An emunic that listens for its link (a NIC cabled to a NIC) stops
	// listening once its peer is connected, and its socket file goes
	// with the listener: a second dialler finds nothing. Absent, it is
	// not missing.
	nicListens := map[string]bool{}
	if st.Info != nil {
		for _, n := range st.Info.Nodes {
			if n.Kind != lab.KindNIC {
				continue
			}
			for _, p := range n.Ports {
				if scheme, path, ok := strings.Cut(p.Transport, ":"); ok && strings.HasSuffix(scheme, "-listen") {
					nicListens[path] = true
				}
			}
		}
	}
	present, taken := 0, 0
	for _, s := range st.Sockets {
		switch {
		case s.Exists:
			present++
		case nicListens[s.Path]:
			taken++
		}
	}
	if taken > 0 {
		fmt.Fprintf(w, "  sockets: %d recorded, %d present, %d closed by an emunic whose peer connected\n", len(st.Sockets), present, taken)
	} else {
		fmt.Fprintf(w, "  sockets: %d recorded, %d present\n", len(st.Sockets), present)
	}
	return st.Info != nil && dead == 0 && len(unreachable) == 0
}

// deadNodeLine is what status says of a node whose daemon is dead, in
// place of asking its control socket: which daemon, that its ports are not
// listed, and its log, which holds the last it said (a panic, an error).
func deadNodeLine(n lab.NodeInfo, p lab.ProcStatus) string {
	s := fmt.Sprintf("  %s: %s (pid %d) is dead: its ports are not listed, and its links are down", n.Name, p.Name, p.Pid)
	if n.Log != "" {
		s += "; its log: " + n.Log
	}
	return s
}
