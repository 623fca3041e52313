package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What `emulab perf` prints, in perftest's layout (perftest_parameters.h
// and perftest_resources.c): a banner framed by a line of 87 dashes, the
// two sides' addresses, then the result table framed the same way. The
// column headers, units and JSON keys are the interface users' scripts
// parse, so they are perftest's exactly.

const perfLine = "---------------------------------------------------------------------------------------"

// Result table headers (RESULT_FMT, RESULT_FMT_G, RESULT_FMT_LAT,
// RESULT_FMT_LAT_DUR) and rows (REPORT_FMT, REPORT_FMT_LAT,
// REPORT_FMT_LAT_DUR). MiB = 2^20 bytes, Gb = 10^9 bits. The latency rows
// print #iterations unpadded (PRIu64, %d), unlike the bandwidth row's
// %-10lu.
const (
	perfHeadBW       = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	perfHeadBWGbits  = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	perfHeadLat      = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
	perfHeadLatDur   = " #bytes        #iterations       t_avg[usec]    tps average"
	perfRowBW        = " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n"
	perfRowLat       = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"
	perfRowLatDur    = " %-7d       %d            %-7.2f        %-7.2f\n"
	perfBytesPerMiB  = 1 << 20
	perfBytesPerGbit = 125_000_000
	// --cpu_util's column: RESULT_EXT_CPU_UTIL after the header,
	// REPORT_EXT_CPU_UTIL after the row.
	perfHeadCPU = "    CPU_Util[%]"
	perfRowCPU  = "\t    %-3.2f"
)

// bwRow is one size's bandwidth result. Rates are bytes per second.
type bwRow struct {
	Size     int
	Iters    uint64
	Peak     float64 // 0: not measured (-N, or duration mode as perftest)
	Average  float64
	MsgRate  float64 // messages per second
	Verified bool
	// CPU is the machine's CPU utilisation over the run, in percent
	// (--cpu_util); nil: not measured.
	CPU *float64
}

// add sums two directions' rows of a bidirectional run, as perftest's
// print_full_bw_report adds the remote side's report to its own: peak,
// average and message rate; the iterations stay one direction's.
func (r bwRow) add(o bwRow) bwRow {
	r.Peak += o.Peak
	r.Average += o.Average
	r.MsgRate += o.MsgRate
	return r
}

// toLabTime converts a row measured on the wall clock to the time of a lab
// with time_dilation n: its fabric runs n times slower than the wall
// (rt.Clock), so its rates are n times what the wall saw.
func (r *bwRow) toLabTime(n int) {
	f := float64(max(n, 1))
	r.Peak *= f
	r.Average *= f
	r.MsgRate *= f
}

// durationsToLabTime converts wall-clock durations to a lab's time: n
// times shorter.
func durationsToLabTime(ds []time.Duration, n int) {
	for i := range ds {
		ds[i] /= time.Duration(max(n, 1))
	}
}

// bwUnit converts bytes/s to the table's unit.
func bwUnit(bps float64, gbits bool) float64 {
	if gbits {
		return bps / perfBytesPerGbit
	}
	return bps / perfBytesPerMiB
}

// writeBWHeader writes the table's opening line and header; cpu adds
// --cpu_util's column.
func writeBWHeader(w io.Writer, gbits, cpu bool) {
	fmt.Fprintln(w, perfLine)
	h := perfHeadBW
	if gbits {
		h = perfHeadBWGbits
	}
	fmt.Fprintln(w, h+cpuHead(cpu))
}

func cpuHead(cpu bool) string {
	if cpu {
		return perfHeadCPU
	}
	return ""
}

// cpuCell is a row's --cpu_util cell, before the newline.
func cpuCell(cpu *float64) string {
	if cpu == nil {
		return ""
	}
	return fmt.Sprintf(perfRowCPU, *cpu)
}

func writeBWRow(w io.Writer, r bwRow, gbits bool) {
	row := fmt.Sprintf(perfRowBW, r.Size, r.Iters, bwUnit(r.Peak, gbits), bwUnit(r.Average, gbits), r.MsgRate/1e6)
	fmt.Fprint(w, strings.TrimSuffix(row, "\n")+cpuCell(r.CPU)+"\n")
}

// latStats are perftest's latency statistics of one size, in
// microseconds, computed as perftest's print_report_lat computes them
// (perftest_parameters.c): see newLatStats.
type latStats struct {
	Size    int
	Iters   int
	Min     float64
	Max     float64
	Typical float64
	Avg     float64
	Stdev   float64
	P99     float64
	P999    float64
	TPS     float64 // transactions per second (duration mode)
	// Verified: the destination held the source's bytes after the run.
	Verified bool
	// CPU is --cpu_util's figure (duration runs); nil: not measured.
	CPU *float64
}

// perfLatTail is perftest's LAT_MEASURE_TAIL: the largest samples left
// out of the statistics, a run's stragglers (the first message's setup,
// a descheduled daemon) that would otherwise move its t_typical, t_avg
// and t_stdev (t_max is the largest but one).
const perfLatTail = 2

// newLatStats is print_report_lat's arithmetic over the sorted samples
// (perftest_parameters.c): the perfLatTail largest are left out; of the
// m left, t_typical is the median (the mean of the middle two when m is
// even), t_avg and t_stdev their mean and standard deviation, t_max the
// sample at index m (so the second largest of all), and the
// percentiles the samples at index ceil(m x p), one past the nearest
// rank. (perftest squares each deviation truncated to an int; that
// truncation is a bug and is not reproduced.) Iters is every sample.
//
// A duration run (duration) is print_report_lat_duration's: t_avg is the
// mean of every sample (perftest divides the run's time by its count)
// and TPS the samples over the wall time.
func newLatStats(size int, samples []time.Duration, wall time.Duration, duration bool) latStats {
	st := latStats{Size: size, Iters: len(samples)}
	if len(samples) == 0 {
		return st
	}
	us := make([]float64, len(samples))
	for i, s := range samples {
		us[i] = float64(s) / float64(time.Microsecond)
	}
	if wall > 0 {
		st.TPS = float64(len(us)) / wall.Seconds()
	}
	if duration {
		sum := 0.0
		for _, v := range us {
			sum += v
		}
		st.Avg = sum / float64(len(us))
		return st
	}
	slices.Sort(us)
	m := len(us) - perfLatTail
	if m < 1 {
		m = len(us)
	}
	at := func(k int) float64 { return us[min(k, len(us)-1)] }
	st.Min, st.Max = us[0], at(m)
	if m%2 == 0 {
		st.Typical = (us[m/2] + us[m/2-1]) / 2
	} else {
		st.Typical = us[m/2]
	}
	sum := 0.0
	for _, v := range us[:m] {
		sum += v
	}
	st.Avg = sum / float64(m)
	var ss float64
	for _, v := range us[:m] {
		ss += (v - st.Avg) * (v - st.Avg)
	}
	st.Stdev = math.Sqrt(ss / float64(m))
	// In float64 as perftest's ceil(measure_cnt * 0.99) is in C's double,
	// so the index is perftest's even where the product is off by an ulp.
	rank := func(p float64) float64 { return at(int(math.Ceil(float64(m) * p))) }
	st.P99, st.P999 = rank(0.99), rank(0.999)
	return st
}

// writeLatHeader writes the table's opening line and header; cpu adds
// --cpu_util's column.
func writeLatHeader(w io.Writer, duration, cpu bool) {
	fmt.Fprintln(w, perfLine)
	if duration {
		fmt.Fprintln(w, perfHeadLatDur+cpuHead(cpu))
	} else {
		fmt.Fprintln(w, perfHeadLat+cpuHead(cpu))
	}
}

func writeLatRow(w io.Writer, s latStats, duration bool) {
	var row string
	if duration {
		row = fmt.Sprintf(perfRowLatDur, s.Size, s.Iters, s.Avg, s.TPS)
	} else {
		row = fmt.Sprintf(perfRowLat, s.Size, s.Iters, s.Min, s.Max, s.Typical, s.Avg, s.Stdev, s.P99, s.P999)
	}
	fmt.Fprint(w, strings.TrimSuffix(row, "\n")+cpuCell(s.CPU)+"\n")
}

// writeLatSamples is perftest's -U and -H output (print_report_lat): a
// "#, usec" line, then one "N, value" line per sample, numbered from 1,
// the value printed as C's %g. -U prints every sample in the order
// measured; -H the samples sorted, without the perfLatTail largest that
// the statistics leave out. With either, the samples have pushed the
// table's header out of sight: it is printed again (the caller prints the
// row after it), as perftest does. samples are in the lab's time.
func writeLatSamples(w io.Writer, samples []time.Duration, unsorted, histogram, duration, cpu bool) {
	if !unsorted && !histogram {
		return
	}
	us := make([]float64, len(samples))
	for i, s := range samples {
		us[i] = float64(s) / float64(time.Microsecond)
	}
	list := func(v []float64) {
		fmt.Fprintln(w, "#, usec")
		for i, x := range v {
			fmt.Fprintf(w, "%d, %s\n", i+1, cG(x))
		}
	}
	if unsorted {
		list(us)
	}
	if histogram {
		sorted := slices.Clone(us)
		slices.Sort(sorted)
		if m := len(sorted) - perfLatTail; m >= 1 {
			sorted = sorted[:m]
		}
		list(sorted)
	}
	writeLatHeader(w, duration, cpu)
}

// cG formats v as C's printf("%g"): six significant digits, trailing
// zeros dropped, an exponent (two digits at least) below 1e-4 or from
// 1e6. strconv's 'g' with precision 6 is exactly that.
func cG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// perfSide is one side's address line: what perftest exchanges.
type perfSide struct {
	LID      uint16 // IB: the port's LID; 0 on RoCE, as perftest prints it
	QPN, PSN uint32
	RKey     uint32
	VAddr    uint64
	GID      string // "::ffff:10.0.0.1"
}

// gidDecimal prints a GID's 16 bytes as perftest does on RoCE: two-digit
// decimal bytes joined by colons (so an IPv4-mapped GID ends
// ":255:255:10:00:00:01").
func gidDecimal(gid string) string {
	a, err := netip.ParseAddr(gid)
	if err != nil {
		return gid
	}
	b := a.As16()
	parts := make([]string, 16)
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02d", x)
	}
	return strings.Join(parts, ":")
}

// perfBanner is the banner's content.
type perfBanner struct {
	Title   string
	Device  string
	QPs     int
	Depth   int
	CQMod   int
	MTU     int
	SL      uint8
	Local   []perfSide
	Remote  []perfSide
	Remotes bool // print RKey/VAddr (write and read)
	// Lat is a latency test (no CQ Moderation line); OutReads, above 0,
	// is a read test's outstanding reads (its line instead of Max
	// inline data, and OUT on the address lines).
	Lat      bool
	OutReads int
	// Dilation is the lab's time_dilation N; above 1 the banner says the
	// figures are in the lab's time.
	Dilation int
	// PostList is -l; above 1 the banner has perftest's Post List line.
	PostList int
}

// linkType is perftest's "Link type": IB when the ports have LIDs.
func (b *perfBanner) linkType() string {
	if len(b.Local) > 0 && b.Local[0].LID != 0 {
		return "IB"
	}
	return "Ethernet"
}

func writeBanner(w io.Writer, b perfBanner) {
	// ctx_print_test_info (perftest_parameters.c): the title after a
	// fixed indent of 20 spaces, whatever its length; a pair's first
	// value unpadded and followed by two tabs, so that the second key
	// lands on the terminal's column 32 and a script splitting on "\t\t"
	// gets the value alone.
	fmt.Fprintln(w, perfLine)
	fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", 20), b.Title)
	kv := func(k1, v1, k2, v2 string) {
		if k2 == "" {
			fmt.Fprintf(w, " %-16s: %s\n", k1, v1)
			return
		}
		fmt.Fprintf(w, " %-16s: %s\t\t%-15s: %s\n", k1, v1, k2, v2)
	}
	kv("Dual-port", "OFF", "Device", b.Device)
	kv("Number of qps", fmt.Sprint(b.QPs), "Transport type", "IB")
	kv("Connection type", "RC", "Using SRQ", "OFF")
	kv("PCIe relax order", "OFF", "Lock-free", "OFF")
	kv("TX depth", fmt.Sprint(b.Depth), "", "")
	if b.PostList > 1 {
		kv("Post List", fmt.Sprint(b.PostList), "", "")
	}
	if !b.Lat {
		kv("CQ Moderation", fmt.Sprint(b.CQMod), "", "")
	}
	kv("Mtu", fmt.Sprintf("%d[B]", b.MTU), "", "")
	kv("Link type", b.linkType(), "", "")
	// perftest prints the GID index, and each side's GID, only when it
	// uses one: on RoCE, not on IB, where its default gid_index is -1 and
	// the sides are addressed by LID.
	ib := b.linkType() == "IB"
	if !ib {
		kv("GID index", "0", "", "")
	}
	if b.OutReads > 0 {
		kv("Outstand reads", fmt.Sprint(b.OutReads), "", "")
	} else {
		kv("Max inline data", "0[B]", "", "")
	}
	// perftest writes this key with a tab before its colon.
	fmt.Fprintf(w, " rdma_cm QPs\t : %s\n", "OFF")
	kv("Data ex. method", "emunic control sockets", "", "")
	if b.Dilation > 1 {
		// Not a perftest line: a dilated lab's figures are its own time's.
		kv("Time dilation", fmt.Sprintf("%d (rates and times in the lab's time; the machine moved 1/%d of each rate)", b.Dilation, b.Dilation), "", "")
	}
	fmt.Fprintln(w, perfLine)
	// perftest's BASIC_ADDR_FMT, RDMA_FMT and READ_FMT
	// (perftest_communication.h): C's %#0Nx, whose 0x counts in the width
	// and is left out for zero.
	line := func(who string, s perfSide) {
		fmt.Fprintf(w, " %s address: LID %s QPN %s PSN %s", who, cAltHex(uint64(s.LID), 4), cAltHex(uint64(s.QPN), 6), cAltHex(uint64(s.PSN), 6))
		if b.Remotes {
			fmt.Fprintf(w, " RKey %s VAddr %s", cAltHex(uint64(s.RKey), 8), cAltHex(s.VAddr, 16))
		}
		if b.OutReads > 0 {
			fmt.Fprintf(w, " OUT %s", cAltHex(uint64(b.OutReads), 4))
		}
		fmt.Fprintln(w)
		if !ib {
			fmt.Fprintf(w, " GID: %s\n", gidDecimal(s.GID))
		}
	}
	for i := range b.Local {
		line("local", b.Local[i])
		line("remote", b.Remote[i])
	}
}

// perfJSON is --out_json's document, one schema whatever the flags:
// perftest's "test_info" and "results" objects, "results" always the
// object of one size (with -a the last, the one perftest's file is left
// holding: it rewrites the file after each size), so a script reading
// perftest's results["BW_average"] reads ours; and "all_results", always
// a list of every size's object in the order run (one element without
// -a). A "results" that was a list with -a and an object without broke
// every script on one of the two.
type perfJSON struct {
	TestInfo   perfJSONInfo `json:"test_info"`
	Results    any          `json:"results"`
	AllResults []any        `json:"all_results"`
}

type perfJSONInfo struct {
	Test           string `json:"test"`
	Device         string `json:"Device"`
	NumberOfQPs    int    `json:"Number_of_qps"`
	ConnectionType string `json:"Connection_type"`
	TXDepth        int    `json:"TX_depth"`
	// CQModeration is the bandwidth tests' only: perftest writes no
	// CQ_Moderation for a latency test, which polls every completion.
	CQModeration *int   `json:"CQ_Moderation,omitempty"`
	Mtu          int    `json:"Mtu"`
	LinkType     string `json:"Link_type"`
	DataExMethod string `json:"Data_ex_method"`
	// BWUnit is the unit of BW_peak and BW_average (the table's).
	BWUnit string `json:"BW_unit,omitempty"`
	Src    string `json:"src"`
	Dst    string `json:"dst"`
	// TimeDilation is the lab's time_dilation when above 1: the results
	// are in the lab's time.
	TimeDilation int `json:"time_dilation,omitempty"`
	// PostList is -l above 1 (perftest's Post_List key).
	PostList int `json:"Post_List,omitempty"`
	// RunInfinitely: the file is rewritten after every period of
	// Duration seconds; results is the last period's, all_results every
	// period's so far.
	RunInfinitely bool `json:"run_infinitely,omitempty"`
	Duration      int  `json:"Duration,omitempty"`
}

type bwJSON struct {
	MsgSize     int     `json:"MsgSize"`
	NIterations uint64  `json:"n_iterations"`
	BWPeak      float64 `json:"BW_peak"`
	BWAverage   float64 `json:"BW_average"`
	MsgRate     float64 `json:"MsgRate"`
	// CPUUtil is perftest's CPU_util (--cpu_util).
	CPUUtil  *float64 `json:"CPU_util,omitempty"`
	Verified bool     `json:"data_verified"`
}

type latJSON struct {
	MsgSize     int      `json:"MsgSize"`
	NIterations int      `json:"n_iterations"`
	TMin        *float64 `json:"t_min,omitempty"`
	TMax        *float64 `json:"t_max,omitempty"`
	TTypical    *float64 `json:"t_typical,omitempty"`
	TAvg        float64  `json:"t_avg"`
	TStdev      *float64 `json:"t_stdev,omitempty"`
	P99         *float64 `json:"percentile_99,omitempty"`
	P999        *float64 `json:"percentile_99.9,omitempty"`
	TPS         *float64 `json:"tps_average,omitempty"`
	CPUUtil     *float64 `json:"CPU_util,omitempty"`
	Verified    bool     `json:"data_verified"`
}

// round2 and round6 are the table's values: the JSON says exactly what
// the table prints (printf's rounding of the binary value, which
// math.Round(v*100)/100 does not always match).
func round2(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 2, 64), 64)
	return r
}
func round6(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 6, 64), 64)
	return r
}

func bwResultJSON(r bwRow, gbits bool) bwJSON {
	return bwJSON{MsgSize: r.Size, NIterations: r.Iters, BWPeak: round2(bwUnit(r.Peak, gbits)),
		BWAverage: round2(bwUnit(r.Average, gbits)), MsgRate: round6(r.MsgRate / 1e6), CPUUtil: cpuJSON(r.CPU), Verified: r.Verified}
}

func cpuJSON(cpu *float64) *float64 {
	if cpu == nil {
		return nil
	}
	v := round2(*cpu)
	return &v
}

func latResultJSON(s latStats, duration bool) latJSON {
	p := func(v float64) *float64 { v = round2(v); return &v }
	j := latJSON{MsgSize: s.Size, NIterations: s.Iters, TAvg: round2(s.Avg), CPUUtil: cpuJSON(s.CPU), Verified: s.Verified}
	if duration {
		j.TPS = p(s.TPS)
		return j
	}
	j.TMin, j.TMax, j.TTypical, j.TStdev = p(s.Min), p(s.Max), p(s.Typical), p(s.Stdev)
	j.P99, j.P999 = p(s.P99), p(s.P999)
	return j
}

// writePerfJSON writes the document; results holds bwJSON or latJSON
// values, one per size, at least one.
func writePerfJSON(w io.Writer, info perfJSONInfo, results []any) error {
	if len(results) == 0 {
		return errors.New("no result to write")
	}
	doc := perfJSON{TestInfo: info, Results: results[len(results)-1], AllResults: results}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// peakRate is perftest's BW peak over a run's progress samples: the
// highest rate over any stretch of the run that moved at least window
// bytes (perftest takes the best tx-depth-long stretch of its per-message
// timestamps; the control socket reports completions in batches, so a
// stretch here spans whole batches). Samples are in time order with
// cumulative bytes; 0 if no stretch is long enough or takes no time.
func peakRate(samples []perfSample, window uint64) float64 {
	best := 0.0
	i := 0
	for j := 1; j < len(samples); j++ {
		// Move i as far right as the stretch i..j still moves window bytes.
		for i+1 < j && samples[j].bytes-samples[i+1].bytes >= window {
			i++
		}
		moved := samples[j].bytes - samples[i].bytes
		dt := samples[j].at.Sub(samples[i].at)
		if moved < window || dt <= 0 {
			continue
		}
		best = max(best, float64(moved)/dt.Seconds())
	}
	return best
}

// perfSample is cumulative bytes completed at a time.
type perfSample struct {
	at    time.Time
	bytes uint64
}

// mergeSamples merges several QPs' cumulative samples into the total's:
// at each sample of any QP, the sum of every QP's latest count.
func mergeSamples(per [][]perfSample) []perfSample {
	type ev struct {
		at    time.Time
		delta uint64
	}
	var evs []ev
	for _, s := range per {
		var last uint64
		for _, x := range s {
			evs = append(evs, ev{x.at, x.bytes - last})
			last = x.bytes
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return a.at.Compare(b.at) })
	out := make([]perfSample, 0, len(evs))
	var total uint64
	for _, e := range evs {
		total += e.delta
		if n := len(out); n > 0 && out[n-1].at.Equal(e.at) {
			out[n-1].bytes = total
			continue
		}
		out = append(out, perfSample{e.at, total})
	}
	return out
}

// cAltHex formats v as C's printf("%#0<width>x"): "0x" and hex digits
// zero-padded to width in all, or width zeros for 0, which gets no 0x.
func cAltHex(v uint64, width int) string {
	if v == 0 {
		return strings.Repeat("0", width)
	}
	return fmt.Sprintf("0x%0*x", max(width-2, 0), v)
}
