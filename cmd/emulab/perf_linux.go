package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/emufabric/emufabric/lab"
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

--out_json is perftest's switch: the results go to --out_json_file FILE, or
perftest_out.json in the working directory (a file name given alone implies
--out_json). The document is one object, the same shape whatever the flags:

  "test_info"    the banner's keys (test, Device, Number_of_qps, TX_depth,
                 CQ_Moderation, Mtu, Link_type, ...), BW_unit (MiB/sec or
                 Gb/sec) for the bandwidth tests, src, dst, time_dilation
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
	f.IntVarP(&fl.tos, "tos", "T", -1, "IP traffic class (DSCP<<2 | ECN); default the NIC's RoCE DSCP (26: priority 3)")
	f.IntVarP(&fl.timeout, "qp-timeout", "u", 0, "local ACK timeout: 4.096 us x 2^`U` (default the NIC's, 14: 67 ms)")
	f.BoolVar(&fl.gbits, "report_gbits", false, "report bandwidth in Gb/sec instead of MiB/sec")
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
	status, err := nicStatus(src, plan.stateDir)
	if err != nil {
		return err
	}
	if _, err := nicStatus(dst, plan.stateDir); err != nil {
		return err
	}
	bufSize := 0
	for _, s := range plan.sizes {
		bufSize = max(bufSize, s)
	}
	conns, err := openPerfConns(src.Control, dst.Control, plan.qps, perfPairConfig{
		BufSize: bufSize, Depth: plan.depth, MTU: plan.mtu, TC: plan.tc, SL: plan.sl, Timeout: plan.timeout})
	if err != nil {
		return fmt.Errorf("setting up %s -> %s: %w", src.Node, dst.Node, err)
	}
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
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
	b := perfBanner{Title: plan.test.title(), Device: "emu_" + status.Port + " (" + src.Node + ")", QPs: plan.qps,
		Depth: plan.depth, CQMod: plan.cqMod, MTU: mtu, SL: plan.sl, Remotes: plan.test.remote, Dilation: plan.dilation,
		Lat: plan.test.lat}
	if plan.test.read() {
		b.OutReads = perfOutReads
	}
	for _, c := range conns {
		p := c.pair
		b.Local = append(b.Local, perfSide{LID: p.AQP.LID, QPN: p.AQP.QPN, PSN: p.AQP.PSN, RKey: p.AMR.RKey, VAddr: p.AMR.Addr, GID: p.AQP.GID})
		b.Remote = append(b.Remote, perfSide{LID: p.BQP.LID, QPN: p.BQP.QPN, PSN: p.BQP.PSN, RKey: p.BMR.RKey, VAddr: p.BMR.Addr, GID: p.BQP.GID})
	}
	writeBanner(out, b)

	oc, runErr := perfMeasure(out, plan, conns)
	if plan.outJSON != "" && (len(oc.bw) > 0 || len(oc.lat) > 0) {
		info := perfJSONInfo{Test: plan.test.title(), Device: "emu_" + status.Port, NumberOfQPs: plan.qps,
			ConnectionType: "RC", TXDepth: plan.depth, Mtu: mtu, LinkType: b.linkType(),
			DataExMethod: "emunic control sockets", Src: src.Lab + "/" + src.Node, Dst: dst.Lab + "/" + dst.Node}
		if plan.dilation > 1 {
			info.TimeDilation = plan.dilation
		}
		var results []any
		for _, r := range oc.bw {
			results = append(results, bwResultJSON(r, plan.gbits))
		}
		for _, s := range oc.lat {
			results = append(results, latResultJSON(s, plan.duration > 0))
		}
		if !plan.test.lat {
			info.CQModeration = &plan.cqMod
			info.BWUnit = "MiB/sec"
			if plan.gbits {
				info.BWUnit = "Gb/sec"
			}
		}
		if err := writePerfJSONFile(plan.outJSON, info, results); err != nil {
			return fmt.Errorf("--out_json_file %s: %w", plan.outJSON, err)
		}
	}
	return goneHint(retryHint(runErr, plan), plan.stateDir, src.Lab)
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
			fmt.Fprintf(os.Stderr, "\nemulab perf: interrupted (%v): no result for the size in progress\n", s)
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

func writePerfJSONFile(path string, info perfJSONInfo, results []any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writePerfJSON(f, info, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// perfMeasure runs every size, prints each row as it completes and
// checks the destination memory after each.
func perfMeasure(out io.Writer, plan *perfPlan, conns []*perfConn) (oc perfOutcome, err error) {
	op := plan.test.op
	dur := time.Duration(plan.duration) * time.Second * time.Duration(max(plan.dilation, 1)) // wall time
	if plan.test.lat {
		writeLatHeader(out, plan.duration > 0)
	} else {
		writeBWHeader(out, plan.gbits)
	}
	defer func() {
		if err != nil {
			fmt.Fprintln(out, perfLine)
		}
	}()
	for _, size := range plan.sizes {
		prepareBuffers(conns, op, size)
		if plan.test.lat {
			src, _ := perfBuffers(conns[0].pair, op)
			before := bytes.Clone(src[:size])
			samples, wall, err := runLatency(conns[0].pair, plan, size, dur)
			if err != nil {
				return oc, fmt.Errorf("%s %d bytes: %w", plan.test.name, size, err)
			}
			durationsToLabTime(samples, plan.dilation)
			wall /= time.Duration(max(plan.dilation, 1))
			st := newLatStats(size, samples, wall, plan.duration > 0)
			verr := verifyLatency(conns[0].pair, op, size, before)
			st.Verified = verr == nil
			writeLatRow(out, st, plan.duration > 0)
			oc.lat = append(oc.lat, st)
			if verr != nil {
				return oc, fmt.Errorf("data check after %s of %d bytes failed: %w", plan.test.name, size, verr)
			}
			continue
		}
		row, err := bwAggregate(conns, op, size, plan.iters, dur, plan.cqMod, plan.noPeak)
		if err != nil {
			return oc, fmt.Errorf("%s %d bytes: %w", plan.test.name, size, err)
		}
		row.toLabTime(plan.dilation)
		verr := verifyBuffers(conns, op, size)
		row.Verified = verr == nil
		writeBWRow(out, row, plan.gbits)
		oc.bw = append(oc.bw, row)
		if verr != nil {
			return oc, fmt.Errorf("data check after %s of %d bytes failed: %w", plan.test.name, size, verr)
		}
	}
	fmt.Fprintln(out, perfLine)
	fmt.Fprintf(out, " data check: the destination memory of every QP holds the source's bytes (%d size(s))\n", len(plan.sizes))
	return oc, nil
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
	if st.Link != "up" {
		return nil, fmt.Errorf("host %s: the NIC's link is %s", h.Node, st.Link)
	}
	return st, nil
}
