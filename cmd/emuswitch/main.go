// Command emuswitch runs one emulated switch of a lab in real time: the
// switch named by --node in the lab file, its ports bound to transports
// by --port, a control socket for counters, link changes and capture, and
// optionally Prometheus metrics. It prints "ready" once every port is
// bound and exits cleanly on SIGTERM or SIGINT, also while a
// seqpacket-dial port is still waiting for its peer to listen, and (hidden
// flag --exit-with-pid PID, which lab.Start passes) when process PID exits.
//
//	emuswitch --lab FILE --node NAME --port PORTNAME=URI ... --control PATH
//	          [--no-flood PORTNAME ...] [--metrics ADDR:PORT [--metrics-netns PATH]]
//	          [--time-dilation N] [--log FILE]
//
// Port URIs: seqpacket-listen:/path.sock, seqpacket-dial:/path.sock,
// shm-listen:/path.sock, shm-dial:/path.sock (the socket sets up
// shared-memory rings that then carry the frames; both ends must use
// them), udp:LOCAL_ADDR:PORT,REMOTE_ADDR:PORT, tap:IFNAME@NETNS.
//
// The switch floods broadcast and multicast frames (ARP) to its other
// connected ports. --no-flood PORTNAME (repeatable) leaves a port out of
// that flooding in both directions, as a spanning tree blocks it: nothing
// is flooded out of it, and a broadcast or multicast arriving on it is
// dropped (counter flood_blocked_rx) instead of flooded. Unicast still
// uses the port. On switches joined in a cycle (a ring, two spines,
// parallel links) the switch leaves the ports outside the lab's spanning
// tree out of flooding by itself, or a broadcast would circulate for
// ever; it computes the tree from the lab file, and again when its
// link-state routing learns that links went down or came back, when it
// also routes around them. --no-flood adds ports to those.
//
// A lab of fabric ib runs the switch in native InfiniBand mode: every
// seqpacket message or UDP datagram is one IB packet as on the wire (LRH
// through VCRC) or one 6-byte link (flow-control) packet. The switch
// forwards by DLID (the lab's static LIDs, or what the subnet manager of
// an ib.sm section programs through the switch's SMA), advertises its
// receive buffer per data VL with link packets when a peer connects, and
// sends a data packet on a VL only once the peer has granted credit for
// it. A tap: port is refused (a TAP is an Ethernet device); --no-flood
// has no effect (an IB switch never floods). Captures are ERF records
// (pcap link type 197) in pcapng.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/emufabric/emufabric/internal/cpuprof"
	"github.com/emufabric/emufabric/internal/exitwith"
	"github.com/emufabric/emufabric/swd"
	"github.com/spf13/pflag"
)

func main() {
	// One P unless GOMAXPROCS says otherwise. The daemon is one engine
	// goroutine (the loop) and per-port reader goroutines that spend their
	// time in system calls, which hand the P over while they block; with
	// a single P a frame goes from its reader to the loop on the same CPU
	// instead of waking a second thread on another one, and a lab's many
	// daemons do not compete for every core. One 8 s run each of
	// bench/switch_compare.sh --only emuswitch on 2 cores: TCP +14%,
	// 64-byte pps +14%, ping RTT -10% against GOMAXPROCS=2.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return // -h: the usage went to stdout
		}
		fmt.Fprintln(os.Stderr, "emuswitch:", err)
		os.Exit(2)
	}
}

const switchUsage = `emuswitch runs one emulated switch of a lab in real time (emulab up starts one
per switch node; run it by hand to put a switch between TAPs, as vde_switch -t).

Usage:
  emuswitch --lab FILE --node NAME --port PORTNAME=URI... --control PATH [flags]

--lab, --node and --control are required. Each --port binds one port of the
switch; a port given none stays unconnected (emulab up starts a switch with
no link so). Port URIs:
  tap:IFNAME@NETNS            a TAP created in the existing namespace NETNS for a host
                              or VM; it lives as long as the daemon (addresses set on
                              it go with it)
  seqpacket-listen:PATH       a unix socket a NIC or switch dials (seqpacket-dial:PATH the other end)
  shm-listen:PATH             the same, the frames then in shared-memory rings (shm-dial:PATH)
  udp:LOCAL:PORT,REMOTE:PORT  a UDP link to a switch on another machine: addresses or
                              host names, [ADDR]:PORT for IPv6 (keepalives every
                              250 ms; down after 1 s without a datagram)
It prints "ready" when every port is bound; SIGTERM or SIGINT ends it.
docs/daemons.md: running it by hand, the control socket, /metrics.

Examples:
  emuswitch --lab lab.yaml --node sw1 --port p1=tap:eth0@hostA --port p2=tap:eth0@hostB --control /run/sw1.ctl
  emuswitch --lab lab.yaml --node sw1 --port p1=udp:10.0.0.1:4000,10.0.0.2:4000 --control /run/sw1.ctl --metrics 127.0.0.1:9100

Flags:
`

func run(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("emuswitch", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, switchUsage)
		fs.PrintDefaults()
	}
	var o swd.Options
	var ports []string
	fs.StringVar(&o.Lab, "lab", "", "lab file (YAML)")
	fs.StringVar(&o.Node, "node", "", "switch node of the lab file to run")
	fs.StringArrayVar(&ports, "port", nil, "PORTNAME=URI: bind a switch port (repeat); URI seqpacket-listen:PATH, seqpacket-dial:PATH, shm-listen:PATH, shm-dial:PATH, udp:LOCAL:PORT,REMOTE:PORT, tap:IFNAME@NETNS")
	fs.StringVar(&o.Control, "control", "", "control socket path (mode 0600)")
	fs.StringArrayVar(&o.NoFlood, "no-flood", nil, "PORTNAME: never flood broadcast/multicast out of or in from this port, besides the ports outside the lab's spanning tree (repeat)")
	fs.StringVar(&o.Metrics, "metrics", "", "serve Prometheus /metrics on ADDR:PORT")
	fs.StringVar(&o.MetricsNetns, "metrics-netns", "", "open the --metrics listener in the network namespace at PATH (/proc/PID/ns/net, /run/netns/NAME): a daemon in a lab's namespace serving the host's Prometheus")
	fs.IntVar(&o.Dilation, "time-dilation", 0, "run the emulated fabric N times slower than the wall clock (default: the lab file's time_dilation, else 1)")
	fs.StringVar(&o.Log, "log", "", "log file (default standard error)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) to FILE until exit")
	exitWith := fs.Int("exit-with-pid", 0, "exit, as on SIGTERM, when process PID exits (lab.Start passes the test's)")
	_ = fs.MarkHidden("exit-with-pid") // for lab.Start, not for people
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, v := range ports {
		b, err := swd.ParsePortFlag(v)
		if err != nil {
			return err
		}
		o.Ports = append(o.Ports, b)
	}
	var logw io.Writer = os.Stderr
	if o.Log != "" {
		f, err := os.OpenFile(o.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--log %s: %w", o.Log, err)
		}
		defer f.Close()
		logw = f
	}
	// Signals are caught before any port exists, so a SIGTERM during
	// start-up (a seqpacket-dial port waiting for its peer) still leads to
	// a clean exit that removes what was created.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *exitWith != 0 {
		var cancel context.CancelFunc
		var err error
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
	d, err := swd.NewContext(ctx, o, logw)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Stopped by a signal while starting: a clean exit.
			fmt.Fprintf(logw, "emuswitch %s: %s while starting (%v): exiting\n", o.Node, stopReason(ctx), err)
			return nil
		}
		return err
	}
	d.Start()
	// A --log file is appended to: these lines tell one run from the next.
	logger := log.New(logw, "emuswitch "+o.Node+": ", log.LstdFlags|log.Lmicroseconds)
	logger.Printf("ready: pid %d, lab %s, %d port(s)", os.Getpid(), o.Lab, len(o.Ports))
	fmt.Fprintln(stdout, "ready")
	<-ctx.Done()
	logger.Printf("%s: shutting down", stopReason(ctx))
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
