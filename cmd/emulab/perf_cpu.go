package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// --cpu_util, as perftest computes it (get_cpu_stats, calc_cpu_util in
// perftest_resources.c and perftest_parameters.c): the first line of
// /proc/stat, the machine's "cpu" line summed over every CPU, read at the
// start and the end of the measurement; the utilisation is the user time
// over the user plus the idle time. perftest reads the second word (user)
// and the fifth (idle) and nothing else: nice, system, iowait, irq and
// softirq time count neither as busy nor as idle. That is kept, so the
// figure compares with perftest's; on an emulated fabric it is the whole
// machine's, the emunics and switches included, not only this process's.

// perfCPUStat is one reading: user and idle jiffies.
type perfCPUStat struct{ user, idle int64 }

// parseProcStat reads the aggregate "cpu" line of /proc/stat's text.
func parseProcStat(text string) (perfCPUStat, error) {
	line, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return perfCPUStat{}, fmt.Errorf("/proc/stat: first line %q is not the cpu line", line)
	}
	user, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return perfCPUStat{}, fmt.Errorf("/proc/stat: cpu user %q: %w", f[1], err)
	}
	idle, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return perfCPUStat{}, fmt.Errorf("/proc/stat: cpu idle %q: %w", f[4], err)
	}
	return perfCPUStat{user: user, idle: idle}, nil
}

func readCPUStat() (perfCPUStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return perfCPUStat{}, err
	}
	return parseProcStat(string(b))
}

// cpuUtil is calc_cpu_util: percent of user time in user plus idle time
// between two readings, 0 when neither moved.
func cpuUtil(a, b perfCPUStat) float64 {
	u, i := b.user-a.user, b.idle-a.idle
	if u+i == 0 {
		return 0
	}
	return float64(u) / float64(u+i) * 100
}

// perfCPUMeter measures one stretch of a run when on; off, it measures
// nothing and its result is nil.
type perfCPUMeter struct {
	on    bool
	start perfCPUStat
	err   error
}

func (m *perfCPUMeter) begin() {
	if m.on {
		m.start, m.err = readCPUStat()
	}
}

// end returns the utilisation since begin, or an error naming /proc/stat.
func (m *perfCPUMeter) end() (*float64, error) {
	if !m.on {
		return nil, nil
	}
	if m.err != nil {
		return nil, fmt.Errorf("--cpu_util: %w", m.err)
	}
	st, err := readCPUStat()
	if err != nil {
		return nil, fmt.Errorf("--cpu_util: %w", err)
	}
	v := cpuUtil(m.start, st)
	return &v, nil
}
