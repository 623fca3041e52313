package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// The perftest flags -b, -l, -C, -H, -U, --run_infinitely and
// --cpu_util: what each plans, refuses and prints.

func TestPerfPlanReportFlags(t *testing.T) {
	for _, c := range []struct {
		test string
		set  func(f *perfFlags)
		want string // "" : accepted
	}{
		{"write_lat", func(f *perfFlags) { f.bidir = true }, "-b/--bidirectional: the bandwidth tests only"},
		{"write_bw", func(f *perfFlags) { f.bidir = true }, ""},
		{"write_lat", func(f *perfFlags) { f.cycles = true }, "-C/--report-cycles: the emulated RNICs time messages with the clock"},
		{"write_bw", func(f *perfFlags) { f.cycles = true }, "-C/--report-cycles"},
		{"write_bw", func(f *perfFlags) { f.histogram = true }, "-H/--report-histogram: the latency tests only"},
		{"send_bw", func(f *perfFlags) { f.unsorted = true }, "-U/--report-unsorted: the latency tests only"},
		{"read_lat", func(f *perfFlags) { f.histogram, f.unsorted = true, true }, ""},
		{"send_lat", func(f *perfFlags) { f.runInf = true }, "--run_infinitely: the bandwidth tests only"},
		{"write_bw", func(f *perfFlags) { f.runInf, f.all = true, true }, "--run_infinitely and -a/--all"},
		{"write_bw", func(f *perfFlags) { f.runInf, f.iters, f.itersSet = true, 100, true }, "--run_infinitely and -n/--iters 100"},
		{"write_lat", func(f *perfFlags) { f.postList, f.postListSet = 4, true }, "-l/--post_list 4: post list is supported in the bandwidth tests only"},
		{"write_bw", func(f *perfFlags) { f.postList, f.postListSet = 0, true }, "-l/--post_list 0: want 1 .. the TX depth (128)"},
		{"write_bw", func(f *perfFlags) { f.postList, f.postListSet = 200, true }, "-l/--post_list 200: want 1 .. the TX depth (128)"},
		// write_bw's 5000 iterations are not a multiple of 3.
		{"write_bw", func(f *perfFlags) { f.postList, f.postListSet = 3, true }, "the number of iterations (5000) must be a multiple of the post list size"},
		{"write_bw", func(f *perfFlags) { f.postList, f.postListSet, f.duration = 3, true, 2 }, ""},
		{"write_bw", func(f *perfFlags) { f.postList, f.postListSet, f.cqMod, f.cqModSet = 8, true, 3, true }, "multiple of the CQ moderation (-Q 3)"},
	} {
		f := defaultFlags()
		c.set(&f)
		_, err := f.plan(mustTest(t, c.test))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.test, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.test, err, c.want)
		}
	}

	// --run_infinitely: a duration run without a peak, every 5 s unless
	// -D says otherwise (perftest's DEF_DURATION).
	f := defaultFlags()
	f.runInf = true
	p, err := f.plan(mustTest(t, "write_bw"))
	if err != nil || !p.runInf || p.duration != 5 || !p.noPeak {
		t.Errorf("--run_infinitely: %+v %v", p, err)
	}
	f.duration, f.durSet = 2, true
	if p, err := f.plan(mustTest(t, "write_bw")); err != nil || p.duration != 2 {
		t.Errorf("--run_infinitely -D 2: %+v %v", p, err)
	}

	// -l 8: the CQ moderation becomes the list's size unless given; a
	// given one that divides it stays.
	f = defaultFlags()
	f.postList, f.postListSet, f.iters, f.itersSet = 8, true, 800, true
	if p, err := f.plan(mustTest(t, "send_bw")); err != nil || p.postList != 8 || p.cqMod != 8 {
		t.Errorf("-l 8: %+v %v", p, err)
	}
	f.cqMod, f.cqModSet = 2, true
	if p, err := f.plan(mustTest(t, "send_bw")); err != nil || p.postList != 8 || p.cqMod != 2 {
		t.Errorf("-l 8 -Q 2: %+v %v", p, err)
	}

	// --cpu_util works in duration runs; otherwise perftest says so and
	// runs without it.
	f = defaultFlags()
	f.cpuUtil = true
	if p, err := f.plan(mustTest(t, "write_bw")); err != nil || p.cpuUtil || len(p.notes) != 1 || !strings.Contains(p.notes[0], "works only with -D/--duration") {
		t.Errorf("--cpu_util without -D: %+v %v", p, err)
	}
	f.duration, f.durSet = 1, true
	if p, err := f.plan(mustTest(t, "write_lat")); err != nil || !p.cpuUtil || len(p.notes) != 0 {
		t.Errorf("--cpu_util -D 1: %+v %v", p, err)
	}
}

// TestPerfTitle: ctx_print_test_info's title.
func TestPerfTitle(t *testing.T) {
	for _, c := range []struct {
		test     string
		bidir    bool
		postList int
		want     string
	}{
		{"write_bw", false, 1, "RDMA_Write BW Test"},
		{"write_bw", true, 1, "RDMA_Write Bidirectional BW Test"},
		{"read_bw", false, 4, "RDMA_Read Post List BW Test"},
		{"send_bw", true, 4, "Send Bidirectional Post List BW Test"},
		{"send_lat", false, 1, "Send Latency Test"},
	} {
		p := &perfPlan{test: mustTest(t, c.test), bidir: c.bidir, postList: c.postList}
		if got := p.title(); got != c.want {
			t.Errorf("%s -b %v -l %d: %q, want %q", c.test, c.bidir, c.postList, got, c.want)
		}
	}
}

// TestPerfCPUColumn: --cpu_util's column is perftest's RESULT_EXT_CPU_UTIL
// after the header and REPORT_EXT_CPU_UTIL after the row.
func TestPerfCPUColumn(t *testing.T) {
	var b bytes.Buffer
	cpu := 37.5
	writeBWHeader(&b, false, true)
	writeBWRow(&b, bwRow{Size: 2, Iters: 5, Average: 1 << 20, MsgRate: 524288, CPU: &cpu}, false)
	want := perfLine + "\n" +
		" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]    CPU_Util[%]\n" +
		" 2          5                0.00               1.00   \t\t   0.524288\t    37.50\n"
	if b.String() != want {
		t.Errorf("bandwidth table with --cpu_util:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	st := newLatStats(2, []time.Duration{time.Microsecond, 3 * time.Microsecond}, time.Second, true)
	st.CPU = &cpu
	writeLatHeader(&b, true, true)
	writeLatRow(&b, st, true)
	want = perfLine + "\n" + perfHeadLatDur + "    CPU_Util[%]\n" +
		" 2             2            2.00           2.00   \t    37.50\n"
	if b.String() != want {
		t.Errorf("latency table with --cpu_util:\n%q\nwant\n%q", b.String(), want)
	}
	// JSON: perftest's CPU_util key, only when measured.
	j, _ := json.Marshal(bwResultJSON(bwRow{Size: 2, CPU: &cpu}, false))
	if !strings.Contains(string(j), `"CPU_util":37.5`) {
		t.Errorf("bandwidth JSON: %s", j)
	}
	j, _ = json.Marshal(latResultJSON(latStats{Size: 2}, false))
	if strings.Contains(string(j), "CPU_util") {
		t.Errorf("latency JSON without --cpu_util: %s", j)
	}
}

// TestProcStat: perftest's CPU utilisation is the user time over user
// plus idle, from the first line of /proc/stat.
func TestProcStat(t *testing.T) {
	a, err := parseProcStat("cpu  100 5 50 1000 7 0 3 0 0 0\ncpu0 50 2 25 500 3 0 1 0 0 0\n")
	if err != nil || a != (perfCPUStat{user: 100, idle: 1000}) {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := parseProcStat("cpu  400 9 90 1900 7 0 3 0 0 0\n")
	// 300 user, 900 idle: 25 % (the 4 nice and 40 system count for nothing).
	if u := cpuUtil(a, b); math.Abs(u-25) > 1e-9 {
		t.Errorf("utilisation %v, want 25", u)
	}
	if u := cpuUtil(a, a); u != 0 {
		t.Errorf("no time passed: %v", u)
	}
	for _, bad := range []string{"", "intr 1 2 3 4 5", "cpu 1 2 3"} {
		if _, err := parseProcStat(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := readCPUStat(); err != nil {
		t.Errorf("this machine's /proc/stat: %v", err)
	}
	if v, err := (&perfCPUMeter{}).end(); v != nil || err != nil {
		t.Errorf("a meter that is off measured %v %v", v, err)
	}
}

// TestCG: the samples of -H and -U print as C's %g; the expectations are
// glibc's printf("%g").
func TestCG(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {2.5, "2.5"}, {10, "10"}, {12.345678, "12.3457"}, {0.000123456, "0.000123456"},
		{0.0000123456, "1.23456e-05"}, {999999.5, "1e+06"}, {1234567, "1.23457e+06"}, {100000, "100000"},
		{3.00000001, "3"}, {5.4321e-5, "5.4321e-05"}, {1e-4, "0.0001"}, {123456.5, "123456"}, {7.77777777, "7.77778"},
	} {
		if got := cG(c.v); got != c.want {
			t.Errorf("cG(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestLatSamples: -U prints the samples as measured, -H sorted without
// the two the statistics leave out, each after a "#, usec" line; then the
// header again, as perftest's print_report_lat.
func TestLatSamples(t *testing.T) {
	us := func(v ...float64) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x*1000))
		}
		return d
	}
	s := us(5.5, 2, 9, 3.25, 40)
	var b bytes.Buffer
	writeLatSamples(&b, s, true, false, false, false)
	want := "#, usec\n1, 5.5\n2, 2\n3, 9\n4, 3.25\n5, 40\n" + perfLine + "\n" + perfHeadLat + "\n"
	if b.String() != want {
		t.Errorf("-U:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeLatSamples(&b, s, false, true, false, false)
	want = "#, usec\n1, 2\n2, 3.25\n3, 5.5\n" + perfLine + "\n" + perfHeadLat + "\n"
	if b.String() != want {
		t.Errorf("-H:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeLatSamples(&b, s, true, true, true, true)
	if out := b.String(); strings.Count(out, "#, usec\n") != 2 || !strings.HasSuffix(out, perfHeadLatDur+perfHeadCPU+"\n") {
		t.Errorf("-U -H -D --cpu_util:\n%s", out)
	}
	b.Reset()
	writeLatSamples(&b, s, false, false, false, false)
	if b.Len() != 0 {
		t.Errorf("neither flag printed %q", b.String())
	}
}

// TestBWRowAdd: a bidirectional row is the sum of both directions', the
// iterations one direction's (print_full_bw_report).
func TestBWRowAdd(t *testing.T) {
	r := bwRow{Size: 64, Iters: 1000, Peak: 3, Average: 2, MsgRate: 10}.add(bwRow{Size: 64, Iters: 990, Peak: 4, Average: 1, MsgRate: 5})
	if r != (bwRow{Size: 64, Iters: 1000, Peak: 7, Average: 3, MsgRate: 15}) {
		t.Errorf("%+v", r)
	}
}

// TestBannerPostList: -l above 1 adds perftest's Post List line after the
// TX depth.
func TestBannerPostList(t *testing.T) {
	side := perfSide{QPN: 0x11, PSN: 0x12, GID: "::ffff:10.0.0.1"}
	var b strings.Builder
	writeBanner(&b, perfBanner{Title: "Send Post List BW Test", QPs: 1, Depth: 128, CQMod: 8, MTU: 4096, PostList: 8,
		Local: []perfSide{side}, Remote: []perfSide{side}})
	if !strings.Contains(b.String(), " TX depth        : 128\n Post List       : 8\n CQ Moderation   : 8\n") {
		t.Errorf("banner:\n%s", b.String())
	}
	b.Reset()
	writeBanner(&b, perfBanner{Title: "Send BW Test", QPs: 1, Depth: 128, CQMod: 100, MTU: 4096, PostList: 1,
		Local: []perfSide{side}, Remote: []perfSide{side}})
	if strings.Contains(b.String(), "Post List") {
		t.Errorf("banner without -l:\n%s", b.String())
	}
}

// TestPerfNewFlagsParse: the flags are perftest's letters and names, and
// a refusal comes before any lab is looked for.
func TestPerfNewFlagsParse(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"write_lat", "h1", "h2", "-b"}, "-b/--bidirectional: the bandwidth tests only"},
		{[]string{"write_lat", "h1", "h2", "-C"}, "-C/--report-cycles"},
		{[]string{"write_lat", "h1", "h2", "--report-cycles"}, "-C/--report-cycles"},
		{[]string{"write_bw", "h1", "h2", "-H"}, "-H/--report-histogram"},
		{[]string{"write_bw", "h1", "h2", "-U"}, "-U/--report-unsorted"},
		{[]string{"write_lat", "h1", "h2", "--run_infinitely"}, "--run_infinitely: the bandwidth tests only"},
		{[]string{"write_bw", "h1", "h2", "-l", "3"}, "must be a multiple of the post list size"},
		{[]string{"write_bw", "h1", "h2", "--post_list", "x"}, "-l/--post_list x: a whole number"},
		// Accepted: the run gets as far as looking for the lab.
		{[]string{"write_bw", "h1", "h2", "-b", "--bidirectional", "-l", "4", "--run_infinitely", "-D", "2", "--cpu_util"}, "no lab is up"},
		{[]string{"send_lat", "h1", "h2", "-H", "-U", "--report-histogram", "--report-unsorted"}, "no lab is up"},
	} {
		_, _, err := runSubcommand(t, "perf", append(c.args, "--state-dir", dir)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestPerfTOSOnIB: -T is refused on an InfiniBand lab, whose packets have
// no IP header to carry it, and accepted on RoCE; -S on both.
func TestPerfTOSOnIB(t *testing.T) {
	f := defaultFlags()
	f.tos, f.sl = 106, 2
	p, err := f.plan(mustTest(t, "write_bw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.checkFabric(false); err != nil {
		t.Errorf("-T 106 on RoCE: %v", err)
	}
	if err := p.checkFabric(true); err == nil || !strings.HasPrefix(err.Error(), "-T/--tos 106: an InfiniBand lab") {
		t.Errorf("-T 106 on IB: %v", err)
	}
	f.tos = -1
	if p, err = f.plan(mustTest(t, "write_bw")); err != nil || p.checkFabric(true) != nil {
		t.Errorf("-S 2 on IB: %v %v", err, p.checkFabric(true))
	}
}
