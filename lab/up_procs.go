package lab

import (
	"os"
	"runtime"
	"strconv"
)

// daemonEnv is the environment of a lab's daemons: this process's, with
// GOMAXPROCS set to the machine's CPUs shared among the daemons (at least
// one each), unless the user set GOMAXPROCS.
//
// Why: a lab runs more busy processes than a laptop has cores (three for
// two hosts behind a switch), and each Go runtime sized for every core
// wakes idle threads to steal work whenever a goroutine becomes runnable
// (a frame batch handed from a port's reader to the loop): futex wake-ups
// and spinning threads that, on a machine whose idle CPUs halt, cost more
// than the hand-off. Measured on two cores, examples/two-hosts.yaml,
// write_bw -s 65536: 7.6-11.9 Gb/s with GOMAXPROCS 2, 12.7-14.1 with 1;
// iperf3 through the NICs 2.9-3.2 against 3.4-3.7 Gb/s.
func daemonEnv(daemons int) []string {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || daemons <= 0 {
		return nil // inherit
	}
	return append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(daemonProcs(runtime.NumCPU(), daemons)))
}

// daemonProcs shares cpus among daemons, at least one each.
func daemonProcs(cpus, daemons int) int {
	return max(1, cpus/max(daemons, 1))
}
