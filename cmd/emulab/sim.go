package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/report"
	"github.com/emufabric/emufabric/sim"
)

// Exit statuses of emulab sim.
const (
	exitRunFailed  = 1 // the simulation could not be built or ended early
	exitBadLabFile = 2 // the lab file is invalid: nothing was run
)

type simFlags struct {
	out      string
	seed     uint64
	duration string
	quiet    bool
	capture  string
	padLinks bool
}

func init() {
	var fl simFlags
	cmd := &cobra.Command{
		Use:   "sim FILE",
		Short: "Run a lab file in the deterministic simulator",
		Long: `sim loads a lab file (docs/lab-file.md), runs its traffic in the
deterministic packet-level simulator and prints a summary: per flow the bytes,
throughput and completion times; per switch port and priority the PFC pauses
sent and received, ECN marks, drops and the largest queue; drops by reason; the
busiest links; a deadlock if queues stopped moving.

With --capture DIR it writes every frame the links deliver into one pcap file
per link in DIR (sim_capture.go): Ethernet for RoCE labs; for native InfiniBand
ERF records (link type 197) of data and flow-control packets, which Wireshark
opens; add --capture-pad-links so that Wireshark 4.0 and tshark decode the
6-byte flow-control packets instead of showing them as malformed.

With -o DIR it also writes CSV time series (queue depth, pause state, per-flow
throughput), summary CSVs and SVG charts into DIR.

A run is repeatable: the same file and seed give the same result, bit for bit.
An invalid lab file is reported as file:line: field: problem, one per line, and
exits with status 2; a run that cannot be built or ends early exits with 1.`,
		Example: `  emulab sim examples/incast.yaml
  emulab sim examples/pfc-storm.yaml -o out/storm --seed 7
  emulab sim examples/leaf-spine.yaml --duration 2ms
  emulab sim examples/ib-two-hosts.yaml --capture out/cap --capture-pad-links`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSim(cmd, args[0], &fl)
		},
	}
	cmd.Flags().StringVarP(&fl.out, "out", "o", "", "write CSV time series and SVG charts into `DIR`")
	cmd.Flags().Uint64Var(&fl.seed, "seed", 0, "random seed (default: the file's sim.seed)")
	cmd.Flags().StringVar(&fl.duration, "duration", "", "simulated time, e.g. 2ms (default: the file's sim.duration)")
	cmd.Flags().BoolVarP(&fl.quiet, "quiet", "q", false, "no progress bar")
	cmd.Flags().StringVar(&fl.capture, "capture", "", "write one pcap per link into `DIR` (ERF records for InfiniBand)")
	cmd.Flags().BoolVar(&fl.padLinks, "capture-pad-links", false, "pad IB link packets to 64 bytes so Wireshark 4.0 shows their fields")
	rootCmd.AddCommand(cmd)
}

func runSim(cmd *cobra.Command, file string, fl *simFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if fl.padLinks && fl.capture == "" {
		// The flag changes how a capture is written; alone it would be
		// dropped and the user would look for files that were never made.
		return &exitError{code: exitBadLabFile, err: errors.New("--capture-pad-links pads the link packets of a capture: give --capture DIR too; nothing was run")}
	}
	spec, err := loadLabFor(file, stderr, "nothing was run")
	if err != nil {
		return err
	}
	if fl.padLinks && spec.Fabric != lab.FabricIB {
		return &exitError{code: exitBadLabFile, err: fmt.Errorf("%s: --capture-pad-links: fabric %s has no link packets to pad (an InfiniBand lab's flow-control packets); nothing was run", file, spec.Fabric)}
	}

	seed := spec.Sim.Seed
	if cmd.Flags().Changed("seed") {
		seed = fl.seed
	}
	spec.Sim.Seed = seed
	if fl.duration != "" {
		d, err := lab.ParseTime(fl.duration)
		if err != nil || d <= 0 {
			return &exitError{code: exitBadLabFile, err: fmt.Errorf("--duration %q: a time greater than zero such as 2ms", fl.duration)}
		}
		spec.Sim.Duration = d
		// sample_interval's default is the run's duration's (docs/lab-file.md):
		// the file's interval stays as long as it fits the new duration.
		if !spec.Sim.SampleIntervalGiven() || spec.Sim.SampleInterval > d || d/spec.Sim.SampleInterval > 1_000_000 {
			spec.Sim.SampleInterval = spec.DefaultSampleInterval(d)
		}
	}

	s, err := sim.Build(spec, seed)
	if err != nil {
		return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: %w", file, err)}
	}
	if fl.out != "" {
		// Make the directory now, as --capture does: a path that cannot be
		// one (a file, no permission) is refused before a long run, not
		// after it with its results lost.
		if err := os.MkdirAll(fl.out, 0o755); err != nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: -o: %w; nothing was run", file, err)}
		}
	}
	var capt *simCapture
	if fl.capture != "" {
		if capt, err = startCapture(fl.capture, fl.padLinks, spec, s); err != nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: --capture: %w", file, err)}
		}
	}
	var progress func(now, end clock.Time)
	var bar *progressBar
	if !fl.quiet && isTerminal(stderr) {
		bar = &progressBar{w: stderr, started: time.Now(), label: spec.Name}
		progress = bar.update
	}
	res, runErr := s.Run(progress)
	if bar != nil {
		bar.finish()
	}
	if capt != nil {
		if err := capt.Close(); err != nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: --capture: %w", file, err)}
		}
	}
	if res == nil {
		return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: %w", file, runErr)}
	}
	if err := report.Summary(stdout, spec, res); err != nil {
		return err
	}
	if d := s.SubnetManager(); d != nil {
		// An IB fabric under an SM carries nothing until the first heavy
		// sweep has given every port a LID and programmed the switches.
		if st := d.SM().Stats(); st.HeavySweeps == 0 {
			fmt.Fprintf(stdout, "\nsubnet manager on %s: its first sweep had not finished when the run ended (%d SMPs sent): the fabric never came up; a longer sim.duration gives it time\n",
				spec.IB.SM.Host, st.SMPsSent)
		}
		if errs := d.SM().Errors(); len(errs) > 0 {
			fmt.Fprintf(stdout, "\nsubnet manager errors: %s\n", strings.Join(errs, "; "))
		}
	}
	if fl.out != "" {
		paths, err := report.WriteFiles(fl.out, spec, res)
		if err != nil {
			return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: writing results: %w", file, err)}
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	}
	if capt != nil {
		fmt.Fprintf(stdout, "\ncaptured %d frames into %d files in %s\n", capt.packets, len(capt.files), fl.capture)
	}
	if runErr != nil {
		return &exitError{code: exitRunFailed, err: fmt.Errorf("%s: the run ended early at %v: %w", file, res.End, runErr)}
	}
	return nil
}

// isTerminal reports whether w is a terminal (TCGETS succeeds on its fd), as
// golang.org/x/term.IsTerminal does on Linux.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressBar draws "[#####.....]  42%  4.2ms/10ms  3s" on one line,
// redrawn in place with a carriage return.
type progressBar struct {
	w       io.Writer
	started time.Time
	label   string
	drawn   bool
}

func (p *progressBar) update(now, end clock.Time) {
	const width = 30
	frac := 1.0
	if end > 0 {
		frac = min(1, float64(now)/float64(end))
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%%  %v/%v  %s ", p.label, strings.Repeat("#", n), strings.Repeat(".", width-n),
		100*frac, now, end, time.Since(p.started).Round(100*time.Millisecond))
	p.drawn = true
}

func (p *progressBar) finish() {
	if p.drawn {
		// Clear the line so the summary starts clean.
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 80))
	}
}
