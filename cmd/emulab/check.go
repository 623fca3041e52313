package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
)

func init() {
	var hosts string
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Check lab files without running them: problems by file and line, and what up would build",
		Long: `check loads each lab file as up and sim do and reports every problem as
file:line: field: problem, then, for a file without problems, what the file
describes and what up would create from it: the namespaces, the emuswitch and
emunic daemons, the switch ports kept out of flooding by the spanning tree.
It also builds the lab in the simulator (without running it), which refuses
what the simulator cannot model. Nothing is created and no root is needed.

Exit status 0 when every file is good, 2 when any file has a problem.`,
		Example: `  emulab check examples/*.yaml
  emulab check --hosts tap my-lab.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := lab.ParseHostMode(hosts)
			if err != nil {
				return &exitError{code: exitBadLabFile, err: fmt.Errorf("--hosts: %w", err)}
			}
			bad := 0
			for _, file := range args {
				if !checkFile(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, mode) {
					bad++
				}
			}
			if bad > 0 {
				return &exitError{code: exitBadLabFile, err: fmt.Errorf("%d of %d lab file(s) have problems", bad, len(args))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&hosts, "hosts", "auto", "plan hosts as up --hosts would: nic, tap or auto (as nic)")
	// Every other subcommand takes --state-dir; check reads no lab state,
	// but a script that passes it to every emulab command must not fail.
	var stateDir string
	cmd.Flags().StringVar(&stateDir, "state-dir", lab.DefaultStateRoot, "accepted for scripts that pass it to every subcommand; check reads no lab state and ignores it")
	rootCmd.AddCommand(cmd)
}

// checkFile reports one file: its problems on stderr, or its summary on
// stdout. It says whether the file is good.
func checkFile(stdout, stderr io.Writer, file string, mode lab.HostMode) bool {
	spec, err := lab.Load(file)
	if n := printLabLoad(stderr, file, spec, err); n > 0 {
		return false
	}
	c, err := lab.Check(spec, mode)
	if err != nil {
		var list lab.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintf(stderr, "%v (emulab up --hosts %s)\n", e, orNIC(mode))
			}
		} else {
			fmt.Fprintf(stderr, "%s: emulab up --hosts %s: %v\n", file, orNIC(mode), err)
		}
		return false
	}
	if _, err := sim.Build(spec, spec.Sim.Seed); err != nil {
		fmt.Fprintf(stderr, "%s: emulab sim: %v\n", file, err)
		return false
	}
	switches, nics := 0, 0
	for _, n := range spec.Nodes {
		if n.Kind == lab.KindSwitch {
			switches++
		} else {
			nics++
		}
	}
	fmt.Fprintf(stdout, "%s: lab %s, %s fabric: %s, %s, %s, %s\n", file, spec.Name, fabricWord(spec.Fabric),
		plural(switches, "switch", "switches"), plural(nics, "host", "hosts"), plural(len(spec.Links), "link", "links"),
		plural(len(spec.Traffic), "flow", "flows"))
	daemons := []string{plural(c.Switches, "emuswitch", "emuswitch")}
	if c.NICs > 0 {
		daemons = append(daemons, plural(c.NICs, "emunic", "emunic"))
	}
	if c.TAPHosts > 0 {
		daemons = append(daemons, plural(c.TAPHosts, "host as a TAP port", "hosts as TAP ports"))
	}
	fmt.Fprintf(stdout, "  up --hosts %s: %s (%s), %s\n", c.Mode, plural(len(c.Namespaces), "namespace", "namespaces"),
		nsRange(c.Namespaces), strings.Join(daemons, ", "))
	if len(c.NoFlood) > 0 {
		const head = "  not flooding (outside the spanning tree): "
		lines := wrapWords(portRuns(c.NoFlood), 100-len(head))
		fmt.Fprintf(stdout, "%s%s\n", head, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(stdout, "%*s%s\n", len(head), "", l)
		}
	}
	if spec.TimeDilation > 1 {
		fmt.Fprintf(stdout, "  time_dilation %d: the daemons run the fabric %d times slower than the wall clock\n", spec.TimeDilation, spec.TimeDilation)
	}
	return true
}

func orNIC(m lab.HostMode) lab.HostMode {
	if m == lab.HostsAuto {
		return lab.HostsNIC
	}
	return m
}

func fabricWord(f lab.Fabric) string {
	if f == lab.FabricIB {
		return "InfiniBand"
	}
	return "RoCE"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// nsRange shows the namespaces briefly: all of up to four, else the first
// two and the last.
func nsRange(ns []string) string {
	if len(ns) <= 4 {
		return strings.Join(ns, " ")
	}
	return fmt.Sprintf("%s %s ... %s", ns[0], ns[1], ns[len(ns)-1])
}
