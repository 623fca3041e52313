//go:build linux

package main

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/wire/capture"
)

type liveCaptureFlags struct {
	stateDir string
	lab      string
	write    string
	ifaces   []string
	count    int
	autostop []string
	quiet    bool
	padLinks bool
}

func init() {
	var fl liveCaptureFlags
	cmd := &cobra.Command{
		Use:   "capture NODE:PORT [NODE:PORT...] -w FILE|-",
		Short: "Capture a running lab's ports to pcapng (file or pipe, e.g. into Wireshark)",
		Long: `capture asks the daemons of a running lab for a live capture of the ports
named and writes one pcapng stream with an interface per port, to FILE or, with
-w -, to standard output, so that

  sudo emulab capture sw1:p1 -w - | wireshark -k -i -

shows the port live. Frames are recorded where the daemon meets the wire.
Every packet carries the daemon's comment (pcapng opt_comment, Wireshark's
"Packet comments"): its direction, and for a switch what the switch decided,
such as an ECN CE mark with the queue depth, the PFC XOFF or XON the frame
triggered, a received PAUSE, or a drop with its reason.

A port is SWITCH:PORT (sw1:p1) or NIC:PORT (h1:eth0); a node alone captures
all its connected ports. NODE may be LAB/NODE; it may be NODE alone when one
lab is up (or with --lab). A host without a daemon (--hosts tap) is a TAP
port of its switch, so its port is captured on that switch port.

The capture runs until SIGINT or SIGTERM, until -c N packets were written,
until a condition of -a (as dumpcap's: duration:SECONDS, packets:N) is met, or
until the reader of the pipe goes away. Written to a pipe, every packet is
flushed as it is written. -w FIFO (mkfifo) waits for the FIFO's reader and,
as a pipe, ends when it goes. The daemons ending the capture (the lab went down)
is an error (exit status 1); what was captured is kept.

On an InfiniBand lab the ports are ERF interfaces (data packets ERF type 21,
link flow-control packets type 25), as ibdump writes them. Wireshark 4.0 shows
a correct 6-byte link packet as Malformed; --pad-links asks the daemons to
write each one zero-padded to 64 bytes (the real 6 first), as emulab sim
--capture-pad-links does, and Wireshark then shows its Op, FCTBS, VL, FCCL and
LPCRC.`,
		Example: `  sudo bin/emulab capture sw1:p1 -w - | wireshark -k -i -
  sudo bin/emulab capture sw1:p1 sw1:p2 -w incast.pcapng -a duration:10
  sudo bin/emulab capture h1:eth0 -c 100 -w h1.pcapng
  sudo bin/emulab capture two-hosts/sw1 -w - | tshark -r - -V
  sudo bin/emulab capture ib-two-hosts/sw1:p1 --pad-links -w - | wireshark -k -i -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLiveCapture(cmd.ErrOrStderr(), append(append([]string(nil), fl.ifaces...), args...), &fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	f.StringVar(&fl.lab, "lab", "", "the nodes are in lab `NAME` (default: the one lab that is up)")
	f.StringVarP(&fl.write, "write", "w", "", "write pcapng to `FILE` (- is standard output)")
	f.StringArrayVarP(&fl.ifaces, "interface", "i", nil, "a port to capture, `NODE:PORT` (as an argument; may be repeated)")
	f.IntVarP(&fl.count, "count", "c", 0, "stop after `N` packets")
	f.StringArrayVarP(&fl.autostop, "autostop", "a", nil, "stop when `COND` is met: duration:SECONDS or packets:N (may be repeated)")
	f.BoolVarP(&fl.quiet, "quiet", "q", false, "no messages on standard error")
	f.BoolVar(&fl.padLinks, "pad-links", false, "pad InfiniBand link packets to 64 bytes so Wireshark 4.0 shows their fields")
	rootCmd.AddCommand(cmd)
}

// liveSource is one daemon's part of a capture: the ports asked of it,
// in the order its stream declares them.
type liveSource struct {
	node    string
	control string
	ports   []string
	descr   []string
	// link is what the daemon's records carry: Ethernet, or ERF on an
	// InfiniBand lab.
	link capture.LinkType
	// lab is the node's lab; padLinks asks its daemon to pad IB link
	// packets (setPadLinks).
	lab      string
	padLinks bool
}

// setPadLinks asks every source to pad IB link packets to 64 bytes
// (--pad-links); a RoCE lab's port has no link packets to pad, and a
// flag that would change nothing is refused rather than ignored.
func setPadLinks(srcs []*liveSource) error {
	for _, s := range srcs {
		if s.link != capture.LinkTypeERF {
			return fmt.Errorf("--pad-links: lab %s is not InfiniBand (fabric: ib); its ports carry no link packets to pad", s.lab)
		}
		s.padLinks = true
	}
	return nil
}

// liveEndpoints resolves the ports named on the command line to the
// daemons that capture them, one source per daemon, in the order named.
// notef reports a port captured elsewhere than named (a TAP host's).
func liveEndpoints(stateDir, labFlag string, args []string, notef func(string, ...any)) ([]*liveSource, error) {
	if len(args) == 0 {
		return nil, errors.New("name a port to capture: NODE:PORT (sw1:p1, h1:eth0) or a node")
	}
	var srcs []*liveSource
	seen := map[string]bool{}
	add := func(li *lab.LabInfo, n *lab.NodeInfo, port string) error {
		key := n.Control + "\x00" + port
		if seen[key] {
			return fmt.Errorf("%s:%s named twice", n.Name, port)
		}
		seen[key] = true
		var src *liveSource
		for _, s := range srcs {
			if s.control == n.Control {
				src = s
			}
		}
		if src == nil {
			src = &liveSource{node: n.Name, control: n.Control, link: capture.LinkTypeEthernet, lab: li.Lab}
			if li.Fabric == lab.FabricIB {
				src.link = capture.LinkTypeERF
			}
			srcs = append(srcs, src)
		}
		d := fmt.Sprintf("emulab %s: %s %s port %s", li.Lab, n.Kind, n.Name, port)
		if p := n.Port(port); p != nil && p.Peer != "" {
			d += " (to " + p.Peer + ")"
		}
		src.ports = append(src.ports, port)
		src.descr = append(src.descr, d)
		return nil
	}
	for _, arg := range args {
		nodeName, port := lab.SplitEndpoint(arg)
		li, n, err := findNode(stateDir, labFlag, nodeName)
		if err != nil {
			return nil, err
		}
		var ports []string
		switch {
		case port != "":
			if n.Kind != lab.KindSwitch && n.Port(port) == nil {
				return nil, fmt.Errorf("%s: %s has no port %s (ports: %s)", arg, n.Name, port, n.PortNames())
			}
			ports = []string{port}
		default:
			for _, p := range n.Ports {
				ports = append(ports, p.Name)
			}
			if len(ports) == 0 {
				return nil, fmt.Errorf("%s: %s has no connected port", arg, n.Name)
			}
		}
		for _, port := range ports {
			target, tport := n, port
			if n.Control == "" {
				// A plain host's interface is a TAP port of its switch.
				peer := n.Port(port).Peer
				peerNode, peerPort := lab.SplitEndpoint(peer)
				if target = li.Node(peerNode); target == nil || target.Control == "" || peerPort == "" {
					return nil, fmt.Errorf("%s: %s has no daemon and its link's peer %q has none either", arg, n.Name, peer)
				}
				tport = peerPort
				notef("%s:%s is a TAP port of %s: capturing %s (rx and tx are the switch's)", n.Name, port, target.Name, peer)
			}
			if err := add(li, target, tport); err != nil {
				return nil, err
			}
		}
	}
	return srcs, nil
}

// liveStop is when a capture ends on its own.
type liveStop struct {
	packets  int           // 0: no limit
	duration time.Duration // 0: no limit
}

// parseLiveAutostop reads dumpcap's -a conditions that apply here.
func parseLiveAutostop(conds []string, count int) (liveStop, error) {
	var st liveStop
	if count < 0 {
		return st, fmt.Errorf("-c %d: a number of packets, at least 1", count)
	}
	st.packets = count
	for _, c := range conds {
		k, v, ok := strings.Cut(c, ":")
		switch {
		case !ok:
			return st, fmt.Errorf("-a %s: want duration:SECONDS or packets:N", c)
		case k == "duration":
			s, err := strconv.ParseFloat(v, 64)
			if err != nil || !(s > 0) || s > 1e6 {
				return st, fmt.Errorf("-a %s: the duration is a number of seconds > 0", c)
			}
			st.duration = time.Duration(s * float64(time.Second))
		case k == "packets":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return st, fmt.Errorf("-a %s: the packet count is a number >= 1", c)
			}
			if st.packets == 0 || n < st.packets {
				st.packets = n
			}
		default:
			return st, fmt.Errorf("-a %s: unknown condition %q (duration, packets)", c, k)
		}
	}
	return st, nil
}

func runLiveCapture(errOut io.Writer, args []string, fl *liveCaptureFlags) error {
	stop, err := parseLiveAutostop(fl.autostop, fl.count)
	if err != nil {
		return err
	}
	if fl.write == "" {
		return errors.New("-w: give the file to write pcapng to, or - for standard output")
	}
	notef := func(f string, a ...any) {
		if !fl.quiet {
			fmt.Fprintf(errOut, f+"\n", a...)
		}
	}
	srcs, err := liveEndpoints(fl.stateDir, fl.lab, args, notef)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	if fl.padLinks {
		if err := setPadLinks(srcs); err != nil {
			return err
		}
	}
	var out *os.File
	var w io.Writer // out, or the -w file that is truncated at its first write
	var file *captureFile
	if fl.write == "-" {
		out = os.Stdout
		if _, err := unix.IoctlGetTermios(int(out.Fd()), unix.TCGETS); err == nil {
			return errors.New("-w -: standard output is a terminal; pipe it into wireshark -k -i - or tshark -r -, or give a file")
		}
	} else {
		if isFIFO(fl.write) {
			notef("%s is a FIFO: waiting for its reader (wireshark -k -i %s)", fl.write, fl.write)
		}
		if file, err = createCaptureFile(fl.write); err != nil {
			return fmt.Errorf("-w: %w", err)
		}
		out = file.File
		defer out.Close()
	}
	w = out
	if file != nil {
		w = file
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// A reader that goes away (wireshark closed) makes writes fail with
	// EPIPE instead of killing emulab before it closes its streams.
	signal.Ignore(syscall.SIGPIPE)
	if stop.duration > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, stop.duration)
		defer c()
	}
	ctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchReader(ctx, out, stopWatch)
	var names []string
	for _, s := range srcs {
		for _, p := range s.ports {
			names = append(names, "'"+s.node+":"+p+"'")
		}
	}
	started := false
	var missed uint64
	pw := &progressWriter{w: w}
	streamed := make(chan struct{})
	watchStuck(ctx, streamed, pw, func() {
		fmt.Fprintf(errOut, "emulab: capture: stopped, but the reader of -w %s took no data for %v: giving up on it (the capture's end, its statistics blocks, is lost)\n", fl.write, stuckGrace)
		os.Exit(1)
	})
	n, err := streamLive(ctx, pw, !isRegularFile(out), srcs, stop.packets, func() {
		started = true
		notef("Capturing on %s", strings.Join(names, ", "))
	}, &missed)
	close(streamed)
	if started {
		notef("%d packet%s captured", n, livePlural(n))
		if missed > 0 {
			notef("%d frame%s not captured: a daemon's queue toward this capture was full (the comment of the port's next packet says how many before it, the file's interface statistics how many in all); write to a file on a faster disk, capture fewer ports, or filter afterwards", missed, livePlural(int(missed)))
		}
	}
	if file != nil {
		if cerr := file.finish(started); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

func livePlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// watchReader calls cancel when the reader of f, a pipe, FIFO or socket,
// goes away: poll reports POLLERR (pipe) or POLLHUP (socket) on the
// writer's end then. A capture into "| wireshark -k -i -" thus ends when
// Wireshark does, even while no packet comes to fail a write. The watch
// polls a duplicate of the descriptor, which leaves f's own (blocking or
// not) as it is, and stops with ctx.
func watchReader(ctx context.Context, f *os.File, cancel func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	dup := -1
	if cerr := rc.Control(func(fd uintptr) { dup, err = unix.Dup(int(fd)) }); cerr != nil || err != nil {
		return
	}
	go func() {
		defer unix.Close(dup)
		fds := []unix.PollFd{{Fd: int32(dup)}}
		for ctx.Err() == nil {
			n, err := unix.Poll(fds, 200)
			if err != nil && err != unix.EINTR {
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				cancel()
				return
			}
		}
	}()
}

// isRegularFile reports whether f is a regular file (not a pipe, FIFO,
// socket or terminal, where a reader waits for every packet).
func isRegularFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// liveRec is a record read from a source, copied out of its reader.
type liveRec struct {
	seq        uint64 // order of arrival, for records of one time stamp
	src, iface int
	link       capture.LinkType
	ts         time.Time
	data       []byte
	comment    string
}

// streamLive opens every source, then merges their pcapng streams
// into one written to w until ctx ends, limit packets (0: no limit) were
// written, or a source fails. It returns the packets written. flushEach
// flushes after every packet (a pipe's reader sees each at once);
// otherwise output is flushed when no record is waiting. ready, if not
// nil, is called once every daemon captures and the interfaces are out.
// missed, if not nil, adds up the frames the daemons could not queue for
// this capture: what their statistics blocks say (isb_ifdrop, counted as
// their capture_drop counters count), or for a daemon that sent none the
// gaps its records' comments report (capture.GapIn).
//
// A capture ends as the daemons see it: each stream is half-closed, and
// the daemon writes the records it still holds and a statistics block
// per port, then closes. The output ends with a statistics block per
// interface: the daemon's counts and the packets written (isb_usrdeliv).
func streamLive(ctx context.Context, w io.Writer, flushEach bool, srcs []*liveSource, limit int, ready func(), missed *uint64) (written int, err error) {
	defer func() {
		if errors.Is(err, syscall.EPIPE) {
			// The reader went away (Wireshark closed): the capture is
			// over, as tcpdump -w - ends.
			err = nil
		}
	}()
	var streams []*lab.CaptureStream
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	for _, s := range srcs {
		cs, err := lab.OpenCapture(s.control, s.ports, s.padLinks, opsTimeout)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", s.node, err)
		}
		streams = append(streams, cs)
	}
	ng, err := capture.NewNgWriter(w, "emulab capture")
	if err != nil {
		return 0, err
	}
	// One interface per port, declared before any packet, of the lab's
	// link type (Ethernet, or ERF for InfiniBand); a record of another
	// link type gets its own interface when it first appears.
	type ifKey struct {
		src, iface int
		link       capture.LinkType
	}
	type portKey struct{ src, iface int }
	ids := map[ifKey]int{}
	for i, s := range srcs {
		for j, p := range s.ports {
			id, err := ng.AddInterface(capture.Interface{LinkType: s.link, Name: s.node + ":" + p, Description: s.descr[j]})
			if err != nil {
				return 0, err
			}
			ids[ifKey{i, j, s.link}] = id
		}
	}
	if err := ng.Flush(); err != nil {
		return 0, err
	}
	started := time.Now()
	if ready != nil {
		ready()
	}
	// What the daemons said they lost, per port: the gaps their records'
	// comments report, and their statistics blocks at the end.
	gaps := map[portKey]uint64{}
	stats := map[portKey]capture.InterfaceStats{}
	delivered := map[portKey]int64{}
	if missed != nil {
		defer func() {
			for i, s := range srcs {
				for j := range s.ports {
					k := portKey{i, j}
					if st, ok := stats[k]; ok && st.Drop >= 0 {
						*missed += uint64(st.Drop)
					} else {
						*missed += gaps[k]
					}
				}
			}
		}()
	}

	recs := make(chan liveRec, 256)
	ended := make(chan liveEnd, len(srcs))
	done := make(chan struct{})
	defer close(done)
	stopping := make(chan struct{})
	for i, cs := range streams {
		go readLiveSource(i, srcs[i], cs, recs, ended, done, stopping)
	}
	// full: limit packets were written; later records are read (the
	// daemons' statistics come after them) and left out.
	full := false
	// put writes one record; stop reports the limit reached.
	put := func(r liveRec) (stop bool, err error) {
		if full {
			return true, nil
		}
		k := ifKey{r.src, r.iface, r.link}
		id, ok := ids[k]
		if !ok {
			s := srcs[r.src]
			if id, err = ng.AddInterface(capture.Interface{LinkType: r.link, Name: s.node + ":" + s.ports[r.iface], Description: s.descr[r.iface]}); err != nil {
				return true, err
			}
			ids[k] = id
		}
		if err := ng.WritePacket(id, r.ts, r.data, r.comment); err != nil {
			return true, err
		}
		if flushEach || len(recs) == 0 {
			if err := ng.Flush(); err != nil {
				return true, err
			}
		}
		written++
		delivered[portKey{r.src, r.iface}]++
		full = limit > 0 && written >= limit
		return full, nil
	}
	// Each daemon's records come in time order, but the streams of
	// several daemons reach this process each at its own pace: a frame's
	// rx at the switch could be written before its tx at the NIC that
	// sent it. With more than one daemon a record waits a window after
	// its time stamp, and the oldest waiting goes first. The window is
	// reorderWindow, or twice the longest a record has been late lately
	// (a loaded machine's streams lag by more), at most maxReorderWindow;
	// it halves back toward reorderWindow after each second without a
	// record that late, so one stall does not hold every record (and its
	// bytes) for a second for the rest of the capture.
	var held recHeap
	window := reorderWindow
	var lateAt time.Time
	merge := len(srcs) > 1
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	// release writes the held records due by now (all of them with all).
	release := func(all bool) (stop bool, err error) {
		now := time.Now()
		for held.Len() > 0 {
			if wait := window - now.Sub(held[0].ts); !all && wait > 0 {
				due.Reset(wait)
				return false, nil
			}
			if stop, err := put(heap.Pop(&held).(liveRec)); stop || err != nil {
				return stop, err
			}
		}
		return false, nil
	}
	var seq uint64
	take := func(r liveRec) (stop bool, err error) {
		if r.iface >= len(srcs[r.src].ports) {
			return true, fmt.Errorf("%s: the daemon's stream has interface %d; %d ports were asked for", srcs[r.src].node, r.iface, len(srcs[r.src].ports))
		}
		gaps[portKey{r.src, r.iface}] += capture.GapIn(r.comment)
		if !merge || full {
			return put(r)
		}
		r.seq, seq = seq, seq+1
		now := time.Now()
		if lag := 2 * now.Sub(r.ts); lag > window/2 {
			window, lateAt = min(max(window, lag), maxReorderWindow), now
		} else if window > reorderWindow && now.Sub(lateAt) > time.Second {
			window, lateAt = max(window/2, reorderWindow), now
		}
		heap.Push(&held, r)
		return release(false)
	}
	// stop ends the capture at the daemons (once): they write what they
	// still hold and their statistics, and end their streams, which are
	// read to the end (records that come meanwhile are written, as a
	// stopped tcpdump writes what it already has) for at most
	// liveFinishTimeout.
	var finishBy <-chan time.Time
	stop := func() {
		if finishBy != nil {
			return
		}
		close(stopping)
		for _, cs := range streams {
			cs.CloseWrite()
		}
		finishBy = time.After(liveFinishTimeout)
	}
	var firstErr error
	running := ctx.Done()
	for left := len(srcs); left > 0; {
		select {
		case <-running:
			running = nil
			stop()
		case e := <-ended:
			left--
			for j, st := range e.stats {
				stats[portKey{e.src, j}] = st
			}
			if e.err != nil && firstErr == nil {
				// A stream ends early only when its daemon stops (or
				// the lab goes down): the capture ends with the reason.
				firstErr = e.err
			}
			stop()
		case <-finishBy:
			// A daemon that did not end its stream in time (an older
			// one, or one stuck): its statistics are not known.
			left = 0
		case <-due.C:
			if st, err := release(false); err != nil {
				return written, err
			} else if st {
				stop()
			}
		case r := <-recs:
			if st, err := take(r); err != nil {
				return written, err
			} else if st {
				stop()
			}
		}
	}
	// What came with the last streams' ends is in recs already.
	for len(recs) > 0 {
		if _, err := take(<-recs); err != nil {
			return written, err
		}
	}
	if _, err := release(true); err != nil {
		return written, err
	}
	end := time.Now()
	for i, s := range srcs {
		for j := range s.ports {
			k := portKey{i, j}
			st, ok := stats[k]
			if !ok {
				st = capture.UnknownStats(end)
				if gaps[k] > 0 {
					st.Drop = int64(gaps[k])
				}
			}
			st.Time, st.Start, st.Delivered = end, started, delivered[k]
			if err := ng.WriteInterfaceStats(ids[ifKey{i, j, s.link}], st); err != nil {
				return written, err
			}
		}
	}
	if err := ng.Close(); err != nil {
		return written, err
	}
	return written, firstErr
}

// liveFinishTimeout bounds how long a stopped capture waits for the
// daemons to end their streams.
const liveFinishTimeout = 2 * time.Second

// liveEnd is how a source's stream ended: err nil when this process ended
// the capture (or gave up on it), and the statistics the daemon wrote last
// by interface (nil if none).
type liveEnd struct {
	src   int
	err   error
	stats map[int]capture.InterfaceStats
}

// reorderWindow is how long a record of a capture from several daemons
// waits for older records of the other daemons. A daemon writes a record
// out as soon as no other waits, so a stream lags by the time its daemon
// and this process take to be scheduled: a millisecond on an idle
// machine, tens on a loaded one.
const reorderWindow = 50 * time.Millisecond

// maxReorderWindow bounds how far the window grows: a stream later than
// that (a daemon stopped, the machine swapping) is written out of order
// rather than holding the others back for longer.
const maxReorderWindow = time.Second

// recHeap holds records by time stamp, the oldest first; records of one
// time keep their order of arrival.
type recHeap []liveRec

func (h recHeap) Len() int { return len(h) }
func (h recHeap) Less(i, j int) bool {
	return h[i].ts.Before(h[j].ts) || h[i].ts.Equal(h[j].ts) && h[i].seq < h[j].seq
}
func (h recHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recHeap) Push(x any)   { *h = append(*h, x.(liveRec)) }
func (h *recHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// readLiveSource reads one daemon's pcapng stream and passes its records on
// until the stream ends or done is closed. It reports how the stream
// ended on ended: a nil error when done was closed first, or when the
// stream ended after stopping was closed (the capture was ended here).
func readLiveSource(i int, s *liveSource, cs *lab.CaptureStream, recs chan<- liveRec, ended chan<- liveEnd, done, stopping <-chan struct{}) {
	var rd *capture.Reader
	fail := func(err error) {
		select {
		case <-done:
			err = nil
		default:
		}
		e := liveEnd{src: i, err: err}
		if rd != nil {
			e.stats = rd.InterfaceStats()
		}
		ended <- e
	}
	rd, err := capture.Open(cs)
	if err != nil {
		fail(fmt.Errorf("%s: capture stream: %w", s.node, err))
		return
	}
	var rec capture.Record
	for {
		if err := rd.Next(&rec); err != nil {
			// A stream cut in the middle of a block (io.ErrUnexpectedEOF)
			// is a daemon that stopped while writing (the lab went down
			// under traffic), as much as one cut between blocks.
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				select {
				case <-stopping:
					fail(nil)
					return
				default:
				}
				err = errors.New("the daemon ended the capture (did the lab go down?)")
			}
			fail(fmt.Errorf("%s: %w", s.node, err))
			return
		}
		// Raw keeps an ERF record's header, which its interface's link
		// type needs; for Ethernet Raw and Data are the same bytes.
		r := liveRec{src: i, iface: rec.Interface, link: rec.LinkType, ts: rec.Timestamp,
			data: append([]byte(nil), rec.Raw...), comment: rec.Comment}
		select {
		case recs <- r:
		case <-done:
			ended <- liveEnd{src: i}
			return
		}
	}
}
