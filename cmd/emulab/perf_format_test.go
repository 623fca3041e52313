package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emufabric/emufabric/lab"
)

func mustTest(t *testing.T, name string) perfTest {
	t.Helper()
	pt, err := lookupPerfTest(name)
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// defaultFlags are the flag values cobra starts from.
func defaultFlags() perfFlags {
	return perfFlags{size: perfDefSizeBW, iters: perfDefIters, qps: 1, cqMod: perfDefCQMod, txDepth: perfDefTxBW, tos: -1}
}

func TestPerfPlanDefaults(t *testing.T) {
	for _, c := range []struct {
		test              string
		size, depth, cqMd int
		iters             int
	}{
		// perftest: DEF_ITERS_WB for write_bw, DEF_ITERS otherwise.
		{"write_bw", 65536, 128, 100, 5000},
		{"ib_read_bw", 65536, 128, 100, 1000},
		{"send_bw", 65536, 128, 100, 1000},
		{"write_lat", 2, 1, 1, 1000},
		{"read_lat", 2, 1, 1, 1000},
		{"ib_send_lat", 2, 1, 1, 1000},
	} {
		f := defaultFlags()
		p, err := f.plan(mustTest(t, c.test))
		if err != nil {
			t.Fatalf("%s: %v", c.test, err)
		}
		if len(p.sizes) != 1 || p.sizes[0] != c.size || p.depth != c.depth || p.cqMod != c.cqMd || p.iters != c.iters || p.qps != 1 || p.tc != 0 {
			t.Errorf("%s: plan %+v", c.test, p)
		}
	}
	// -a: 2 .. 2^23, 23 sizes, doubling.
	f := defaultFlags()
	f.all = true
	p, err := f.plan(mustTest(t, "write_bw"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.sizes) != 23 || p.sizes[0] != 2 || p.sizes[22] != 1<<23 {
		t.Errorf("-a sizes %v", p.sizes)
	}
	// A small TX depth clamps the default moderation.
	f = defaultFlags()
	f.txDepth, f.txSet = 16, true
	if p, err := f.plan(mustTest(t, "write_bw")); err != nil || p.cqMod != 16 {
		t.Errorf("-t 16: cq_mod %v, %v", p, err)
	}
	// So does it a given one, as perftest's force_dependecies does.
	f = defaultFlags()
	f.txDepth, f.txSet, f.cqMod, f.cqModSet = 64, true, 200, true
	if p, err := f.plan(mustTest(t, "write_bw")); err != nil || p.cqMod != 64 {
		t.Errorf("-t 64 -Q 200: cq_mod %v, %v", p, err)
	}
	f = defaultFlags()
	f.tos = 26 << 2
	f.sl = 3
	f.mtu = 1024
	f.duration = 2
	if p, err := f.plan(mustTest(t, "send_bw")); err != nil || p.tc != 104 || p.sl != 3 || p.mtu != 1024 || p.duration != 2 {
		t.Errorf("-T 104 -S 3 -m 1024 -D 2: %+v, %v", p, err)
	}
}

func TestPerfPlanErrors(t *testing.T) {
	for _, c := range []struct {
		test string
		set  func(f *perfFlags)
		want string
	}{
		{"write_bw", func(f *perfFlags) { f.size, f.sizeSet = 0, true }, "-s/--size 0"},
		{"write_bw", func(f *perfFlags) { f.size, f.sizeSet = 1<<23+1, true }, "-s/--size 8388609"},
		{"write_bw", func(f *perfFlags) { f.size, f.sizeSet, f.all = 64, true, true }, "-a/--all"},
		{"write_bw", func(f *perfFlags) { f.iters, f.itersSet = 4, true }, "-n/--iters 4"},
		{"write_bw", func(f *perfFlags) { f.iters, f.itersSet, f.duration = 100, true, 2 }, "-D/--duration 2"},
		{"write_bw", func(f *perfFlags) { f.duration = -1 }, "-D/--duration -1"},
		{"write_bw", func(f *perfFlags) { f.duration, f.all = 1, true }, "-D/--duration 1 and -a/--all"},
		{"write_bw", func(f *perfFlags) { f.qps = 0 }, "-q/--qp 0"},
		{"write_bw", func(f *perfFlags) { f.qps = 17 }, "-q/--qp 17"},
		{"write_lat", func(f *perfFlags) { f.qps = 2 }, "-q/--qp 2"},
		{"write_bw", func(f *perfFlags) { f.txDepth, f.txSet = 0, true }, "-t/--tx-depth 0"},
		{"write_lat", func(f *perfFlags) { f.txDepth, f.txSet = 8, true }, "-t/--tx-depth 8"},
		{"write_bw", func(f *perfFlags) { f.cqMod, f.cqModSet = 0, true }, "-Q/--cq-mod 0"},
		{"write_bw", func(f *perfFlags) { f.duration, f.durSet = 0, true }, "-D/--duration 0: want 1 .. 3600 seconds"},
		{"send_lat", func(f *perfFlags) { f.cqMod, f.cqModSet = 1, true; f.txDepth = 1 }, ""},
		{"write_bw", func(f *perfFlags) { f.mtu = 1000 }, "-m/--mtu 1000"},
		{"write_bw", func(f *perfFlags) { f.mtu = 8192 }, "-m/--mtu 8192"},
		{"write_bw", func(f *perfFlags) { f.sl = 16 }, "-S/--sl 16"},
		{"write_bw", func(f *perfFlags) { f.tos = 256 }, "-T/--tos 256"},
		{"write_bw", func(f *perfFlags) { f.tos = 3 }, "-T/--tos 3"},
		{"write_bw", func(f *perfFlags) { f.timeout = 32 }, "-u/--qp-timeout 32"},
		{"write_bw", func(f *perfFlags) { f.timeout = 18 }, ""},
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
	if _, err := lookupPerfTest("atomic_bw"); err == nil || !strings.Contains(err.Error(), "write_bw, read_bw, send_bw, write_lat, read_lat, send_lat") {
		t.Errorf("unknown test: %v", err)
	}
}

func TestPerfTables(t *testing.T) {
	var b bytes.Buffer
	writeBWHeader(&b, true, false)
	// 1000 x 65536 bytes in 50 ms: 1.31072 GB/s = 10.49 Gb/s.
	writeBWRow(&b, bwRow{Size: 65536, Iters: 1000, Peak: 12.5e9 / 8, Average: 65536 * 1000 / 0.05, MsgRate: 20000}, true)
	want := perfLine + "\n" +
		" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
		" 65536      1000             12.50              10.49  \t\t   0.020000\n"
	if b.String() != want {
		t.Errorf("bandwidth table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeBWHeader(&b, false, false)
	writeBWRow(&b, bwRow{Size: 2, Iters: 5, Average: 1 << 20, Peak: 3 << 20, MsgRate: 524288}, false)
	want = perfLine + "\n" +
		" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n" +
		" 2          5                3.00               1.00   \t\t   0.524288\n"
	if b.String() != want {
		t.Errorf("MiB table:\n%q\nwant\n%q", b.String(), want)
	}

	b.Reset()
	var samples []time.Duration
	for i := 1; i <= 1000; i++ {
		samples = append(samples, time.Duration(i)*time.Microsecond)
	}
	st := newLatStats(2, samples, time.Second, false)
	writeLatHeader(&b, false, false)
	writeLatRow(&b, st, false)
	lines := strings.Split(b.String(), "\n")
	if lines[1] != perfHeadLat || !strings.HasPrefix(lines[2], " 2       1000          ") {
		t.Errorf("latency table:\n%s", b.String())
	}
	f := strings.Fields(lines[2])
	// perftest's print_report_lat: the two largest (999 and 1000) left
	// out of typical, avg and stdev; t_max the sample at index 998 (999),
	// 99% and 99.9% at indexes ceil(998 x 0.99) = 989 and 998.
	if strings.Join(f, " ") != "2 1000 1.00 999.00 499.50 499.50 288.10 990.00 999.00" {
		t.Errorf("latency row fields %q", f)
	}
	b.Reset()
	st = newLatStats(2, samples, time.Second, true)
	writeLatHeader(&b, true, false)
	writeLatRow(&b, st, true)
	if !strings.Contains(b.String(), perfHeadLatDur) || strings.Join(strings.Fields(strings.Split(b.String(), "\n")[2]), " ") != "2 1000 500.50 1000.00" {
		t.Errorf("duration latency table:\n%s", b.String())
	}
}

// TestLatStats: the latency columns are perftest's print_report_lat's.
// They were every sample's, so a run's straggler (the first message's
// setup, a descheduled daemon) was its t_max and moved its t_avg and
// t_stdev where perftest leaves the two largest out.
func TestLatStats(t *testing.T) {
	st := newLatStats(64, []time.Duration{4 * time.Microsecond, 2 * time.Microsecond, 6 * time.Microsecond, 8 * time.Microsecond}, 0, false)
	// m = 2 of 4 kept: {2, 4}; t_max and the percentiles at index 2.
	if st.Iters != 4 || st.Min != 2 || st.Max != 6 || st.Avg != 3 || st.Typical != 3 || st.Stdev != 1 || st.P99 != 6 || st.P999 != 6 || st.TPS != 0 {
		t.Errorf("stats %+v", st)
	}
	// 1000 samples of 10 us and a straggler of 4 ms: perftest's figures
	// do not see it.
	var s []time.Duration
	for range 1000 {
		s = append(s, 10*time.Microsecond)
	}
	s = append(s, 4*time.Millisecond)
	st = newLatStats(2, s, 0, false)
	if st.Iters != 1001 || st.Max != 10 || st.Avg != 10 || st.Stdev != 0 || st.P999 != 10 {
		t.Errorf("a straggler: %+v", st)
	}
	// Two: t_max is the second largest, the rest still do not see them.
	s = append(s, 4*time.Millisecond)
	st = newLatStats(2, s, 0, false)
	if st.Iters != 1002 || st.Max != 4000 || st.Avg != 10 || st.Stdev != 0 || st.P999 != 10 {
		t.Errorf("two stragglers: %+v", st)
	}
	// An odd count kept: the middle sample.
	if st := newLatStats(2, []time.Duration{1000, 3000, 2000, 9000, 9000}, 0, false); st.Typical != 2 || st.Max != 9 {
		t.Errorf("odd: %+v", st)
	}
	// Duration mode is print_report_lat_duration's: the run's time over
	// its count, every sample in.
	if st := newLatStats(2, s, 2*time.Second, true); math.Abs(st.Avg-(10*1000+8000)/1002.0) > 1e-9 || st.TPS != 501 {
		t.Errorf("duration: %+v", st)
	}
	if st := newLatStats(2, nil, time.Second, false); st.Iters != 0 || st.Avg != 0 {
		t.Errorf("no samples: %+v", st)
	}
}

func TestPerfJSON(t *testing.T) {
	var b bytes.Buffer
	info := perfJSONInfo{Test: "RDMA_Write BW Test", Device: "emu_eth0", NumberOfQPs: 1, BWUnit: "Gb/sec", Src: "l/h1", Dst: "l/h2"}
	r := bwRow{Size: 65536, Iters: 1000, Peak: 1.5e9, Average: 1.25e9, MsgRate: 19073.486, Verified: true}
	if err := writePerfJSON(&b, info, []any{bwResultJSON(r, true)}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TestInfo map[string]any `json:"test_info"`
		Results  map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	want := map[string]any{"MsgSize": 65536.0, "n_iterations": 1000.0, "BW_peak": 12.0, "BW_average": 10.0, "MsgRate": 0.019073, "data_verified": true}
	for k, v := range want {
		if doc.Results[k] != v {
			t.Errorf("results.%s = %v, want %v", k, doc.Results[k], v)
		}
	}
	if doc.TestInfo["test"] != "RDMA_Write BW Test" || doc.TestInfo["BW_unit"] != "Gb/sec" {
		t.Errorf("test_info %v", doc.TestInfo)
	}

	// One size: all_results is a list of that one object.
	var one struct {
		AllResults []map[string]any `json:"all_results"`
	}
	if err := json.Unmarshal(b.Bytes(), &one); err != nil || len(one.AllResults) != 1 || one.AllResults[0]["BW_average"] != 10.0 {
		t.Errorf("all_results of one size: %v\n%s", err, b.String())
	}

	// Latency, and several sizes (-a): results is still one object, the
	// last size's (what perftest's file holds), all_results every size.
	b.Reset()
	st := newLatStats(2, []time.Duration{time.Microsecond, 3 * time.Microsecond}, time.Second, false)
	st.Verified = true
	st2 := st
	st2.Size = 4
	if err := writePerfJSON(&b, perfJSONInfo{Test: "Send Latency Test"}, []any{latResultJSON(st, false), latResultJSON(st2, false)}); err != nil {
		t.Fatal(err)
	}
	var lat struct {
		Results    map[string]any   `json:"results"`
		AllResults []map[string]any `json:"all_results"`
	}
	if err := json.Unmarshal(b.Bytes(), &lat); err != nil || len(lat.AllResults) != 2 {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if lat.Results["MsgSize"] != 4.0 || lat.AllResults[0]["MsgSize"] != 2.0 || lat.AllResults[1]["MsgSize"] != 4.0 {
		t.Errorf("-a: results %v, all_results %v", lat.Results, lat.AllResults)
	}
	for _, k := range []string{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"} {
		if _, ok := lat.Results[k]; !ok {
			t.Errorf("latency results lack %q: %v", k, lat.Results)
		}
	}
	if lat.AllResults[0]["t_avg"] != 2.0 || lat.AllResults[0]["t_max"] != 3.0 {
		t.Errorf("latency results %v", lat.AllResults[0])
	}
	if err := writePerfJSON(&b, perfJSONInfo{}, nil); err == nil {
		t.Errorf("a document without a result was written")
	}
	// Duration mode has t_avg and tps_average only.
	j := latResultJSON(st, true)
	if j.TMin != nil || j.TPS == nil || *j.TPS != 2 {
		t.Errorf("duration latency JSON %+v", j)
	}
}

func TestGIDDecimal(t *testing.T) {
	if got := gidDecimal("::ffff:10.0.0.1"); got != "00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01" {
		t.Errorf("gid %q", got)
	}
	if got := gidDecimal("not a gid"); got != "not a gid" {
		t.Errorf("bad gid %q", got)
	}
}

func TestPeakRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int, b uint64) perfSample { return perfSample{t0.Add(time.Duration(ms) * time.Millisecond), b} }
	// 1 MB/ms for 10 ms, then 4 MB in 1 ms, then 1 MB/ms again.
	s := []perfSample{at(0, 0), at(10, 10e6), at(11, 14e6), at(12, 15e6), at(20, 23e6)}
	if got := peakRate(s, 4e6); got != 4e9 {
		t.Errorf("peak over 4 MB windows %v, want 4e9", got)
	}
	// A window of 5 MB cannot be the burst alone: 10..12 ms moved 5 MB.
	if got := peakRate(s, 5e6); got != 2.5e9 {
		t.Errorf("peak over 5 MB windows %v, want 2.5e9", got)
	}
	if got := peakRate(s, 100e6); got != 0 {
		t.Errorf("window longer than the run: %v", got)
	}

	// Two QPs merged: the total at each time is the sum of the latest.
	m := mergeSamples([][]perfSample{{at(0, 0), at(2, 10), at(4, 20)}, {at(0, 0), at(1, 5), at(4, 15)}})
	var got []uint64
	for _, x := range m {
		got = append(got, x.bytes)
	}
	if len(m) != 4 || got[0] != 0 || got[1] != 5 || got[2] != 15 || got[3] != 35 {
		t.Errorf("merged %v", got)
	}
}

func TestCompareDest(t *testing.T) {
	src := make([]byte, 4096)
	fillPattern(src, 7)
	other := make([]byte, 4096)
	fillPattern(other, 8)
	if bytes.Equal(src, other) || bytes.Count(src, []byte{0}) > 64 {
		t.Fatal("patterns of different seeds must differ and not be mostly zero")
	}
	dst := make([]byte, 4096)
	copy(dst, src[:1000])
	if err := compareDest(src, dst, 1000); err != nil {
		t.Errorf("good copy: %v", err)
	}
	dst[999] ^= 1
	if err := compareDest(src, dst, 1000); err == nil || !strings.Contains(err.Error(), "destination byte 999") {
		t.Errorf("flipped byte: %v", err)
	}
	dst[999] ^= 1
	dst[1000] = 1
	if err := compareDest(src, dst, 1000); err == nil || !strings.Contains(err.Error(), "beyond the 1000-byte message") {
		t.Errorf("overrun: %v", err)
	}
}

// The JSON values are the table's printed values, digit for digit.
func TestPerfJSONMatchesTable(t *testing.T) {
	for _, v := range []float64{5591.235, 289.455, 249.915, 0.125, 2.675, 1.005, 0.0000005, 1e6 + 0.005} {
		if got, want := strconv.FormatFloat(round2(v), 'f', 2, 64), fmt.Sprintf("%.2f", v); got != want {
			t.Errorf("round2(%v) = %s, the table prints %s", v, got, want)
		}
		if got, want := strconv.FormatFloat(round6(v), 'f', 6, 64), fmt.Sprintf("%.6f", v); got != want {
			t.Errorf("round6(%v) = %s, the table prints %s", v, got, want)
		}
	}
}

// TestCAltHex: C's %#0Nx, as perftest's address lines print with it.
func TestCAltHex(t *testing.T) {
	for _, c := range []struct {
		v     uint64
		width int
		want  string
	}{
		{0, 4, "0000"}, {1, 4, "0x01"}, {0x1234, 4, "0x1234"}, {0x12, 6, "0x0012"}, {0x8d2f5a, 6, "0x8d2f5a"},
		{0, 8, "00000000"}, {0xd0e, 8, "0x000d0e"}, {0x7f000084c000, 16, "0x007f000084c000"}, {0x123456789, 6, "0x123456789"},
	} {
		if got := cAltHex(c.v, c.width); got != c.want {
			t.Errorf("%%#0%dx of %#x: %q, want %q", c.width, c.v, got, c.want)
		}
	}
}

// TestBannerReadAndLat: a read test prints its outstanding reads (line
// and OUT), a latency test no CQ Moderation, as perftest's banner.
func TestBannerReadAndLat(t *testing.T) {
	side := perfSide{QPN: 0x11, PSN: 0x12, RKey: 0xd0e, VAddr: 0x7f000084c000, GID: "::ffff:10.0.0.1"}
	var b strings.Builder
	writeBanner(&b, perfBanner{Title: "RDMA_Read BW Test", QPs: 1, Depth: 128, CQMod: 100, MTU: 4096, Remotes: true, OutReads: 16,
		Local: []perfSide{side}, Remote: []perfSide{side}})
	out := b.String()
	for _, want := range []string{" Outstand reads  : 16\n", " CQ Moderation   : 100\n",
		" local address: LID 0000 QPN 0x0011 PSN 0x0012 RKey 0x000d0e VAddr 0x007f000084c000 OUT 0x10\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("read banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Max inline data") {
		t.Errorf("read banner has Max inline data:\n%s", out)
	}
	if !strings.Contains(out, " GID index       : 0\n") || !strings.Contains(out, " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01\n") {
		t.Errorf("RoCE banner lacks the GID index or the GIDs:\n%s", out)
	}
	// On IB perftest addresses the sides by LID and prints no GID.
	b.Reset()
	ibSide := perfSide{LID: 2, QPN: 0x11, PSN: 0x12, RKey: 0xd0e, VAddr: 0x7f000084c000, GID: "fe80::8ba:8707:b55f:701"}
	writeBanner(&b, perfBanner{Title: "RDMA_Write BW Test", QPs: 1, Depth: 128, CQMod: 100, MTU: 4096, Remotes: true,
		Local: []perfSide{ibSide}, Remote: []perfSide{ibSide}})
	if out := b.String(); strings.Contains(out, "GID") || !strings.Contains(out, " Link type       : IB\n") ||
		!strings.Contains(out, " local address: LID 0x02 QPN 0x0011 PSN 0x0012 RKey 0x000d0e VAddr 0x007f000084c000\n remote address: LID 0x02") {
		t.Errorf("IB banner:\n%s", out)
	}
	b.Reset()
	writeBanner(&b, perfBanner{Title: "RDMA_Write Latency Test", QPs: 1, Depth: 1, CQMod: 1, MTU: 4096, Remotes: true, Lat: true,
		Local: []perfSide{side}, Remote: []perfSide{side}})
	if out := b.String(); strings.Contains(out, "CQ Moderation") || !strings.Contains(out, "Max inline data : 0[B]") || strings.Contains(out, " OUT ") {
		t.Errorf("latency banner:\n%s", out)
	}
}

// TestPerfPerftestFlags: a pasted perftest command line runs: the flags
// that choose what the lab decides are noted as ignored, -c takes RC,
// and a number flag given something else says what it wants.
func TestPerfPerftestFlags(t *testing.T) {
	dir := t.TempDir()
	_, errOut, err := runSubcommand(t, "perf", "write_bw", "h1", "h2", "--state-dir", dir, "-d", "mlx5_0", "-x", "3", "-F", "-c", "RC", "--report_gbits", "-e", "-f", "2", "-r", "512")
	if err == nil || !strings.Contains(err.Error(), "no lab is up") {
		t.Errorf("without a lab: %v", err)
	}
	for _, want := range []string{"-d/--ib-dev mlx5_0 ignored: the device is the SRC host's emulated RNIC", "-x/--gid-index 3 ignored: on RoCE the GID is the host's IPv4-mapped address (index 0); an InfiniBand lab routes by LID, without a GRH", "-F/--CPU-freq true ignored", "-e/--events true ignored", "-f/--margin 2 ignored", "-r/--rx-depth 512 ignored"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "UD"}, "-c/--connection UD: perf runs RC queue pairs only"},
		{[]string{"-s", "2G"}, "-s/--size 2G: a whole number of bytes, 1 .. 8388608 (perftest takes no units such as K or M)"},
		{[]string{"-n", "1e4"}, "-n/--iters 1e4: a whole number"},
	} {
		_, _, err := runSubcommand(t, "perf", append([]string{"write_bw", "h1", "h2", "--state-dir", dir}, c.args...)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestPerfOutJSONFlag: --out_json is perftest's switch and
// --out_json_file the name. When --out_json took a file, "--out_json -a"
// wrote the results of one size to a file named -a, and perftest's
// "--out_json --out_json_file=r.json" ran the test and then failed to
// open a file named "--out_json_file=r.json".
func TestPerfOutJSONFlag(t *testing.T) {
	dir := t.TempDir()
	if p := perfJSONPath(true, ""); p != perfDefJSONFile {
		t.Errorf("--out_json alone: %q", p)
	}
	if p := perfJSONPath(true, "r.json"); p != "r.json" {
		t.Errorf("--out_json --out_json_file r.json: %q", p)
	}
	if p := perfJSONPath(false, "r.json"); p != "r.json" {
		t.Errorf("--out_json_file r.json alone: %q", p)
	}
	if p := perfJSONPath(false, ""); p != "" {
		t.Errorf("neither: %q", p)
	}

	_, _, err := runSubcommand(t, "perf", "write_bw", "h1", "h2", "--state-dir", dir, "--out_json", "-a")
	if err == nil || !strings.Contains(err.Error(), "no lab is up") {
		t.Errorf("--out_json -a without a lab: %v", err)
	}
	c, _, _ := rootCmd.Find([]string{"perf"})
	if !c.Flags().Lookup("all").Changed {
		t.Errorf("--out_json -a: -a was not taken as -a/--all")
	}
	if _, err := os.Stat("-a"); err == nil {
		t.Errorf("--out_json -a wrote a file named -a")
	}

	_, _, err = runSubcommand(t, "perf", "write_bw", "h1", "h2", "--state-dir", dir, "--out_json", "--out_json_file="+filepath.Join(dir, "r.json"))
	if err == nil || !strings.Contains(err.Error(), "no lab is up") {
		t.Errorf("--out_json --out_json_file=FILE without a lab: %v", err)
	}

	_, _, err = runSubcommand(t, "perf", "write_bw", "h1", "h2", "--state-dir", dir, "--out_json", filepath.Join(dir, "r.json"))
	if err == nil || !strings.Contains(err.Error(), "--out_json is a switch (perftest's) and takes no file; name the file with --out_json_file FILE") {
		t.Errorf("--out_json FILE: %v", err)
	}

	// A directory that is not there is refused before the run.
	bad := filepath.Join(dir, "no", "such", "r.json")
	_, _, err = runSubcommand(t, "perf", "write_bw", "h1", "h2", "--state-dir", dir, "--out_json_file", bad)
	if err == nil || !strings.HasPrefix(err.Error(), "--out_json_file "+bad+": ") {
		t.Errorf("--out_json_file in a missing directory: %v", err)
	}
}

// TestRetryHint: a transport retry error says what the ACK timer was and
// what gives a busy machine room; other errors pass unchanged.
func TestRetryHint(t *testing.T) {
	err := retryHint(errors.New("send_bw 2097152 bytes: QP 0: perf_bw: message 598: IBV_WC_RETRY_EXC_ERR"), &perfPlan{})
	for _, want := range []string{"IBV_WC_RETRY_EXC_ERR", "-u 14: 67ms", "a larger -u (18: 1.07s)", "time_dilation"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("hint lacks %q: %v", want, err)
		}
	}
	if err := retryHint(errors.New("send_bw: IBV_WC_RETRY_EXC_ERR"), &perfPlan{timeout: 18}); err == nil || !strings.Contains(err.Error(), "-u 18: 1.074s") {
		t.Errorf("-u 18: %v", err)
	}
	other := errors.New("data check failed")
	if err := retryHint(other, &perfPlan{}); err != other {
		t.Errorf("other error changed: %v", err)
	}
}

// TestGoneHint: an EOF from an emunic's control connection says what it
// likely means; other errors pass unchanged.
func TestGoneHint(t *testing.T) {
	err := goneHint(fmt.Errorf("write_bw 65536 bytes: QP 0: %w", io.EOF), lab.DefaultStateRoot, "ch1")
	if err == nil || !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "an emunic closed its control connection during the run") || !strings.Contains(err.Error(), "`emulab status ch1`") {
		t.Errorf("EOF: %v", err)
	}
	// The user's --state-dir is in the command it suggests.
	err = goneHint(fmt.Errorf("write_bw: %w", io.EOF), "/srv/labs", "ch1")
	if err == nil || !strings.Contains(err.Error(), "`emulab status --state-dir /srv/labs ch1`") {
		t.Errorf("EOF, --state-dir /srv/labs: %v", err)
	}
	other := errors.New("data check failed")
	if goneHint(other, "", "ch1") != other || goneHint(nil, "", "ch1") != nil {
		t.Error("other errors changed")
	}
}

// A latency test's JSON has no CQ_Moderation, as perftest's; a bandwidth
// test's has it.
func TestPerfJSONCQModeration(t *testing.T) {
	mod := 100
	for _, c := range []struct {
		info perfJSONInfo
		want bool
	}{
		{perfJSONInfo{Test: "RDMA_Write Latency Test"}, false},
		{perfJSONInfo{Test: "RDMA_Write BW Test", CQModeration: &mod}, true},
	} {
		var b bytes.Buffer
		if err := writePerfJSON(&b, c.info, []any{bwResultJSON(bwRow{Size: 2, Iters: 1}, false)}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `"CQ_Moderation"`); got != c.want {
			t.Errorf("%s: CQ_Moderation present %v, want %v\n%s", c.info.Test, got, c.want, b.String())
		}
	}
}

// TestBannerLayout: the banner's head is perftest's ctx_print_test_info
// byte for byte: the title after a fixed 20-space indent (not centred),
// each pair's first value followed by two tabs with no padding (a script
// that splits on "\t\t" gets "OFF", and a terminal puts the second key at
// column 32), and the rdma_cm line's tab before its colon.
func TestBannerLayout(t *testing.T) {
	side := perfSide{QPN: 0x11, PSN: 0x12, RKey: 0xd0e, VAddr: 0x7f000084c000, GID: "::ffff:10.0.0.1"}
	var b strings.Builder
	writeBanner(&b, perfBanner{Title: "RDMA_Write BW Test", Device: "emu_eth0", QPs: 1, Depth: 128, CQMod: 100, MTU: 4096,
		Local: []perfSide{side}, Remote: []perfSide{side}})
	want := perfLine + "\n" +
		"                    RDMA_Write BW Test\n" +
		" Dual-port       : OFF\t\tDevice         : emu_eth0\n" +
		" Number of qps   : 1\t\tTransport type : IB\n" +
		" Connection type : RC\t\tUsing SRQ      : OFF\n" +
		" PCIe relax order: OFF\t\tLock-free      : OFF\n" +
		" TX depth        : 128\n" +
		" CQ Moderation   : 100\n" +
		" Mtu             : 4096[B]\n" +
		" Link type       : Ethernet\n" +
		" GID index       : 0\n" +
		" Max inline data : 0[B]\n" +
		" rdma_cm QPs\t : OFF\n"
	if got := b.String(); !strings.HasPrefix(got, want) {
		t.Errorf("banner head:\n%q\nwant\n%q", got[:min(len(got), len(want)+40)], want)
	}
}

// TestLatRowLayout: the latency rows are perftest's REPORT_FMT_LAT and
// REPORT_FMT_LAT_DUR, whose #iterations is printed unpadded (PRIu64, %d),
// unlike the bandwidth row's %-10lu: ib_send_lat prints
// " 2       1000          1.42 ..." and, with -D,
// " 2             1577611            1.90           262864.28".
func TestLatRowLayout(t *testing.T) {
	var b strings.Builder
	writeLatRow(&b, latStats{Size: 2, Iters: 1000, Min: 1.42, Max: 1.93, Typical: 1.47, Avg: 1.47, Stdev: 0, P99: 1.57, P999: 1.93}, false)
	if got, want := b.String(), " 2       1000          1.42           1.93         1.47     \t       1.47        \t0.00   \t\t1.57    \t\t1.93   \n"; got != want {
		t.Errorf("latency row\n%q, want\n%q", got, want)
	}
	b.Reset()
	writeLatRow(&b, latStats{Size: 2, Iters: 1577611, Avg: 1.90, TPS: 262864.28}, true)
	if got, want := b.String(), " 2             1577611            1.90           262864.28\n"; got != want {
		t.Errorf("duration row\n%q, want\n%q", got, want)
	}
}
