// Command emunic runs one emulated RDMA NIC in real time: it creates and
// owns the host's TAP interface, connects the NIC's port to its link, and
// serves a control socket for counters, QoS and the built-in RDMA engine
// (package nicd has the logic; this file wires flags to it).
//
//	emunic --lab FILE --node NAME --tap eth0@NETNS --port URI --control /path/ctl.sock
//	       [--metrics ADDR [--metrics-netns PATH]] [--time-dilation N] [--log FILE] [--cpuprofile FILE]
//
// URI is seqpacket-listen:/path.sock, seqpacket-dial:/path.sock,
// shm-listen:/path.sock, shm-dial:/path.sock (frames in shared-memory
// rings set up over the socket) or udp:LOCAL_ADDR:PORT,REMOTE_ADDR:PORT. It prints "ready" on stdout once
// the TAP and the port are up, and exits cleanly on SIGTERM or SIGINT,
// also while a seqpacket-dial port is still waiting for its peer to
// listen, and (hidden flag --exit-with-pid PID, which lab.Start passes)
// when process PID exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/emufabric/emufabric/internal/cpuprof"
	"github.com/emufabric/emufabric/internal/exitwith"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nicd"
	"github.com/spf13/pflag"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return // -h: the usage went to stdout
		}
		fmt.Fprintln(os.Stderr, "emunic:", err)
		os.Exit(1)
	}
}

const nicUsage = `emunic runs one emulated RDMA NIC of a lab in real time (emulab up starts one
per NIC node): it creates and owns the host's TAP, connects the NIC's port to
its link and serves a control socket for counters, QoS and the RDMA engine.

Usage:
  emunic --lab FILE --node NAME --tap IFNAME@NETNS --port URI --control PATH [flags]

--lab, --node and --port are required. Without --tap the host has no interface
(only the RDMA engine sends and receives); without --control there is no
socket for counters, QoS and the engine. Port URIs:
  seqpacket-dial:PATH, shm-dial:PATH   the switch port's socket (or -listen:PATH)
  udp:LOCAL:PORT,REMOTE:PORT           a UDP link to a switch (addresses or host names)
It prints "ready" when the TAP and the port are up; SIGTERM or SIGINT ends it.

Example:
  emunic --lab lab.yaml --node h1 --tap eth0@hostA --port shm-dial:/run/sw1-p1.sock --control /run/h1.ctl

Flags:
`

func run(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("emunic", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, nicUsage)
		fs.PrintDefaults()
	}
	labFile := fs.String("lab", "", "lab file")
	node := fs.String("node", "", "the NIC node in the lab file")
	tap := fs.String("tap", "", "host interface to create, IFNAME@NETNS")
	port := fs.String("port", "", "link: seqpacket-listen:PATH, seqpacket-dial:PATH, shm-listen:PATH, shm-dial:PATH or udp:LOCAL:PORT,REMOTE:PORT")
	control := fs.String("control", "", "control socket path (created with mode 0600)")
	metrics := fs.String("metrics", "", "Prometheus /metrics listen address, e.g. 127.0.0.1:9101")
	metricsNetns := fs.String("metrics-netns", "", "open the --metrics listener in the network namespace at PATH (/proc/PID/ns/net, /run/netns/NAME): a daemon in a lab's namespace serving the host's Prometheus")
	dilation := fs.Int("time-dilation", 0, "run the emulated link N times slower than the wall clock (default: the lab file's time_dilation, else 1)")
	logFile := fs.String("log", "", "log file (default stderr)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) to FILE until exit")
	exitWith := fs.Int("exit-with-pid", 0, "exit, as on SIGTERM, when process PID exits (lab.Start passes the test's)")
	_ = fs.MarkHidden("exit-with-pid") // for lab.Start, not for people
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *labFile == "":
		return fmt.Errorf("--lab is required")
	case *node == "":
		return fmt.Errorf("--node is required")
	case *port == "":
		return fmt.Errorf("--port is required")
	case *dilation < 0:
		return fmt.Errorf("--time-dilation %d: must be >= 1", *dilation)
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *metricsNetns != "" && *metrics == "":
		return fmt.Errorf("--metrics-netns %s without --metrics", *metricsNetns)
	}
	var lw io.Writer = os.Stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--log %s: %w", *logFile, err)
		}
		defer f.Close()
		lw = f
	}
	logger := log.New(lw, "emunic "+*node+": ", log.LstdFlags|log.Lmicroseconds)
	spec, err := lab.Load(*labFile)
	if err != nil {
		return err
	}
	// A signal during Start (a seqpacket-dial port waiting for its peer)
	// stops it too, and the daemon exits cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *exitWith != 0 {
		var cancel context.CancelFunc
		if ctx, cancel, err = exitwith.Context(ctx, *exitWith); err != nil {
			return err
		}
		defer cancel()
	}
	if *cpuprofile != "" {
		stop, err := cpuprof.Start(*cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	d, err := nicd.StartContext(ctx, nicd.Options{Spec: spec, Node: *node, TAP: *tap, Port: *port, Control: *control,
		Metrics: *metrics, MetricsNetns: *metricsNetns, TimeDilation: *dilation, Log: logger})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			logger.Printf("%s while starting (%v): exiting", stopReason(ctx), err)
			return nil
		}
		return err
	}
	// A --log file is appended to: these lines tell one run from the next.
	logger.Printf("ready: pid %d, lab %s, port %s, tap %s", os.Getpid(), *labFile, *port, *tap)
	fmt.Fprintln(stdout, "ready")
	select {
	case <-ctx.Done():
		logger.Printf("%s: shutting down", stopReason(ctx))
	case <-d.Done():
	}
	return d.Close()
}

// stopReason says why ctx ended: a signal, or the exit of the process
// --exit-with-pid names.
func stopReason(ctx context.Context) string {
	if err := context.Cause(ctx); errors.Is(err, exitwith.ErrExited) {
		return err.Error()
	}
	return "signal"
}
