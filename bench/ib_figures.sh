#!/usr/bin/env bash
# ib_figures.sh: the figures of native InfiniBand labs in namespaces,
# measured with emulab itself.
#
#   - examples/ib-rdma.yaml (5 emunic HCAs on 2 emuswitch IB switches,
#     static LIDs): IPoIB ping RTT h1 -> h5 (across both switches, 20
#     pings), `emulab perf write_bw|read_bw|send_bw -s 65536 -n ITERS`
#     (average Gb/s, memory verified), iperf3 TCP over IPoIB h1 -> h4 (5 s),
#     and the daemons' CPU while the lab idles (5 s);
#   - examples/ib-fat-tree.yaml (22 daemons, the subnet manager in h1's
#     emunic): `up` wall time, the SM's converged heavy sweep (nodes, SMPs,
#     duration, as its emunic reports), then leaf2:p5 (to spine1) cut and
#     the wall time until leaf2's routes, as the SM reports them, leave it.
#
# Runs --runs times and prints a markdown table per part. Needs root, ip,
# ping, iperf3 and go (to build from this checkout) or EMULAB_BIN=DIR.
# Labs live under a temporary state directory and are taken down on exit.
#
# Usage: sudo bench/ib_figures.sh [--runs N] [--iters N]
set -euo pipefail

RUNS=3
ITERS=500
while [[ $# -gt 0 ]]; do
	case "$1" in
	--runs) RUNS="$2"; shift 2 ;;
	--iters) ITERS="$2"; shift 2 ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "ib_figures.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "ib_figures.sh: --runs $RUNS: a positive whole number" >&2; exit 2; }
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || { echo "ib_figures.sh: --iters $ITERS: a positive whole number" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
	echo "ib_figures.sh: needs root (network namespaces, TAP devices)" >&2
	exit 1
fi
for t in ip ping iperf3; do
	command -v "$t" >/dev/null || { echo "ib_figures.sh: $t is missing (Debian: apt-get install iproute2 iputils-ping iperf3)" >&2; exit 1; }
done

# shellcheck source=lab_env.sh
source "$(dirname "$0")/lab_env.sh"
S=(--state-dir "$state")

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# avg Gb/s of an emulab perf table (--report_gbits): the row after the header
perfavg() { awk '/BW average\[Gb\/sec\]/ { getline; print $4; exit }'; }

# cpu PIDS...: percent of a core each daemon used over 5 s of idling
ticks() { for p in "$@"; do cat "/proc/$p/stat"; done | awk '{ t += $14 + $15 } END { print t }'; }
cpu() {
	local before after
	before=$(ticks "$@")
	sleep 5
	after=$(ticks "$@")
	awk -v a="$before" -v b="$after" -v n="$#" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) / hz / 5 / n * 100 }'
}

echo "## examples/ib-rdma.yaml: IPoIB and RDMA over native IB (static LIDs)"
echo
echo "| run | ping h1 -> h5 avg (ms) | write_bw (Gb/s) | read_bw (Gb/s) | send_bw (Gb/s) | iperf3 TCP over IPoIB (Gb/s) | idle CPU per daemon (% of a core) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for r in $(seq 1 "$RUNS"); do
	# up's notes (a link schedule it leaves to the simulator) go to a log,
	# not into the table; a failure shows them.
	emulab up -q "${S[@]}" --hosts nic "$root/examples/ib-rdma.yaml" >/dev/null 2>"$tmp/up.log" || { cat "$tmp/up.log" >&2; exit 1; }
	rtt=$(emulab exec "${S[@]}" ib-rdma/h1 -- ping -c 20 -i 0.01 -W 2 10.0.0.5 | awk -F/ '/^rtt/ { print $5 }')
	w=$(emulab perf "${S[@]}" write_bw ib-rdma/h1 ib-rdma/h4 -s 65536 -n "$ITERS" --report_gbits | perfavg)
	rd=$(emulab perf "${S[@]}" read_bw ib-rdma/h2 ib-rdma/h5 -s 65536 -n "$ITERS" --report_gbits | perfavg)
	sd=$(emulab perf "${S[@]}" send_bw ib-rdma/h3 ib-rdma/h4 -s 65536 -n "$ITERS" --report_gbits | perfavg)
	emulab exec "${S[@]}" ib-rdma/h4 -- iperf3 -s -1 -B 10.0.0.4 >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	tcp=$(emulab exec "${S[@]}" ib-rdma/h1 -- iperf3 -c 10.0.0.4 -t 5 -J | awk -F: '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { gsub(/[ ,]/, "", $2); printf "%.2f", $2 / 1e9; exit }')
	wait "$srv" 2>/dev/null || true
	pids=$(pgrep -f "$state/ib-rdma/" | paste -sd' ')
	# shellcheck disable=SC2086
	idle=$(cpu $pids)
	echo "| $r | $rtt | $w | $rd | $sd | $tcp | $idle |"
	emulab down "${S[@]}" ib-rdma >/dev/null
done

echo
echo "## examples/ib-fat-tree.yaml: the subnet manager in namespaces (2 spines, 4 leaves, 16 HCAs)"
echo
echo "| run | up (s) | converged sweep: nodes, SMPs, duration | cut leaf2:p5 -> leaf2 rerouted (s) | ping h5 -> h9 after |"
echo "| ---: | ---: | --- | ---: | --- |"
for r in $(seq 1 "$RUNS"); do
	t0=$(now)
	emulab up -q "${S[@]}" --hosts nic "$root/examples/ib-fat-tree.yaml" >/dev/null 2>"$tmp/up.log" || { cat "$tmp/up.log" >&2; exit 1; }
	t1=$(now)
	sweep=""
	for _ in $(seq 1 200); do
		line=$(emulab ib nodes -l "${S[@]}" ib-fat-tree 2>&1 >/dev/null || true)
		if [[ "$line" == *"last heavy sweep 22 nodes"* ]]; then
			sweep=$(sed -E 's/.*last heavy sweep ([0-9]+) nodes, ([0-9]+) SMPs in ([0-9.]+) ms.*/\1 nodes, \2 SMPs, \3 ms/' <<<"$line")
			break
		fi
		sleep 0.1
	done
	c0=$(now)
	emulab link set "${S[@]}" ib-fat-tree/leaf2:p5 down >/dev/null
	rerouted="(not within 20 s)"
	for _ in $(seq 1 400); do
		if ! emulab ib routes "${S[@]}" ib-fat-tree --node leaf2 2>/dev/null | grep -q ' 005 : '; then
			rerouted=$(secs "$c0" "$(now)")
			break
		fi
		sleep 0.05
	done
	ok=$(emulab exec "${S[@]}" ib-fat-tree/h5 -- ping -c 3 -i 0.2 -W 2 10.0.0.9 | awk '/packets transmitted/ { print $4 "/" $1 }')
	echo "| $r | $(secs "$t0" "$t1") | ${sweep:-(no converged sweep in 20 s)} | $rerouted | $ok |"
	emulab down "${S[@]}" ib-fat-tree >/dev/null
done
