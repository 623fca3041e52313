package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/emufabric/emufabric/nic"
)

// perftest's tests as `emulab perf` names them: the binary name without
// its ib_ prefix. The title is the banner's, built as perftest builds it
// from the verb and the kind of test.
type perfTest struct {
	name   string
	op     nic.WROpcode
	lat    bool
	verb   string // perftest's verb name in the banner
	remote bool   // the requester names the responder's memory (RKey, VAddr)
}

var perfTests = []perfTest{
	{name: "write_bw", op: nic.IBV_WR_RDMA_WRITE, verb: "RDMA_Write", remote: true},
	{name: "read_bw", op: nic.IBV_WR_RDMA_READ, verb: "RDMA_Read", remote: true},
	{name: "send_bw", op: nic.IBV_WR_SEND, verb: "Send"},
	{name: "write_lat", op: nic.IBV_WR_RDMA_WRITE, lat: true, verb: "RDMA_Write", remote: true},
	{name: "read_lat", op: nic.IBV_WR_RDMA_READ, lat: true, verb: "RDMA_Read", remote: true},
	{name: "send_lat", op: nic.IBV_WR_SEND, lat: true, verb: "Send"},
}

func perfTestNames() string {
	var s []string
	for _, t := range perfTests {
		s = append(s, t.name)
	}
	return strings.Join(s, ", ")
}

func lookupPerfTest(name string) (perfTest, error) {
	for _, t := range perfTests {
		if t.name == name || "ib_"+t.name == name {
			return t, nil
		}
	}
	return perfTest{}, fmt.Errorf("unknown test %q (want one of %s)", name, perfTestNames())
}

// read reports a read test: its requester keeps outstanding reads.
func (t perfTest) read() bool { return t.op == nic.IBV_WR_RDMA_READ }

// title is the banner's title: "RDMA_Write BW Test".
func (t perfTest) title() string {
	if t.lat {
		return t.verb + " Latency Test"
	}
	return t.verb + " BW Test"
}

// title is the run's banner title, as perftest's ctx_print_test_info
// builds it: the verb, "Bidirectional" with -b, "Post List" with -l > 1,
// then "BW" or "Latency" and "Test".
func (p *perfPlan) title() string {
	if p.test.lat {
		return p.test.title()
	}
	t := p.test.verb
	if p.bidir {
		t += " Bidirectional"
	}
	if p.postList > 1 {
		t += " Post List"
	}
	return t + " BW Test"
}

// perftest's defaults and limits (perftest_parameters.h).
const (
	perfDefSizeBW  = 65536
	perfDefSizeLat = 2
	perfDefIters   = 1000
	perfDefItersWB = 5000 // write_bw's (DEF_ITERS_WB)
	perfOutReads   = 16   // the QPs' outstanding reads (nicd's max_rd_atomic default)
	perfMinIters   = 5
	perfDefTxBW    = 128
	perfDefTxLat   = 1
	perfDefCQMod   = 100
	perfMaxCQMod   = 1024
	perfMaxQPs     = 16
	perfMaxSize    = 1 << 23 // -a sweeps 2 .. 2^23 (MAX_SIZE 8388608)
	perfMaxDepth   = 4096
	perfMaxSeconds = 3600
	// perfDefDuration is perftest's DEF_DURATION: --run_infinitely
	// without -D reports every 5 seconds.
	perfDefDuration = 5
)

// perfDefJSONFile is perftest's DEFAULT_JSON_FILE_NAME: --out_json
// without --out_json_file writes it in the working directory.
const perfDefJSONFile = "perftest_out.json"

// perfJSONPath is the file --out_json and --out_json_file name, "" for
// none. perftest's --out_json is a switch and --out_json_file the name;
// a name given alone implies the switch here (perftest would ignore it
// and write nothing, which no one giving a name wants).
func perfJSONPath(on bool, file string) string {
	switch {
	case file != "":
		return file
	case on:
		return perfDefJSONFile
	}
	return ""
}

// perfArgs is TEST SRC DST. A fourth argument after --out_json is a file
// name given the way --out_json took one before it was perftest's switch:
// say where the name goes instead of "accepts 3 arg(s)".
func perfArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 4 && cmd.Flags().Changed("out_json") {
		return fmt.Errorf("accepts 3 arg(s), received 4: --out_json is a switch (perftest's) and takes no file; "+
			"name the file with --out_json_file FILE (default %s)", perfDefJSONFile)
	}
	return cobra.ExactArgs(3)(cmd, args)
}

// checkJSONDir refuses an --out_json_file whose directory is not there,
// or that is a directory itself, before the run, not after it: a sweep's
// results are minutes of work.
func checkJSONDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--out_json_file %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--out_json_file %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--out_json_file %s: is a directory: name a file in it", path)
	}
	return nil
}

// perfFlags are the perftest options `emulab perf` takes, with perftest's
// letters and meanings. The *Set fields say whether the user gave the
// flag (cobra's Changed), so defaults can depend on the test.
type perfFlags struct {
	stateDir string

	size     int
	sizeSet  bool
	all      bool
	iters    int
	itersSet bool
	duration int // -D seconds; 0: iteration mode
	durSet   bool
	qps      int
	cqMod    int
	cqModSet bool
	txDepth  int
	txSet    bool
	mtu      int // 0: the ports' active MTU
	noPeak   bool
	gbits    bool
	sl       int
	tos      int // -1: the NIC's RoCE traffic class
	timeout  int // -u: 0 is the NIC's default (14)
	// --out_json is perftest's switch, --out_json_file the file's name;
	// outJSON is the file written, "" for none (perfJSONPath).
	outJSONOn   bool
	outJSONFile string
	outJSON     string

	bidir       bool // -b
	postList    int  // -l; 1: one work request per post
	postListSet bool
	cycles      bool // -C (refused)
	histogram   bool // -H
	unsorted    bool // -U
	runInf      bool // --run_infinitely
	cpuUtil     bool // --cpu_util
}

// perfPlan is what a run does, derived from the flags.
type perfPlan struct {
	test     perfTest
	sizes    []int
	iters    int
	duration int
	qps      int
	cqMod    int
	depth    int
	mtu      int
	noPeak   bool
	gbits    bool
	sl       uint8
	tc       uint8 // 0: the NIC's own
	timeout  uint8 // 0: the NIC's own (14)
	outJSON  string
	// dilation is the lab's time_dilation (from the source's emunic).
	dilation int
	// stateDir is --state-dir, for the commands hints suggest.
	stateDir string

	// bidir (-b): traffic both ways at once, the row the sum of both.
	bidir bool
	// postList (-l): the bandwidth loop posts this many work requests at
	// a time, in one call to the NIC (one doorbell), once that many send
	// queue slots are free; 1 refills whatever is free.
	postList int
	// histogram (-H) and unsorted (-U) print a latency run's samples.
	histogram, unsorted bool
	// runInf (--run_infinitely): report every duration seconds until
	// interrupted.
	runInf bool
	// cpuUtil (--cpu_util, duration runs): the machine's CPU utilisation
	// over the measurement, from /proc/stat, as a last column.
	cpuUtil bool
	// notes are what perftest would warn about on the way (a flag that
	// has no effect with the others given), for stderr.
	notes []string
}

// plan checks the flags against the test and perftest's limits. Every
// error names the flag and the value it refuses.
func (f *perfFlags) plan(t perfTest) (*perfPlan, error) {
	p := &perfPlan{test: t, iters: perfDefIters, qps: f.qps, noPeak: f.noPeak, gbits: f.gbits, outJSON: f.outJSON, stateDir: f.stateDir, postList: 1}
	if err := f.checkReportFlags(t); err != nil {
		return nil, err
	}
	if t.op == nic.IBV_WR_RDMA_WRITE && !t.lat {
		p.iters = perfDefItersWB
	}
	size := perfDefSizeBW
	if t.lat {
		size = perfDefSizeLat
	}
	if f.sizeSet {
		if f.all {
			return nil, fmt.Errorf("-s/--size %d and -a/--all: choose one (-a sweeps 2 .. %d bytes)", f.size, perfMaxSize)
		}
		if f.size < 1 || f.size > perfMaxSize {
			return nil, fmt.Errorf("-s/--size %d: want 1 .. %d bytes", f.size, perfMaxSize)
		}
		size = f.size
	}
	if f.all {
		for s := 2; s <= perfMaxSize; s <<= 1 {
			p.sizes = append(p.sizes, s)
		}
	} else {
		p.sizes = []int{size}
	}
	if f.itersSet {
		if f.duration > 0 {
			return nil, fmt.Errorf("-n/--iters %d and -D/--duration %d: choose one", f.iters, f.duration)
		}
		if f.iters < perfMinIters || f.iters > 100_000_000 {
			return nil, fmt.Errorf("-n/--iters %d: want %d .. 100000000", f.iters, perfMinIters)
		}
		p.iters = f.iters
	}
	if f.duration < 0 || f.duration > perfMaxSeconds || f.durSet && f.duration == 0 {
		return nil, fmt.Errorf("-D/--duration %d: want 1 .. %d seconds", f.duration, perfMaxSeconds)
	}
	if f.duration > 0 {
		if f.all {
			return nil, fmt.Errorf("-D/--duration %d and -a/--all: perftest runs one size for a duration", f.duration)
		}
		p.duration = f.duration
	}
	if f.runInf {
		// perftest's force_dependecies: a duration run, without a
		// peak, every -D seconds (5 unless given).
		switch {
		case f.all:
			return nil, errors.New("--run_infinitely and -a/--all: an endless run has one size")
		case f.itersSet:
			return nil, fmt.Errorf("--run_infinitely and -n/--iters %d: an endless run counts no messages; -D sets how often it reports", f.iters)
		}
		if p.duration == 0 {
			p.duration = perfDefDuration
		}
		p.runInf, p.noPeak = true, true
	}
	if f.qps < 1 || f.qps > perfMaxQPs {
		return nil, fmt.Errorf("-q/--qp %d: want 1 .. %d queue pairs", f.qps, perfMaxQPs)
	}
	if t.lat && f.qps > 1 {
		return nil, fmt.Errorf("-q/--qp %d: the latency tests run one queue pair (as perftest)", f.qps)
	}
	p.depth = perfDefTxBW
	if t.lat {
		p.depth = perfDefTxLat
	}
	if f.txSet {
		if t.lat && f.txDepth != 1 {
			return nil, fmt.Errorf("-t/--tx-depth %d: the latency tests keep one message in flight", f.txDepth)
		}
		if f.txDepth < 1 || f.txDepth > perfMaxDepth {
			return nil, fmt.Errorf("-t/--tx-depth %d: want 1 .. %d", f.txDepth, perfMaxDepth)
		}
		p.depth = f.txDepth
	}
	// CQ moderation: one signaled work request in cq_mod. Clamped to
	// the TX depth, as perftest does (force_dependecies): a moderation
	// above the depth would never complete, no signaled request fitting
	// in flight.
	p.cqMod = min(perfDefCQMod, p.depth)
	if f.cqModSet {
		if f.cqMod < 1 || f.cqMod > perfMaxCQMod {
			return nil, fmt.Errorf("-Q/--cq-mod %d: want 1 .. %d", f.cqMod, perfMaxCQMod)
		}
		if t.lat && f.cqMod != 1 {
			return nil, fmt.Errorf("-Q/--cq-mod %d: the latency tests signal every message", f.cqMod)
		}
		p.cqMod = min(f.cqMod, p.depth)
	}
	if t.lat {
		p.cqMod = 1
	}
	if err := f.planPostList(p); err != nil {
		return nil, err
	}
	p.bidir, p.histogram, p.unsorted = f.bidir, f.histogram, f.unsorted
	if f.cpuUtil {
		if p.duration > 0 {
			p.cpuUtil = true
		} else {
			// perftest says so and runs on without the column.
			p.notes = append(p.notes, "--cpu_util: CPU utilisation works only with -D/--duration (or --run_infinitely); the run reports none")
		}
	}
	if f.mtu != 0 {
		switch f.mtu {
		case 256, 512, 1024, 2048, 4096:
		default:
			return nil, fmt.Errorf("-m/--mtu %d: want 256, 512, 1024, 2048 or 4096", f.mtu)
		}
		p.mtu = f.mtu
	}
	if f.sl < 0 || f.sl > 15 {
		return nil, fmt.Errorf("-S/--sl %d: want 0 .. 15", f.sl)
	}
	p.sl = uint8(f.sl)
	switch {
	case f.tos == -1:
	case f.tos < 0 || f.tos > 255:
		return nil, fmt.Errorf("-T/--tos %d: want 0 .. 255 (DSCP<<2 | ECN)", f.tos)
	case f.tos>>2 == 0:
		return nil, fmt.Errorf("-T/--tos %d: DSCP 0 is not selectable (traffic class 0 means the NIC's RoCE DSCP)", f.tos)
	default:
		p.tc = uint8(f.tos)
	}
	// The local ACK timeout is 4.096 us x 2^u (IBA 9.7.6.1.3); 0 would
	// mean "infinite" to a real NIC, here it is the NIC's default.
	if f.timeout < 0 || f.timeout > 31 {
		return nil, fmt.Errorf("-u/--qp-timeout %d: want 1 .. 31 (4.096 us x 2^u)", f.timeout)
	}
	p.timeout = uint8(f.timeout)
	return p, nil
}

// checkFabric refuses what the plan asks of a fabric that has none of it.
// -T is the traffic class of RoCEv2's IP header; an InfiniBand lab's
// packets have an LRH and no IP header or GRH to carry one (its service
// level is -S), so the flag would be dropped without a word.
func (p *perfPlan) checkFabric(ib bool) error {
	if ib && p.tc != 0 {
		return fmt.Errorf("-T/--tos %d: an InfiniBand lab's packets have no IP header or GRH to carry a traffic class; -S/--sl sets the service level (the VL)", p.tc)
	}
	return nil
}

// checkReportFlags refuses the report flags a test has no use for, as
// perftest's parser does, and -C, which needs a clock the emulation has
// not got.
func (f *perfFlags) checkReportFlags(t perfTest) error {
	if f.cycles {
		// perftest's -C prints the TSC deltas it timed with. The emunics
		// time with the wall clock (scaled by time_dilation): there are
		// no cycles, and converting at a made-up frequency would print
		// numbers that look measured and are not.
		return errors.New("-C/--report-cycles: the emulated RNICs time messages with the clock, not a CPU cycle counter, " +
			"so there are no cycles to report; the latencies are printed in usec (cycles = usec x your CPU's MHz)")
	}
	if t.lat {
		switch {
		case f.bidir:
			return errors.New("-b/--bidirectional: the bandwidth tests only (perftest's -b is a BW option)")
		case f.postListSet:
			return fmt.Errorf("-l/--post_list %d: post list is supported in the bandwidth tests only (as perftest)", f.postList)
		case f.runInf:
			return errors.New("--run_infinitely: the bandwidth tests only (as perftest)")
		}
		return nil
	}
	switch {
	case f.histogram:
		return errors.New("-H/--report-histogram: the latency tests only (as perftest)")
	case f.unsorted:
		return errors.New("-U/--report-unsorted: the latency tests only (as perftest)")
	}
	return nil
}

// planPostList is perftest's post list dependencies (force_dependecies):
// the iterations a multiple of the list, the CQ moderation the list's
// size unless given, and then a divisor of it. A list longer than the TX
// depth would never find room to be posted.
func (f *perfFlags) planPostList(p *perfPlan) error {
	if !f.postListSet {
		return nil
	}
	n := f.postList
	if n < 1 || n > p.depth {
		return fmt.Errorf("-l/--post_list %d: want 1 .. the TX depth (%d)", n, p.depth)
	}
	if n == 1 {
		return nil
	}
	if p.duration == 0 && p.iters%n != 0 {
		return fmt.Errorf("-l/--post_list %d: the number of iterations (%d) must be a multiple of the post list size", n, p.iters)
	}
	if !f.cqModSet {
		p.cqMod = n
	} else if n%p.cqMod != 0 {
		return fmt.Errorf("-l/--post_list %d: the post list size must be a multiple of the CQ moderation (-Q %d)", n, p.cqMod)
	}
	p.postList = n
	return nil
}

// perftest flags that choose what the lab decides (the device, its port
// and GID, the TCP port of perftest's exchange, rdma_cm, the clock
// check): taken so that a pasted perftest command line runs, and said to
// be ignored. -c takes RC only, the one transport perf runs.
var perfIgnoredFlags = []struct {
	name, short, why string
	boolean          bool
}{
	{"ib-dev", "d", "the device is the SRC host's emulated RNIC", false},
	{"ib-port", "i", "an emulated RNIC has one port", false},
	{"gid-index", "x", "on RoCE the GID is the host's IPv4-mapped address (index 0); an InfiniBand lab routes by LID, without a GRH", false},
	{"port", "p", "perf exchanges the QPs' addresses over the emunics' control sockets, not TCP", false},
	{"rdma_cm", "R", "the QPs are connected over the emunics' control sockets", true},
	{"CPU-freq", "F", "latencies are timed with the clock, not the CPU's cycle counter", true},
	{"inline_size", "I", "the emulated RNIC posts no inline data", false},
	{"events", "e", "the loops run in the emunics, polling their CQs", true},
	{"margin", "f", "-D measures the whole duration, without warm-up margins", false},
	{"rx-depth", "r", "send_bw keeps the receive queue stocked at twice the TX depth (at least 128)", false},
}

func addPerfIgnored(f *pflag.FlagSet) {
	for _, g := range perfIgnoredFlags {
		if g.boolean {
			f.BoolP(g.name, g.short, false, "ignored (perftest's flag): "+g.why)
		} else {
			f.StringP(g.name, g.short, "", "ignored (perftest's flag): "+g.why)
		}
	}
	f.StringP("connection", "c", "RC", "connection type: RC (the one perf runs; perftest's flag)")
}

// perfIgnored notes on w each perftest flag given that perf ignores, and
// refuses a connection type other than RC.
func perfIgnored(f *pflag.FlagSet, w io.Writer) error {
	if c, _ := f.GetString("connection"); !strings.EqualFold(c, "RC") {
		return fmt.Errorf("-c/--connection %s: perf runs RC queue pairs only", c)
	}
	for _, g := range perfIgnoredFlags {
		if fl := f.Lookup(g.name); fl != nil && fl.Changed {
			fmt.Fprintf(w, "emulab perf: -%s/--%s %s ignored: %s\n", g.short, g.name, fl.Value.String(), g.why)
		}
	}
	return nil
}

var perfBadIntRE = regexp.MustCompile(`^invalid argument "(.*)" for "-(\w), --([\w-]+)" flag: strconv\.Parse(Int|Uint): .*`)

// perfFlagError says what a number flag wants instead of the parser's
// message ("strconv.ParseInt: parsing "2G": invalid syntax").
func perfFlagError(_ *cobra.Command, err error) error {
	m := perfBadIntRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	msg := fmt.Sprintf("-%s/--%s %s: a whole number", m[2], m[3], m[1])
	if m[3] == "size" {
		msg += fmt.Sprintf(" of bytes, 1 .. %d (perftest takes no units such as K or M)", perfMaxSize)
	}
	return fmt.Errorf("%s", msg)
}
