package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/internal/ctlpeer"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/nic"
	"github.com/emufabric/emufabric/nicd"
)

func init() {
	var fl perfFlags
	cmd := &cobra.Command{
		Use:   "perf TEST SRC DST [flags]",
		Short: "Run a perftest-style RDMA test between two NIC hosts of a lab that is up",
		Long: `perf runs one of perftest's tests between the emulated RNICs of two hosts of a
lab brought up with --hosts nic, and prints perftest's banner and result table:

  write_bw read_bw send_bw      bandwidth (ib_write_bw, ib_read_bw, ib_send_bw)
  write_lat read_lat send_lat   latency (ib_write_lat, ib_read_lat, ib_send_lat)

SRC is the requester (perftest's client), DST the responder (its server);
both are LAB/NODE, or NODE when one lab is up, or a host's address in place of
NODE (10.0.0.2, as ib_write_bw takes its server's). emulab plays both of
perftest's processes: it drives each host's emunic over its control socket
(registering shared memory, creating CQs and QPs, posting work requests and
polling completions), so the frames cross the lab's switches as real RoCEv2
(or, in an InfiniBand lab, as native IB packets addressed by LID). The
bandwidth tests' post-and-poll loop runs inside the requester's emunic, as
perftest runs on the host next to its RNIC: a completion is then
microseconds from the next post, not a control round trip away.

After the run the destination memory is compared byte for byte with the
source (read_bw: the requester's buffer with the responder's); a mismatch is
an error (exit status 1).

The latency tests play perftest's: write_lat and send_lat ping-pong, the
responder's emunic answering each message with one of its own as soon as it
lands (a WRITE placed in its memory, a SEND's receive completed), and a
sample is half the time from a post to the answer's arrival, one trip across
the fabric; read_lat's sample is a READ's round trip, from the post to the
completion. The loops run in the emunics, as perftest runs next to its RNIC,
so a sample is the fabric's and the daemons', not the control socket's. For
send_bw the responder's emunic keeps its receives posted (with -D they are
posted by emulab).

perftest's flags for what the lab or perf decides (-d, -i, -x, -p, -R, -F,
-I, -e, -f, -r) are taken and noted as ignored, so a pasted perftest command
line runs.

perftest's report and mode flags:

  -b, --bidirectional   bandwidth tests: DST sends to SRC while SRC sends to
                        DST, and the title says "Bidirectional". perftest
                        sends both ways on each QP; here each way has its
                        own -q QP pairs (a loop runs in its requester's
                        emunic and holds that session), so the banner lists
                        both ways' addresses. The wire carries the same:
                        requests both ways, each answered the other way.
                        The row is the sum of the two directions' peak,
                        average and message rate, #iterations one
                        direction's, as perftest adds the remote side's
                        report to its own; both ways' memory is checked.
  -l, --post_list N     bandwidth tests: perftest links N work requests into
                        one ibv_post_send, one doorbell. The loop in the
                        requester's emunic then posts whole lists only,
                        each in one call into the NIC engine (which sees the
                        list at once, as an RNIC after one doorbell), when N
                        send queue slots are free. Without -l it refills
                        whatever is free after each poll, also in few calls:
                        so -l coarsens the refills, it does not save
                        per-message doorbells as on hardware. As perftest:
                        the CQ moderation becomes N unless -Q is given (then
                        it must divide N), -n must be a multiple of N, and
                        the title says "Post List".
  --run_infinitely      bandwidth tests: a row every -D seconds (5 unless
                        given), without a peak, until interrupted. Each
                        period is a -D run of its own, back to back, and its
                        memory is checked before its row is printed. Ctrl-C
                        (SIGINT) ends it: the period in progress is not
                        reported, the table is closed, and the exit status
                        is 130, perftest's (it dies of the signal). With
                        --out_json the file is rewritten after every period
                        (results the last period, all_results every period
                        so far, test_info has run_infinitely and Duration).
  -H, --report-histogram  latency tests: before the row, "#, usec" and every
                        sample sorted, "N, value" with C's %g, without the
                        two largest that the statistics leave out; then the
                        header again, as perftest's print_report_lat.
  -U, --report-unsorted latency tests: the same list in the order measured,
                        every sample. (perftest's help says -U implies -H;
                        its code does not, nor does perf: give both for
                        both lists.)
  --cpu_util            with -D or --run_infinitely: a CPU_Util[%] column
                        (JSON CPU_util), perftest's formula: user over user
                        plus idle time of /proc/stat's cpu line, over the
                        measurement. It is the whole machine's, the lab's
                        emunics and switches included. Without -D it is
                        noted and ignored, as perftest does.
  -C, --report-cycles   refused: perftest prints the CPU cycle counter's
                        deltas; the emunics time messages with the clock
                        (scaled by time_dilation), so there are no cycles,
                        and a conversion at a made-up frequency would print
                        figures that look measured and are not.

--out_json is perftest's switch: the results go to --out_json_file FILE, or
perftest_out.json in the working directory (a file name given alone implies
--out_json). The document is one object, the same shape whatever the flags:

  "test_info"    the banner's keys (test, Device, Number_of_qps, TX_depth,
                 CQ_Moderation, Mtu, Link_type, ...), BW_unit (MiB/sec or
                 Gb/sec) for the bandwidth tests, src, dst, and
                 time_dilation in a dilated lab
  "results"      one object, perftest's: the size run, or with -a the last
                 (perftest's file holds the last size too)
  "all_results"  a list of one such object per size, in the order run (one
                 element without -a)

A result has MsgSize, n_iterations and data_verified, and for the bandwidth
tests BW_peak, BW_average (in BW_unit) and MsgRate (Mpps); for the latency
tests t_min, t_max, t_typical, t_avg, t_stdev, percentile_99 and
percentile_99.9 (usec), or with -D t_avg and tps_average. The values are the
table's, digit for digit.

In a lab with time_dilation N (the lab file's key) every rate and time is
reported in the lab's time: rates N times, latencies 1/N of what the wall
clock saw, and -D counts seconds of the lab's time.`,
		Args: perfArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			fl.sizeSet = f.Changed("size")
			fl.itersSet = f.Changed("iters")
			fl.durSet = f.Changed("duration")
			fl.cqModSet = f.Changed("cq-mod")
			fl.txSet = f.Changed("tx-depth")
			fl.postListSet = f.Changed("post_list")
			fl.outJSON = perfJSONPath(fl.outJSONOn, fl.outJSONFile)
			if err := perfIgnored(f, cmd.ErrOrStderr()); err != nil {
				return err
			}
			// Here, not in runPerf: emulab demo runs perf too, and its
			// own Ctrl-C must take its lab down.
			defer stopOnSignal()()
			return runPerf(cmd.OutOrStdout(), args, &fl)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&fl.stateDir, "state-dir", lab.DefaultStateRoot, "state directories of labs live under `DIR`")
	f.IntVarP(&fl.size, "size", "s", perfDefSizeBW, "message size in bytes (latency tests: 2 unless given)")
	f.BoolVarP(&fl.all, "all", "a", false, "run every size from 2 to 2^23 bytes")
	f.IntVarP(&fl.iters, "iters", "n", perfDefIters, "messages per size (per QP; write_bw 5000, as perftest)")
	f.IntVarP(&fl.duration, "duration", "D", 0, "run for `SECONDS` instead of a number of messages")
	f.IntVarP(&fl.qps, "qp", "q", 1, "queue pairs, run at once (bandwidth tests)")
	f.IntVarP(&fl.cqMod, "cq-mod", "Q", perfDefCQMod, "signal one work request in this many (CQ moderation; at most the TX depth)")
	f.IntVarP(&fl.txDepth, "tx-depth", "t", perfDefTxBW, "send work requests in flight per QP (latency tests: 1)")
	f.IntVarP(&fl.mtu, "mtu", "m", 0, "path MTU: 256, 512, 1024, 2048 or 4096 (default the ports' active MTU)")
	f.BoolVarP(&fl.noPeak, "noPeak", "N", false, "do not measure the peak bandwidth")
	f.IntVarP(&fl.sl, "sl", "S", 0, "service level")
	f.IntVarP(&fl.tos, "tos", "T", -1, "IP traffic class (DSCP<<2 | ECN), RoCE only; default the NIC's RoCE DSCP (26: priority 3)")
	f.IntVarP(&fl.timeout, "qp-timeout", "u", 0, "local ACK timeout: 4.096 us x 2^`U` (default the NIC's, 14: 67 ms)")
	f.BoolVar(&fl.gbits, "report_gbits", false, "report bandwidth in Gb/sec instead of MiB/sec")
	f.BoolVarP(&fl.bidir, "bidirectional", "b", false, "bandwidth tests: traffic both ways at once (SRC to DST and DST to SRC, each way on its own QPs); the row is the sum of both, as perftest's")
	f.IntVarP(&fl.postList, "post_list", "l", 1, "bandwidth tests: post work requests `N` at a time, each list in one call to the NIC (one doorbell) once N send slots are free; the CQ moderation becomes N unless -Q is given")
	f.BoolVar(&fl.runInf, "run_infinitely", false, "bandwidth tests: run until interrupted, printing a row every -D seconds (5 unless given); Ctrl-C ends it (exit status 130)")
	f.BoolVar(&fl.cpuUtil, "cpu_util", false, "with -D or --run_infinitely: add CPU_Util[%], the machine's user time over user+idle from /proc/stat (perftest's formula)")
	f.BoolVarP(&fl.histogram, "report-histogram", "H", false, "latency tests: print every sample, sorted, before the row (perftest's \"#, usec\" list)")
	f.BoolVarP(&fl.unsorted, "report-unsorted", "U", false, "latency tests: print every sample in the order measured, before the row")
	f.BoolVarP(&fl.cycles, "report-cycles", "C", false, "refused: the emulated RNICs time with the clock; there are no CPU cycles to report")
	f.BoolVar(&fl.outJSONOn, "out_json", false, "also write the results as JSON, to --out_json_file ("+perfDefJSONFile+" in the working directory unless given)")
	f.StringVar(&fl.outJSONFile, "out_json_file", "", "the JSON file's name, `FILE` (given alone, it implies --out_json)")
	addPerfIgnored(f)
	cmd.SetFlagErrorFunc(perfFlagError)
	rootCmd.AddCommand(cmd)
}

func runPerf(out io.Writer, args []string, fl *perfFlags) error {
	test, err := lookupPerfTest(args[0])
	if err != nil {
		return err
	}
	plan, err := fl.plan(test)
	if err != nil {
		return err
	}
	for _, n := range plan.notes {
		fmt.Fprintf(os.Stderr, "emulab perf: %s\n", n)
	}
	if plan.outJSON != "" {
		if err := checkJSONDir(plan.outJSON); err != nil {
			return err
		}
	}
	src, err := lab.ResolveNIC(fl.stateDir, args[1])
	if err != nil {
		return fmt.Errorf("SRC %s: %w", args[1], err)
	}
	dstRef := args[2]
	if _, err := netip.ParseAddr(dstRef); err == nil {
		// An address is looked up in SRC's lab, as the server's address
		// is on a perftest client's network.
		dstRef = src.Lab + "/" + dstRef
	}
	dst, err := lab.ResolveNIC(fl.stateDir, dstRef)
	if err != nil {
		return fmt.Errorf("DST %s: %w", args[2], err)
	}
	if src.Lab != dst.Lab {
		return fmt.Errorf("SRC %s and DST %s are in different labs (%s, %s)", args[1], args[2], src.Lab, dst.Lab)
	}
	if src.Node == dst.Node {
		return fmt.Errorf("SRC and DST are the same host (%s): perf runs between two hosts", src.Node)
	}
	return runPerfPlan(out, plan, src, dst)
}

// perfOutcome is a run's results, for the JSON file and for tests.
type perfOutcome struct {
	bw  []bwRow
	lat []latStats
}

func runPerfPlan(out io.Writer, plan *perfPlan, src, dst lab.NICHost) error {
	// A link that is down before the run is often a dead or stopped
	// switch: the hint names it.
	status, err := nicStatus(src, plan.stateDir)
	if err == nil {
		_, err = nicStatus(dst, plan.stateDir)
	}
	if err != nil {
		procs, held := labProcs(plan.stateDir, src.Lab)
		if held {
			return heldHint(err, plan.stateDir, src.Lab)
		}
		return daemonsHint(err, procs, lab.DownCommand(plan.stateDir, src.Lab))
	}
	if err := plan.checkFabric(status.LID != 0); err != nil {
		return err
	}
	bufSize := 0
	for _, s := range plan.sizes {
		bufSize = max(bufSize, s)
	}
	cfg := perfPairConfig{BufSize: bufSize, Depth: plan.depth, MTU: plan.mtu, TC: plan.tc, SL: plan.sl, Timeout: plan.timeout}
	conns, err := openPerfConns(src.Control, dst.Control, plan.qps, cfg)
	if err != nil {
		return fmt.Errorf("setting up %s -> %s: %w", src.Node, dst.Node, err)
	}
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	// -b: the other way, DST's emunic the requester, on QP pairs of its
	// own. perftest's -b sends both ways on each QP; here a QP pair's
	// loop runs in its requester's emunic and holds that session, so
	// each direction has its own pairs. The fabric carries the same
	// traffic: requests both ways, each answered by ACKs (or READ
	// responses) the other way.
	var rconns []*perfConn
	if plan.bidir {
		if rconns, err = openPerfConns(dst.Control, src.Control, plan.qps, cfg); err != nil {
			return fmt.Errorf("setting up %s -> %s: %w", dst.Node, src.Node, err)
		}
		defer func() {
			for _, c := range rconns {
				c.close()
			}
		}()
	}
	mtu := status.PortMTU
	if plan.mtu > 0 {
		mtu = min(mtu, plan.mtu)
	}
	if dm := conns[0].pair.BQP.MTU; dm > 0 {
		mtu = min(mtu, dm)
	}
	// The daemons' clocks run time_dilation times slower than the wall:
	// every figure is reported, and -D counted, in the lab's time.
	plan.dilation = max(status.TimeDilation, 1)
	b := perfBanner{Title: plan.title(), Device: "emu_" + status.Port + " (" + src.Node + ")", QPs: plan.qps,
		Depth: plan.depth, CQMod: plan.cqMod, MTU: mtu, SL: plan.sl, Remotes: plan.test.remote, Dilation: plan.dilation,
		Lat: plan.test.lat, PostList: plan.postList}
	if plan.test.read() {
		b.OutReads = perfOutReads
	}
	for _, c := range conns {
		p := c.pair
		b.Local = append(b.Local, perfSide{LID: p.AQP.LID, QPN: p.AQP.QPN, PSN: p.AQP.PSN, RKey: p.AMR.RKey, VAddr: p.AMR.Addr, GID: p.AQP.GID})
		b.Remote = append(b.Remote, perfSide{LID: p.BQP.LID, QPN: p.BQP.QPN, PSN: p.BQP.PSN, RKey: p.BMR.RKey, VAddr: p.BMR.Addr, GID: p.BQP.GID})
	}
	// The reverse pairs' SRC side is their responder (B).
	for _, c := range rconns {
		p := c.pair
		b.Local = append(b.Local, perfSide{LID: p.BQP.LID, QPN: p.BQP.QPN, PSN: p.BQP.PSN, RKey: p.BMR.RKey, VAddr: p.BMR.Addr, GID: p.BQP.GID})
		b.Remote = append(b.Remote, perfSide{LID: p.AQP.LID, QPN: p.AQP.QPN, PSN: p.AQP.PSN, RKey: p.AMR.RKey, VAddr: p.AMR.Addr, GID: p.AQP.GID})
	}
	writeBanner(out, b)

	var save func(perfOutcome) error
	if plan.outJSON != "" {
		info := perfJSONInfo{Test: plan.title(), Device: "emu_" + status.Port, NumberOfQPs: plan.qps,
			ConnectionType: "RC", TXDepth: plan.depth, Mtu: mtu, LinkType: b.linkType(),
			DataExMethod: "emunic control sockets", Src: src.Lab + "/" + src.Node, Dst: dst.Lab + "/" + dst.Node}
		if plan.dilation > 1 {
			info.TimeDilation = plan.dilation
		}
		if !plan.test.lat {
			info.CQModeration = &plan.cqMod
			info.BWUnit = "MiB/sec"
			if plan.gbits {
				info.BWUnit = "Gb/sec"
			}
		}
		if plan.postList > 1 {
			info.PostList = plan.postList
		}
		if plan.runInf {
			info.RunInfinitely, info.Duration = true, plan.duration
		}
		save = func(oc perfOutcome) error {
			if len(oc.bw) == 0 && len(oc.lat) == 0 {
				return nil
			}
			var results []any
			for _, r := range oc.bw {
				results = append(results, bwResultJSON(r, plan.gbits))
			}
			for _, s := range oc.lat {
				results = append(results, latResultJSON(s, plan.duration > 0))
			}
			if err := writePerfJSONFile(plan.outJSON, info, results); err != nil {
				return fmt.Errorf("--out_json_file %s: %w", plan.outJSON, err)
			}
			return nil
		}
	}
	lagBefore := readLoopLag(plan.stateDir, src.Lab, src.Node, dst.Node)
	oc, runErr := perfMeasure(out, plan, conns, rconns, save)
	// The daemons' states are read as the run fails, before anything else
	// waits on them: reading the loop counters waits opsTimeout on each
	// stopped daemon, by when it may have been continued and go unnamed.
	var procs []lab.ProcStatus
	held := false
	if runErr != nil {
		procs, held = labProcs(plan.stateDir, src.Lab)
	}
	// A stopped or dead daemon's loop "lag" is the stop or the kill, not
	// the machine's CPU: the warning would blame the wrong thing.
	if !anyStoppedOrDead(procs) {
		if w := loopLagWarning(lagBefore, readLoopLag(plan.stateDir, src.Lab, src.Node, dst.Node), plan.test.lat); w != "" {
			fmt.Fprintln(os.Stderr, w)
		}
	}
	if save != nil && !plan.runInf {
		if err := save(oc); err != nil {
			return err
		}
	}
	if held {
		return heldHint(retryHint(runErr, plan), plan.stateDir, src.Lab)
	}
	return daemonsHint(goneHint(retryHint(runErr, plan), plan.stateDir, src.Lab), procs, lab.DownCommand(plan.stateDir, src.Lab))
}

// labProcs is the lab's daemons as they are now (nil if its state cannot
// be read: the lab was taken down), and whether another controller holds
// the lab (procsForHint).
func labProcs(root, labName string) ([]lab.ProcStatus, bool) {
	st, err := lab.ReadStatus(root, labName)
	if err != nil {
		return nil, false
	}
	return procsForHint(st)
}

// procsForHint is the daemons a failed run's hint may judge. A lab that
// another controller holds is most likely being taken down: `emulab down`
// holds the lab's lock while it stops the daemons, and a run it cuts off
// reads the state before down has removed it. Its daemons are then dead by
// down's hand, and "killed or crashed: down and up again" would send the
// user who just ran down to run it again; held says so instead.
func procsForHint(st *lab.LabStatus) (procs []lab.ProcStatus, held bool) {
	if st.Locked {
		return nil, true
	}
	return st.Procs, false
}

// heldHint explains a run that failed while another emulab held its lab.
func heldHint(err error, root, labName string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w\n(another emulab held lab %s as the run failed, as `emulab down` does while it stops the daemons: the run ended as the lab went down; `%s` says whether it is still there)", err, labName, lab.StatusCommand(root, labName))
}

// anyStoppedOrDead reports whether a daemon of the lab is stopped or dead:
// its lag counters then say nothing about the machine.
func anyStoppedOrDead(procs []lab.ProcStatus) bool {
	for _, p := range procs {
		if !p.Alive || p.Stopped != "" {
			return true
		}
	}
	return false
}

// daemonsHint names the lab's stopped and dead daemons (procs, read when
// the run failed) after a run that failed: a stopped emunic or emuswitch
// carries nothing, so its peers see a paused link, and a dead one (kill
// -9, a crash) took its links down; either way the run ends in a retry
// error or a wait that ran out, which does not say why, and the retry
// error's hint points at a busy machine. A run that failed on the stopped
// daemon's own control socket (ctlpeer.NoAnswerError) named it already.
// down is the command that takes the lab down: a dead daemon is not
// restarted, the lab is brought up again.
func daemonsHint(err error, procs []lab.ProcStatus, down string) error {
	var na *ctlpeer.NoAnswerError
	if err == nil || errors.As(err, &na) {
		return err
	}
	var stopped, dead []string
	for _, p := range procs {
		switch {
		case !p.Alive:
			dead = append(dead, fmt.Sprintf("%s (pid %d) is dead", p.Name, p.Pid))
		case p.Stopped != "":
			s := fmt.Sprintf("%s (pid %d) is %s", p.Name, p.Pid, p.Stopped)
			if p.Resume != "" {
				s += ": " + p.Resume
			}
			stopped = append(stopped, s)
		}
	}
	if len(stopped) > 0 {
		err = fmt.Errorf("%w\n(%s; a stopped daemon moves no frame, so its links look paused)", err, strings.Join(stopped, "; "))
	}
	if len(dead) > 0 {
		err = fmt.Errorf("%w\n(%s: killed or crashed, and its links are down; `%s` and up again)", err, strings.Join(dead, "; "), down)
	}
	return err
}

// goneHint explains an emunic that closed its control connection in the
// middle of a run (killed, or its lab taken down): the bare error is EOF.
func goneHint(err error, root, labName string) error {
	if err == nil || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		return err
	}
	return fmt.Errorf("%w (an emunic closed its control connection during the run: killed, or the lab was taken down? `%s`)", err, lab.StatusCommand(root, labName))
}

// retryHint explains a transport retry error: on an emulated fabric it is
// seldom loss (a lossless lab loses nothing) and mostly daemons that fell
// behind the ACK timer on a busy machine.
func retryHint(err error, plan *perfPlan) error {
	if err == nil || !strings.Contains(err.Error(), "IBV_WC_RETRY_EXC_ERR") {
		return err
	}
	u := int(plan.timeout)
	if u == 0 {
		u = 14
	}
	t := time.Duration(4096) << u // 4.096 us x 2^u (IBA 9.7.6.1.3)
	return fmt.Errorf("%w\n(the requester's ACK timer, -u %d: %v, ran out on every retry without an acknowledgement. "+
		"If `emulab stats` shows no drop on the path, the daemons fell that far behind, as on a busy machine: "+
		"a larger -u (18: 1.07s), fewer messages in flight (-t) or time_dilation in the lab file give them room)", err, u, t.Round(time.Millisecond))
}

// stopOnSignal makes SIGINT or SIGTERM end `emulab perf` with a line that
// says so (perftest dies silently) until the returned function undoes it;
// the emunics end the run when their control connections close with the
// process.
func stopOnSignal() (undo func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			what := "no result for the size in progress"
			if h := perfInterruptHook.Load(); h != nil {
				what = (*h)()
			}
			removePerfTempOnInterrupt()
			fmt.Fprintf(os.Stderr, "\nemulab perf: interrupted (%v): %s\n", s, what)
			code := 130 // 128 + SIGINT, as a shell reports it
			if s == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// perfInterruptHook, when set, finishes the output of a run that an
// interrupt ends and says what was reported (--run_infinitely).
var perfInterruptHook atomic.Pointer[func() string]

// writePerfJSONFile writes the document to path. An existing regular
// file is replaced by a temporary file written beside it and renamed over
// it, with its permissions, so the file always holds a whole document:
// --run_infinitely rewrites it after every period and may be interrupted
// at any time. A new file, and anything that is not a regular file, is
// written in place, as perftest's fopen does: a symbolic link's target, a
// pipe, a terminal, /dev/null (which a rename, as root, would replace by a
// regular file).
func writePerfJSONFile(path string, info perfJSONInfo, results []any) error {
	fi, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil || !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return err
		}
		if err := writePerfJSON(f, info, results); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	f, err := createPerfTemp(path)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(fi.Mode().Perm())
	if err == nil {
		err = writePerfJSON(f, info, results)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renamePerfTemp(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	donePerfTemp()
	return err
}

// perfMeasure runs every size, prints each row as it completes and
// checks the destination memory after each. rconns are -b's reverse
// pairs (none without -b). save, if not nil, is called with the results
// after each period of --run_infinitely.
func perfMeasure(out io.Writer, plan *perfPlan, conns, rconns []*perfConn, save func(perfOutcome) error) (oc perfOutcome, err error) {
	op := plan.test.op
	dur := time.Duration(plan.duration) * time.Second * time.Duration(max(plan.dilation, 1)) // wall time
	if plan.test.lat {
		writeLatHeader(out, plan.duration > 0, plan.cpuUtil)
	} else {
		writeBWHeader(out, plan.gbits, plan.cpuUtil)
	}
	defer func() {
		if err != nil {
			fmt.Fprintln(out, perfLine)
		}
	}()
	if plan.runInf {
		return perfInfinitely(out, plan, conns, rconns, dur, save)
	}
	all := slices.Concat(conns, rconns)
	for _, size := range plan.sizes {
		prepareBuffers(all, op, size)
		meter := perfCPUMeter{on: plan.cpuUtil}
		if plan.test.lat {
			src, _ := perfBuffers(conns[0].pair, op)
			before := bytes.Clone(src[:size])
			meter.begin()
			samples, wall, err := runLatency(conns[0].pair, plan, size, dur)
			if err != nil {
				return oc, fmt.Errorf("%s %d bytes: %w", plan.test.name, size, err)
			}
			cpu, err := meter.end()
			if err != nil {
				return oc, err
			}
			durationsToLabTime(samples, plan.dilation)
			wall /= time.Duration(max(plan.dilation, 1))
			st := newLatStats(size, samples, wall, plan.duration > 0)
			st.CPU = cpu
			verr := verifyLatency(conns[0].pair, op, size, before)
			st.Verified = verr == nil
			writeLatSamples(out, samples, plan.unsorted, plan.histogram, plan.duration > 0, plan.cpuUtil)
			writeLatRow(out, st, plan.duration > 0)
			oc.lat = append(oc.lat, st)
			if verr != nil {
				return oc, fmt.Errorf("data check after %s of %d bytes failed: %w", plan.test.name, size, verr)
			}
			continue
		}
		meter.begin()
		row, err := bwBoth(plan, conns, rconns, size, dur)
		if err != nil {
			return oc, fmt.Errorf("%s %d bytes: %w", plan.test.name, size, err)
		}
		if row.CPU, err = meter.end(); err != nil {
			return oc, err
		}
		verr := verifyBoth(conns, rconns, op, size)
		row.Verified = verr == nil
		writeBWRow(out, row, plan.gbits)
		oc.bw = append(oc.bw, row)
		if verr != nil {
			return oc, fmt.Errorf("data check after %s of %d bytes failed: %w", plan.test.name, size, verr)
		}
	}
	fmt.Fprintln(out, perfLine)
	both := ""
	if len(rconns) > 0 {
		both = ", both ways"
	}
	fmt.Fprintf(out, " data check: the destination memory of every QP holds the source's bytes (%d size(s)%s)\n", len(plan.sizes), both)
	return oc, nil
}

// perfInfinitely is --run_infinitely: perftest's run_iter_bw_infinitely
// prints a row every -D seconds until it is killed. Here each period is a
// -D run of its own, back to back: the loops drain at the period's end
// (a few round trips between periods, against seconds of traffic), so
// each period's destination memory is checked, as every bandwidth run's
// is, before its row is printed. An interrupt (stopOnSignal) ends the
// run: the period in progress is not reported, the table is closed, and
// the exit status is 130 (perftest dies of the SIGINT, which a shell
// reports as 130). With --out_json the file is rewritten after every
// period: results the last period's, all_results every period's.
func perfInfinitely(out io.Writer, plan *perfPlan, conns, rconns []*perfConn, dur time.Duration, save func(perfOutcome) error) (perfOutcome, error) {
	op, size := plan.test.op, plan.sizes[0]
	all := slices.Concat(conns, rconns)
	pp := &perfPeriods{out: out, gbits: plan.gbits, save: save}
	hook := pp.interrupt
	perfInterruptHook.Store(&hook)
	defer perfInterruptHook.Store(nil)
	for period := 1; ; period++ {
		prepareBuffers(all, op, size)
		meter := perfCPUMeter{on: plan.cpuUtil}
		meter.begin()
		row, err := bwBoth(plan, conns, rconns, size, dur)
		if err != nil {
			return pp.outcome(), fmt.Errorf("%s %d bytes, period %d: %w", plan.test.name, size, period, err)
		}
		if row.CPU, err = meter.end(); err != nil {
			return pp.outcome(), err
		}
		verr := verifyBoth(conns, rconns, op, size)
		row.Verified = verr == nil
		if ok, err := pp.report(row); !ok || err != nil {
			return pp.outcome(), err
		}
		if verr != nil {
			return pp.outcome(), fmt.Errorf("data check after period %d of %s failed: %w", period, plan.test.name, verr)
		}
	}
}

// bwBoth runs one size: the pairs SRC to DST and, with -b, the reverse
// pairs at the same time. A bidirectional row is the sum of the two
// directions' (print_full_bw_report adds the remote side's report to its
// own), in the lab's time.
func bwBoth(plan *perfPlan, conns, rconns []*perfConn, size int, dur time.Duration) (bwRow, error) {
	run := func(cs []*perfConn) (bwRow, error) {
		row, err := bwAggregate(cs, plan.test.op, size, plan.iters, dur, plan.cqMod, plan.postList, plan.noPeak)
		row.toLabTime(plan.dilation)
		return row, err
	}
	if len(rconns) == 0 {
		return run(conns)
	}
	var fw, rv bwRow
	var ferr, rerr error
	var wg sync.WaitGroup
	wg.Go(func() { fw, ferr = run(conns) })
	wg.Go(func() { rv, rerr = run(rconns) })
	wg.Wait()
	if ferr != nil {
		return bwRow{}, ferr
	}
	if rerr != nil {
		return bwRow{}, fmt.Errorf("the reverse direction (DST to SRC): %w", rerr)
	}
	return fw.add(rv), nil
}

// verifyBoth checks the destination memory of every pair, both ways.
func verifyBoth(conns, rconns []*perfConn, op nic.WROpcode, size int) error {
	if err := verifyBuffers(conns, op, size); err != nil {
		return err
	}
	if err := verifyBuffers(rconns, op, size); err != nil {
		return fmt.Errorf("the reverse direction (DST to SRC): %w", err)
	}
	return nil
}

// runLatency is the latency loop: nicd's Pair.Latency, in chunks until
// the duration is up in duration mode.
func runLatency(p *nicd.Pair, plan *perfPlan, size int, dur time.Duration) ([]time.Duration, time.Duration, error) {
	start := time.Now()
	if dur == 0 {
		r, err := p.Latency(plan.test.op, size, plan.iters)
		return r.Samples, time.Since(start), err
	}
	var samples []time.Duration
	for time.Since(start) < dur {
		r, err := p.Latency(plan.test.op, size, 100)
		samples = append(samples, r.Samples...)
		if err != nil {
			return samples, time.Since(start), err
		}
	}
	return samples, time.Since(start), nil
}

// readLoopLag reads the loop counters of the daemons a run between src
// and dst of labName goes through: their emunics and the lab's switches
// (all of them: the path's are among them, and any daemon that ran late
// shared the machine's CPU with those). A daemon that does not answer is
// left out: the warning is a courtesy, not a test.
func readLoopLag(root, labName, src, dst string) []loopLagSample {
	li, err := lab.ReadInfo(root, labName)
	if err != nil {
		return nil
	}
	var out []loopLagSample
	for i := range li.Nodes {
		n := &li.Nodes[i]
		if n.Control == "" || (n.Kind != lab.KindSwitch && n.Name != src && n.Name != dst) {
			continue
		}
		c, err := lab.QueryCounters(n.Control, "", opsTimeout)
		if err != nil {
			continue
		}
		if s, ok := loopLagOf(n.Name, n.Kind, c); ok {
			out = append(out, s)
		}
	}
	return out
}

// nicStatus asks a host's emunic for its status; a daemon that does not
// answer, or whose link is not up, cannot run a test.
func nicStatus(h lab.NICHost, root string) (*nicd.Status, error) {
	c, err := nicd.Dial(h.Control)
	if err != nil {
		return nil, fmt.Errorf("host %s: its emunic does not answer on %s: %w (is the lab up? `%s`)", h.Node, h.Control, err, lab.StatusCommand(root, h.Lab))
	}
	defer c.Close()
	st, err := c.Status()
	if err != nil {
		return nil, fmt.Errorf("host %s: emunic status: %w", h.Node, err)
	}
	if err := nicLinkDown(h, st, root); err != nil {
		return nil, err
	}
	return st, nil
}

// nicLinkDown says why a NIC's link cannot carry a test, nil when it is
// up. emunic's status keeps "link" for the wire and reports a link op's
// down apart (admin_down), as status and link set read it
// (lab.DaemonPort): a NIC set down by `link set` says "link":"up", and
// perf then posted into it and waited 10 s for "no completion".
func nicLinkDown(h lab.NICHost, st *nicd.Status, root string) error {
	switch {
	case st.AdminDown:
		return fmt.Errorf("host %s: the NIC's link is down (admin): `%s` brings it up", h.Node,
			lab.LinkSetCommand(root, h.Lab+"/"+h.Node, "up"))
	case st.Link != "up":
		return fmt.Errorf("host %s: the NIC's link is %s", h.Node, st.Link)
	}
	return nil
}
