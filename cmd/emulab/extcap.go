//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
)

// Wireshark's extcap interface (the extcap(4) manual page): Wireshark runs
// an executable from its extcap folder once per phase, with the phase's
// options, and reads its standard output:
//
//	--extcap-interfaces [--extcap-version=V]       "extcap" line, one "interface" line per capture point
//	--extcap-interface IF --extcap-dlts            one "dlt" line
//	--extcap-interface IF --extcap-config          "arg" lines: the options the capture dialog shows
//	--extcap-interface IF --extcap-capture-filter F   (no phase): nothing if F is valid, else the reason
//	--capture --extcap-interface IF --fifo PATH    write pcap or pcapng to PATH until SIGTERM
//
// A shell script in that folder running `emulab extcap "$@"` makes every
// port of every running lab a Wireshark capture interface.

// extcapVersion is the version of this extcap interface.
const extcapVersion = "1.0"

// extcapPrefix starts every interface name: emulab-<lab>-<node>-<port>.
const extcapPrefix = "emulab-"

type extcapFlags struct {
	stateDir string

	interfaces bool
	version    string
	iface      string
	dlts       bool
	config     bool
	capture    bool
	fifo       string
	filter     string
	filterSet  bool // --extcap-capture-filter given, even empty
	controlIn  string
	controlOut string
	debug      bool
	debugFile  string
	reload     string

	// The options of --extcap-config.
	packets  uint
	padLinks bool
}

func init() {
	var fl extcapFlags
	cmd := &cobra.Command{
		Use:   "extcap --extcap-interfaces | --extcap-interface IF (--extcap-dlts | --extcap-config | --capture --fifo PATH)",
		Short: "Wireshark extcap: every port of a running lab as a capture interface",
		Long: `extcap speaks Wireshark's extcap protocol, so that Wireshark lists the ports of
the running labs as capture interfaces, emulab-<lab>-<node>-<port>: one per
connected switch port and one per emulated NIC. Wireshark runs it through a
two-line shell script in its extcap folder:

  #!/bin/sh
  exec /path/to/emulab extcap "$@"

(see docs/capture.md). The capture is the one emulab capture makes: a pcapng
stream with the daemon's comment on every packet. Capture filters are not
supported (every frame of the port is captured); use display filters. An
InfiniBand port's options offer "Pad link packets" (--pad-links, as emulab
capture's): Wireshark 4.0 shows an unpadded link packet as Malformed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl.filterSet = cmd.Flags().Changed("extcap-capture-filter")
			return runExtcap(cmd.OutOrStdout(), cmd.ErrOrStderr(), &fl)
		},
	}
	// Wireshark may pass options a later version adds; they are ignored.
	cmd.FParseErrWhitelist.UnknownFlags = true
	f := cmd.Flags()
	f.StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	f.BoolVar(&fl.interfaces, "extcap-interfaces", false, "list the capture interfaces")
	f.StringVar(&fl.version, "extcap-version", "", "Wireshark's `VERSION` (print this interface's version)")
	f.Lookup("extcap-version").NoOptDefVal = "any"
	f.StringVar(&fl.iface, "extcap-interface", "", "the capture interface `IF`")
	f.BoolVar(&fl.dlts, "extcap-dlts", false, "list the interface's link-layer types")
	f.BoolVar(&fl.config, "extcap-config", false, "list the interface's capture options")
	f.BoolVar(&fl.capture, "capture", false, "capture to --fifo until SIGTERM")
	f.StringVar(&fl.fifo, "fifo", "", "write pcapng to `PATH`")
	f.StringVar(&fl.filter, "extcap-capture-filter", "", "a capture `FILTER` (not supported: an empty one only)")
	f.StringVar(&fl.controlIn, "extcap-control-in", "", "toolbar control pipe (no controls: ignored)")
	f.StringVar(&fl.controlOut, "extcap-control-out", "", "toolbar control pipe (no controls: ignored)")
	f.BoolVar(&fl.debug, "debug", false, "debug messages on standard error")
	f.StringVar(&fl.debugFile, "debug-file", "", "debug messages to `FILE`")
	f.StringVar(&fl.reload, "extcap-reload-option", "", "reload an option's values (none to reload)")
	f.UintVar(&fl.packets, "packets", 0, "stop after `N` packets (0: when Wireshark stops)")
	f.BoolVar(&fl.padLinks, "pad-links", false, "pad InfiniBand link packets to 64 bytes so Wireshark 4.0 shows their fields")
	rootCmd.AddCommand(cmd)
}

// extcapIface is one capture interface: a port of a node of a running lab.
type extcapIface struct {
	Name    string // emulab-<lab>-<node>-<port>
	Display string
	Ref     string // LAB/NODE:PORT
	IB      bool   // an InfiniBand lab's port: ERF records
}

// extcapInterfaces lists the ports of the running labs under stateDir: every
// connected switch port and every port of a node with a daemon (an emunic;
// a TAP host's port is its switch's port, listed there).
func extcapInterfaces(stateDir string) ([]extcapIface, error) {
	labs, err := lab.Labs(stateDir)
	if err != nil {
		return nil, err
	}
	var out []extcapIface
	for _, name := range labs {
		li, err := lab.ReadInfo(stateDir, name)
		if err != nil {
			continue // coming up, or left behind by a killed up
		}
		for _, n := range li.Nodes {
			if n.Control == "" {
				continue
			}
			for _, p := range n.Ports {
				d := fmt.Sprintf("emufabric lab %s: %s %s port %s", li.Lab, n.Kind, n.Name, p.Name)
				if p.Peer != "" {
					d += " (to " + p.Peer + ")"
				}
				out = append(out, extcapIface{
					Name:    extcapPrefix + li.Lab + "-" + n.Name + "-" + p.Name,
					Display: d,
					Ref:     li.Lab + "/" + n.Name + ":" + p.Name,
					IB:      li.Fabric == lab.FabricIB,
				})
			}
		}
	}
	return out, nil
}

// findExtcapIface looks an interface name up among the running labs' ports.
// Names may contain dashes, so a name is matched whole, never split.
func findExtcapIface(stateDir, name string) (extcapIface, error) {
	if !strings.HasPrefix(name, extcapPrefix) {
		return extcapIface{}, fmt.Errorf("--extcap-interface %q: not an emulab interface (emulab-<lab>-<node>-<port>)", name)
	}
	ifs, err := extcapInterfaces(stateDir)
	if err != nil {
		return extcapIface{}, err
	}
	for _, i := range ifs {
		if i.Name == name {
			return i, nil
		}
	}
	return extcapIface{}, fmt.Errorf("--extcap-interface %s: no such port in the labs that are up (%s lists them)", name, lab.StatusCommand(stateDir, ""))
}

// extcapQuote escapes a value for an extcap {key=value} field: the closing
// brace would end it.
func extcapQuote(s string) string {
	return strings.NewReplacer("{", "(", "}", ")", "\n", " ").Replace(s)
}

func runExtcap(out, errOut io.Writer, fl *extcapFlags) error {
	debugOut := io.Discard
	if fl.debug {
		debugOut = errOut
	}
	if fl.debugFile != "" {
		f, err := os.OpenFile(fl.debugFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--debug-file: %w", err)
		}
		defer f.Close()
		debugOut = f
	}
	debugf := func(format string, a ...any) { fmt.Fprintf(debugOut, "emulab extcap: "+format+"\n", a...) }

	switch {
	case fl.interfaces:
		debugf("interfaces (Wireshark %s), state %s", fl.version, fl.stateDir)
		ifs, err := extcapInterfaces(fl.stateDir)
		if err != nil {
			// Wireshark asks at start-up: no labs is not an error.
			debugf("listing labs: %v", err)
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "extcap {version=%s}{display=emufabric lab ports}\n", extcapVersion)
		for _, i := range ifs {
			fmt.Fprintf(&sb, "interface {value=%s}{display=%s}\n", extcapQuote(i.Name), extcapQuote(i.Display))
		}
		_, err = io.WriteString(out, sb.String())
		return err
	case fl.version != "" && fl.iface == "":
		_, err := fmt.Fprintf(out, "extcap {version=%s}{display=emufabric lab ports}\n", extcapVersion)
		return err
	case fl.iface == "":
		return errors.New("extcap: give --extcap-interfaces, or --extcap-interface IF with --extcap-dlts, --extcap-config or --capture")
	}

	i, err := findExtcapIface(fl.stateDir, fl.iface)
	if err != nil {
		return err
	}
	switch {
	case fl.dlts:
		// The daemons record Ethernet frames (RoCEv2, PFC), or on an
		// InfiniBand lab ERF records (data and link packets).
		dlt := "dlt {number=1}{name=EN10MB}{display=Ethernet}\n"
		if i.IB {
			dlt = "dlt {number=197}{name=ERF}{display=Extensible Record Format (InfiniBand)}\n"
		}
		_, err := io.WriteString(out, dlt)
		return err
	case fl.config:
		args := "arg {number=0}{call=--packets}{display=Stop after packets}{type=unsigned}{default=0}" +
			"{tooltip=Stop the capture after this many packets (0: run until Wireshark stops it)}\n"
		if i.IB {
			// A boolflag is passed (without a value) only when checked.
			args += "arg {number=1}{call=--pad-links}{display=Pad link packets to 64 bytes}{type=boolflag}{default=false}" +
				"{tooltip=Wireshark 4.0 shows a correct 6-byte InfiniBand link (flow-control) packet as Malformed; " +
				"padded with zeros after its real bytes it shows Op, FCTBS, VL, FCCL and LPCRC}\n"
		}
		_, err := io.WriteString(out, args)
		return err
	case fl.reload != "":
		return nil // no option has values to reload
	case !fl.capture && fl.filter != "":
		// Wireshark validates a capture filter by running us with the
		// filter and the interface: nothing printed means valid.
		_, err := fmt.Fprintf(out, "capture filters are not supported: %s captures every frame; use a display filter\n", i.Name)
		return err
	case !fl.capture && fl.filterSet:
		return nil // the empty filter: valid
	case !fl.capture:
		return fmt.Errorf("extcap --extcap-interface %s: give --extcap-dlts, --extcap-config or --capture", i.Name)
	}

	if fl.filter != "" {
		return fmt.Errorf("--extcap-capture-filter %q: capture filters are not supported (every frame of %s is captured); use a display filter", fl.filter, i.Name)
	}
	if fl.fifo == "" {
		return errors.New("--capture needs --fifo PATH")
	}
	if fl.padLinks && !i.IB {
		return fmt.Errorf("--pad-links: %s is not a port of an InfiniBand lab; it carries no link packets to pad", i.Name)
	}
	debugf("capture %s (%s) to %s", i.Name, i.Ref, fl.fifo)
	srcs, err := liveEndpoints(fl.stateDir, "", []string{i.Ref}, debugf)
	if err != nil {
		return err
	}
	if fl.padLinks {
		if err := setPadLinks(srcs); err != nil {
			return err
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	signal.Ignore(syscall.SIGPIPE)
	// Opening a FIFO for writing waits for its reader (Wireshark has it
	// open already).
	// Wireshark's FIFO exists already (opening it waits for its reader);
	// a path that does not is created as a plain file, as dumpcap -w does
	// (O_TRUNC does nothing to a FIFO).
	f, err := os.OpenFile(fl.fifo, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("--fifo: %w", err)
	}
	defer f.Close()
	ctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchReader(ctx, f, stopWatch)
	var missed uint64
	pw := &progressWriter{w: f}
	streamed := make(chan struct{})
	watchStuck(ctx, streamed, pw, func() {
		fmt.Fprintf(errOut, "emulab extcap: stopped, but the reader of --fifo %s took no data for %v: giving up on it\n", fl.fifo, stuckGrace)
		os.Exit(1)
	})
	n, err := streamLive(ctx, pw, true, srcs, int(fl.packets), func() { debugf("capturing") }, &missed)
	close(streamed)
	if missed > 0 {
		debugf("%d frames not captured (a daemon's queue toward this capture was full)", missed)
	}
	debugf("%d packets captured", n)
	if err != nil {
		return fmt.Errorf("capture %s: %w", i.Name, err)
	}
	return f.Close()
}
