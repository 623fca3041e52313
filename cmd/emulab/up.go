//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

// Exit statuses of emulab up.
const (
	exitUpFailed = 1 // the lab could not be built; what was created was removed
	// exitBadLabFile (2, sim.go): the lab file is invalid; nothing was created
)

type upFlags struct {
	stateDir string
	binDir   string
	hosts    string
	timeout  time.Duration
	quiet    bool
	schedule bool
	metrics  string
}

func init() {
	var fl upFlags
	cmd := &cobra.Command{
		Use:   "up FILE",
		Short: "Bring a lab up in network namespaces (root)",
		Long: `up turns a lab file into a real lab on this machine: a network namespace
emu-<lab>-<node> per node, an emuswitch daemon per switch and an emunic daemon
per host, links between them over unix sockets in the state directory, and in
every host's namespace an ordinary interface (eth0) with the host's IPv4
address (a /24), the link's MTU, the other hosts as permanent neighbours and
routes to their subnets. It returns once every daemon printed "ready" and every
host interface is up, and prints what it built.

The daemons are found in --bin-dir, or else next to the emulab executable,
then on PATH; when none is there and up runs in a checkout of this
repository (as under go run, which builds emulab alone, in a temporary
directory), up builds them from the checkout first. Build them all with

  go build -o bin/ ./cmd/...

and run bin/emulab to have them next to it.

--hosts tap makes every host a plain TAP port of its switch (as vde_switch -t
does) instead of an emulated RNIC; it needs emuswitch only. --hosts auto (the
default) uses emunic when it is found.

A link's schedule (schedule: in the lab file) belongs to the simulator, whose
run starts at time 0, unless --schedule is given: then each link's state
changes run in real time, counted from the moment up has brought the lab up
(the daemon owning the link's switch side runs them after up has exited).
Without it, up says which links have a schedule it leaves alone.

A lab that is already up is refused. An invalid lab file is reported as
file:line: field: problem and nothing is created (exit status 2). On any other
failure everything created is removed again (exit status 1). Interrupting up
(Ctrl-C) removes it too.`,
		Example: `  sudo bin/emulab up examples/two-hosts.yaml
  sudo bin/emulab exec h1 -- ping -c 3 10.0.0.2
  sudo bin/emulab down two-hosts`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUp(cmd, args[0], &fl)
		},
	}
	cmd.Flags().StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	cmd.Flags().StringVar(&fl.binDir, "bin-dir", "", "find emuswitch and emunic in `DIR` (default: next to emulab, then PATH, then built from the checkout)")
	cmd.Flags().StringVar(&fl.hosts, "hosts", string(lab.HostsAuto), "what stands behind a host's interface: nic (emunic), tap (a TAP port of the switch) or auto")
	cmd.Flags().DurationVar(&fl.timeout, "timeout", lab.DefaultReadyTimeout, "how long the daemons may take to be ready")
	cmd.Flags().BoolVarP(&fl.quiet, "quiet", "q", false, "no progress lines")
	cmd.Flags().StringVar(&fl.metrics, "metrics", "", "serve every daemon's Prometheus /metrics in this namespace: the first on `ADDR:PORT`, the next on PORT+1, ... (listed by up and status)")
	cmd.Flags().BoolVar(&fl.schedule, "schedule", false, "run the links' schedules in real time, counted from when the lab is up (default: the simulator's only)")
	rootCmd.AddCommand(cmd)
}

func runUp(cmd *cobra.Command, file string, fl *upFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	mode, err := lab.ParseHostMode(fl.hosts)
	if err != nil {
		return fmt.Errorf("--hosts: %w", err)
	}
	spec, err := loadLabFile(file, stderr)
	if err != nil {
		return err
	}
	var progress io.Writer = stderr
	if fl.quiet {
		progress = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A reader that goes away (`emulab up lab.yaml | head`) must not kill
	// up half-way: writes to a closed pipe fail instead, and the lab is
	// finished.
	signal.Ignore(syscall.SIGPIPE)
	l, err := lab.Up(ctx, spec, lab.UpOptions{
		StateRoot:    fl.stateDir,
		BinDir:       fl.binDir,
		Hosts:        mode,
		ReadyTimeout: fl.timeout,
		Progress:     progress,
		Schedules:    fl.schedule,
		Metrics:      fl.metrics,
	})
	if err != nil {
		var fe *lab.FieldError
		if errors.As(err, &fe) {
			return &exitError{code: exitBadLabFile, err: fmt.Errorf("%w; nothing was created", err)}
		}
		return &exitError{code: exitUpFailed, err: withRootHint(err)}
	}
	defer l.Release()
	if err := l.Info.WriteTable(stdout); err != nil {
		return err
	}
	if !fl.schedule {
		for _, lk := range spec.Links {
			if len(lk.Schedule) > 0 {
				fmt.Fprintf(stderr, "note: link %s-%s has a schedule (%d change(s)); it runs in the simulator (emulab sim), not here: up --schedule runs it in the real lab from the moment it is up\n",
					lk.A, lk.B, len(lk.Schedule))
			}
		}
	}
	stateFlag := ""
	if fl.stateDir != lab.DefaultStateRoot {
		stateFlag = " --state-dir " + fl.stateDir
	}
	var hosts []string
	for _, n := range spec.NICs() {
		hosts = append(hosts, n.Name)
	}
	if len(hosts) >= 2 {
		peer := spec.Node(hosts[1])
		fmt.Fprintf(stdout, "\ntry:  emulab exec%s %s/%s -- ping -c 3 %d.%d.%d.%d\n", stateFlag, spec.Name, hosts[0],
			peer.IPv4[0], peer.IPv4[1], peer.IPv4[2], peer.IPv4[3])
	}
	fmt.Fprintf(stdout, "down: emulab down%s %s\n", stateFlag, spec.Name)
	return nil
}

// loadLabFile loads a lab file for up, printing every problem as
// file:line: field: message; an invalid file is exit status 2.
func loadLabFile(file string, stderr io.Writer) (*lab.Spec, error) {
	return loadLabFor(file, stderr, "nothing was created")
}

// loadLabFor loads a lab file, printing every problem as file:line: field:
// message and every warning. An invalid file is exit status 2, with an
// error that counts the problems and ends with outcome.
func loadLabFor(file string, stderr io.Writer, outcome string) (*lab.Spec, error) {
	spec, err := lab.Load(file)
	var list lab.ErrorList
	switch {
	case errors.As(err, &list):
		printLabLoad(stderr, file, nil, err)
		return nil, &exitError{code: exitBadLabFile, err: fmt.Errorf("%s: %d problem(s); %s", file, len(list), outcome)}
	case err != nil:
		return nil, &exitError{code: exitBadLabFile, err: fmt.Errorf("%w; %s", err, outcome)}
	}
	printLabLoad(stderr, file, spec, nil)
	return spec, nil
}

// printLabLoad prints what lab.Load said of file: every problem as
// file:line: field: message (another error, such as a missing file, after
// the file's name), or the spec's warnings. It returns how many problems
// it printed.
func printLabLoad(stderr io.Writer, file string, spec *lab.Spec, err error) int {
	var list lab.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(stderr, e)
		}
		return len(list)
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", file, err)
		return 1
	}
	for _, w := range spec.Warnings {
		fmt.Fprintf(stderr, "%s (warning)\n", w)
	}
	return 0
}

// withRootHint adds what to do to a permission error: labs need root
// (namespaces, TAP devices, /run/emufabric).
func withRootHint(err error) error {
	if errors.Is(err, os.ErrPermission) && os.Geteuid() != 0 {
		return fmt.Errorf("%w (labs need root: run emulab with sudo)", err)
	}
	return err
}
