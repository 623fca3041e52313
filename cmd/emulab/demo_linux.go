//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

// demoLabFile is the lab demo brings up when it is given none, relative to
// the working directory or, failing that, to the checkout emulab runs from.
const demoLabFile = "examples/two-hosts.yaml"

type demoFlags struct {
	stateDir string
	binDir   string
	keep     bool
	iters    int
	iperf    time.Duration
}

func init() {
	var fl demoFlags
	cmd := &cobra.Command{
		Use:   "demo [FILE]",
		Short: "Bring a lab up, run traffic across it, show its counters, take it down (root)",
		Long: `demo is the quick start: it brings up a lab (default ` + demoLabFile + `)
with emulated RNICs as hosts, then, between its first two hosts:

  1. ping over the hosts' kernels (ICMP through emunic, emuswitch, emunic;
     IPoIB on an InfiniBand lab), when ping is installed;
  2. RDMA WRITE bandwidth, RDMA READ bandwidth and RDMA WRITE latency with the
     built-in engine (as emulab perf runs them), the destination memory
     checked byte for byte after each;
  3. iperf3 TCP for a few seconds, when iperf3 is installed;
  4. the first switch's counters (emulab stats);

and takes the lab down again (--keep leaves it up to explore: the commands
to try are printed). Any failure stops the demo, removes the lab and exits
non-zero; so does Ctrl-C.`,
		Example: `  sudo go run ./cmd/emulab demo
  go build -o bin/ ./cmd/... && sudo bin/emulab demo --keep`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return runDemo(cmd.OutOrStdout(), cmd.ErrOrStderr(), file, &fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	f.StringVar(&fl.binDir, "bin-dir", "", "find emuswitch and emunic in `DIR` (default: next to emulab, then PATH, then built from the checkout)")
	f.BoolVar(&fl.keep, "keep", false, "leave the lab up at the end")
	f.IntVarP(&fl.iters, "iters", "n", 2000, "messages per RDMA bandwidth test")
	f.DurationVar(&fl.iperf, "iperf-time", 3*time.Second, "how long iperf3 runs (0: skip it)")
	rootCmd.AddCommand(cmd)
}

// demoFile finds the lab file: as given, or the default relative to the
// working directory, then to the checkout (go run from a subdirectory).
func demoFile(file string) (string, error) {
	if file != "" {
		return file, nil
	}
	if _, err := os.Stat(demoLabFile); err == nil {
		return demoLabFile, nil
	}
	if root, err := lab.ModuleRoot(); err == nil {
		p := filepath.Join(root, demoLabFile)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no lab file given and %s is not here: run demo from a checkout of emufabric or name a lab file (emulab demo FILE)", demoLabFile)
}

func runDemo(stdout, stderr io.Writer, file string, fl *demoFlags) (err error) {
	file, err = demoFile(file)
	if err != nil {
		return err
	}
	spec, err := loadLabFile(file, stderr)
	if err != nil {
		return err
	}
	hosts := spec.NICs()
	if len(hosts) < 2 || len(spec.Switches()) == 0 {
		return fmt.Errorf("%s: demo needs a lab with a switch and two hosts (it has %d switches, %d hosts)", file, len(spec.Switches()), len(hosts))
	}
	ib := spec.Fabric == lab.FabricIB
	a, b, sw := hosts[0], hosts[1], spec.Switches()[0]
	bIP := net.IP(b.IPv4[:]).String()
	ref := func(n *lab.Node) string { return spec.Name + "/" + n.Name }

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	signal.Ignore(syscall.SIGPIPE)

	step := 0
	say := func(format string, args ...any) {
		step++
		fmt.Fprintf(stdout, "\n== %d. %s\n\n", step, fmt.Sprintf(format, args...))
	}

	if ib {
		say("up %s: namespaces %s-*, emuswitch (InfiniBand) for %s, an emunic HCA for each host", file, lab.NamespacePrefix+spec.Name, sw.Name)
	} else {
		say("up %s: namespaces %s-*, emuswitch for %s, emunic for each host", file, lab.NamespacePrefix+spec.Name, sw.Name)
	}
	l, err := lab.Up(ctx, spec, lab.UpOptions{StateRoot: fl.stateDir, BinDir: fl.binDir, Hosts: lab.HostsNIC, Progress: stderr})
	if err != nil {
		var fe *lab.FieldError
		if errors.As(err, &fe) {
			return &exitError{code: exitBadLabFile, err: fmt.Errorf("%w; nothing was created", err)}
		}
		return &exitError{code: exitUpFailed, err: withRootHint(err)}
	}
	defer func() {
		if fl.keep && err == nil {
			l.Release()
			stateFlag := ""
			if fl.stateDir != lab.DefaultStateRoot {
				stateFlag = " --state-dir " + fl.stateDir
			}
			fmt.Fprintf(stdout, "\nthe lab is still up (--keep). Try:\n"+
				"  emulab exec%[1]s %[2]s -- ping -c 3 %[3]s\n"+
				"  emulab perf%[1]s write_bw %[2]s %[4]s -s 65536 --report_gbits\n"+
				"  emulab capture%[1]s %[5]s:%[6]s -w - | wireshark -k -i -\n"+
				"  emulab stats%[1]s %[4]s --hw\n"+
				"  emulab down%[1]s %[7]s\n",
				stateFlag, ref(a), bIP, ref(b), ref(sw), sw.Ports[0].Name, spec.Name)
			return
		}
		start := time.Now()
		if derr := l.Down(); derr != nil {
			err = errors.Join(err, fmt.Errorf("down %s: %w", spec.Name, derr))
			return
		}
		fmt.Fprintf(stdout, "\nlab %s is down (%.2fs): no namespace, daemon or socket of it is left\n", spec.Name, time.Since(start).Seconds())
	}()
	if err := l.Info.WriteTable(stdout); err != nil {
		return err
	}

	if _, err := exec.LookPath("ping"); err != nil {
		say("ping is not installed: skipping it (apt-get install iputils-ping)")
	} else {
		if ib {
			say("ping %s -> %s (%s): the hosts' kernels over IPoIB (UD SENDs between the HCAs' IPoIB QPs)", a.Name, b.Name, bIP)
		} else {
			say("ping %s -> %s (%s): the hosts' kernels, through emunic, emuswitch and emunic", a.Name, b.Name, bIP)
		}
		out, err := l.ExecContext(ctx, a.Name, "ping", "-c", "3", "-i", "0.2", "-w", "10", bIP)
		stdout.Write(out)
		if err != nil {
			return fmt.Errorf("ping: %w", err)
		}
	}

	for _, t := range []struct {
		test  string
		size  int
		iters int
	}{
		{"write_bw", 65536, fl.iters},
		{"read_bw", 65536, fl.iters},
		{"write_lat", 2, 1000},
	} {
		how := "RoCEv2 on priority 3"
		if ib {
			how = "native IB packets addressed by LID, within the receivers' credits"
		}
		say("emulab perf %s %s %s -s %d -n %d: the built-in RDMA engine, %s", t.test, a.Name, b.Name, t.size, t.iters, how)
		if err := ctx.Err(); err != nil {
			return err
		}
		pf := perfFlags{stateDir: fl.stateDir, size: t.size, sizeSet: true, iters: t.iters, itersSet: true,
			qps: 1, cqMod: perfDefCQMod, txDepth: perfDefTxBW, tos: -1, gbits: true}
		if err := runPerf(stdout, []string{t.test, ref(a), ref(b)}, &pf); err != nil {
			return fmt.Errorf("perf %s: %w", t.test, err)
		}
		if t.test == "write_bw" && ib {
			fmt.Fprintf(stdout, " (an IB sender may have only the receiver's VL buffer in flight until its credits come\n"+
				"  back; across processes that round trip takes hundreds of microseconds, so about a Gb/s;\n"+
				"  docs/performance.md explains it; in emulab sim the same engine runs at line rate)\n")
		} else if t.test == "write_bw" && len(a.Ports) > 0 && a.Ports[0].Link != nil {
			fmt.Fprintf(stdout, " (the lab's links are %s; the daemons move what this machine's cores allow, about\n"+
				"  10 Gb/s on two cores, and the fabric then acts as behind a slower link: the switch's queues\n"+
				"  fill, PFC and ECN react, nothing is lost; docs/performance.md has the figures)\n",
				lab.FormatRate(a.Ports[0].Link.Rate))
		}
	}

	if fl.iperf > 0 {
		if _, err := exec.LookPath("iperf3"); err != nil {
			say("iperf3 is not installed: skipping TCP (apt-get install iperf3)")
		} else {
			if ib {
				say("iperf3 TCP %s -> %s for %s: kernel TCP over IPoIB, segmented by emunic to the IPoIB MTU", a.Name, b.Name, fl.iperf)
			} else {
				say("iperf3 TCP %s -> %s for %s: kernel TCP with TSO, segmented by emunic to the link MTU", a.Name, b.Name, fl.iperf)
			}
			if err := demoIperf(ctx, stdout, l, a.Name, b.Name, bIP, fl.iperf); err != nil {
				return err
			}
		}
	}

	if ib {
		say("emulab stats %s: the switch's counters per port and VL", sw.Name)
	} else {
		say("emulab stats %s: the switch's counters per port and priority", sw.Name)
	}
	if err := runStats(stdout, stderr, ref(sw), &statsFlags{stateDir: fl.stateDir}); err != nil {
		return err
	}
	return nil
}

// demoIperf runs an iperf3 server in dst's namespace for one test and the
// client in src's. The client retries while the server is starting.
func demoIperf(ctx context.Context, out io.Writer, l *lab.Lab, src, dst, dstIP string, d time.Duration) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvDone := make(chan error, 1)
	go func() {
		_, err := l.ExecContext(sctx, dst, "iperf3", "-s", "-1")
		srvDone <- err
	}()
	secs := fmt.Sprint(max(1, int(d.Round(time.Second)/time.Second)))
	var last []byte
	var err error
	for try := 0; try < 20; try++ {
		if err := lab.SleepContext(ctx, 100*time.Millisecond); err != nil {
			return err
		}
		last, err = l.ExecContext(ctx, src, "iperf3", "-c", dstIP, "-t", secs, "-f", "g")
		if err == nil || !strings.Contains(string(last), "Connection refused") {
			break
		}
	}
	out.Write(last)
	if err != nil {
		return fmt.Errorf("iperf3: %w", err)
	}
	select {
	case <-srvDone:
	case <-time.After(5 * time.Second):
	}
	return nil
}
