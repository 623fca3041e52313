#!/usr/bin/env bash
# lab_figures.sh: the figures of a real lab, measured with emulab itself.
#
#   - `emulab up` and `emulab down` of a 16-host, 2-switch lab
#     (bench/sixteen.yaml), wall time, --runs times;
#   - in examples/two-hosts.yaml (emunic hosts, 100G links, MTU 4200):
#     `emulab perf write_bw`, `read_bw` and `send_bw -s 65536 -m 4096`
#     (average and peak Gb/s), `write_lat -s 2` (typical and 99 % us), and
#     the switch port toward the receiver's transport counters after each
#     test (drops, holds, waits for room in the shared-memory ring toward
#     the receiver) and the sleeps of the switch's reader on the sender's
#     ring;
#   - iperf3 TCP between the two hosts' kernels through emunic, emuswitch
#     and emunic (the full NIC path), 5 s;
#   - the peak resident memory (VmHWM) of emuswitch and of each emunic.
#
# It prints a markdown table per part. Needs root, ip, iperf3 and go (to
# build the commands from this checkout) or EMULAB_BIN=DIR holding emulab,
# emuswitch and emunic. Labs live under a temporary state directory and
# are taken down on exit, also on Ctrl-C or an error.
#
# Usage: sudo bench/lab_figures.sh [--runs N] [--iters N]
set -euo pipefail

RUNS=3
ITERS=5000
while [[ $# -gt 0 ]]; do
	case "$1" in
	--runs) RUNS="$2"; shift 2 ;;
	--iters) ITERS="$2"; shift 2 ;;
	-h | --help) sed -n '2,22p' "$0"; exit 0 ;;
	*) echo "lab_figures.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "lab_figures.sh: --runs $RUNS: a positive whole number" >&2; exit 2; }
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || { echo "lab_figures.sh: --iters $ITERS: a positive whole number" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
	echo "lab_figures.sh: needs root (network namespaces, TAP devices)" >&2
	exit 1
fi
for t in ip iperf3; do
	command -v "$t" >/dev/null || { echo "lab_figures.sh: $t is missing (Debian: apt-get install iproute2 iperf3)" >&2; exit 1; }
done

# shellcheck source=lab_env.sh
source "$(dirname "$0")/lab_env.sh"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# --- up / down of 16 hosts on 2 switches ---------------------------------
echo "## up / down: bench/sixteen.yaml (16 emunic hosts, 2 emuswitch)"
echo
echo "| run | up (s) | down (s) |"
echo "| ---: | ---: | ---: |"
for r in $(seq 1 "$RUNS"); do
	t0=$(now)
	emulab up -q --state-dir "$state" --hosts nic "$here/sixteen.yaml" >/dev/null
	t1=$(now)
	emulab exec --state-dir "$state" bench-sixteen/h1 -- ping -c 1 -W 2 10.0.0.16 >/dev/null
	t2=$(now)
	emulab down --state-dir "$state" bench-sixteen >/dev/null
	t3=$(now)
	echo "| $r | $(secs "$t0" "$t1") | $(secs "$t2" "$t3") |"
done
echo

# --- two hosts: RDMA, TCP, memory ----------------------------------------
lab=two-hosts
emulab up -q --state-dir "$state" --hosts nic "$root/examples/two-hosts.yaml" >/dev/null

rss() { # rss DAEMON...: VmHWM in MiB of each of this lab's daemons (its pid files: not another lab's)
	local d p
	for d in "$@"; do
		p=$(cat "$state/$lab/run/$d.pid" 2>/dev/null) || { printf 'NA '; continue; }
		awk '/VmHWM/ { printf "%.1f ", $2 / 1024 }' "/proc/$p/status" 2>/dev/null || printf 'NA '
	done
}

echo "## RDMA between h1 and h2 of examples/two-hosts.yaml (emulab perf, -s 65536 -m 4096 -n $ITERS)"
echo
echo "| run | test | BW average (Gb/s) | BW peak (Gb/s) | sw1:p2 transport drops | sw1:p2 holds | sw1:p2 ring full | sw1:p1 ring sleeps |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
counter() { emulab stats --state-dir "$state" "$lab/sw1:p2" | awk -v n="$1:" '$1 == n { print $2 }'; }
counter1() { emulab stats --state-dir "$state" "$lab/sw1:p1" | awk -v n="$1:" '$1 == n { print $2 }'; }
for r in $(seq 1 "$RUNS"); do
	for t in write_bw read_bw send_bw; do
		d0=$(counter transport_tx_queue_drop)
		h0=$(counter transport_tx_hold)
		f0=$(counter transport_tx_ring_full)
		s0=$(counter1 transport_rx_ring_sleeps)
		row=$(emulab perf --state-dir "$state" "$t" "$lab/h1" "$lab/h2" -s 65536 -m 4096 -n "$ITERS" --report_gbits |
			awk '/^ *#bytes/ { getline; print $4, $3 }')
		d1=$(counter transport_tx_queue_drop)
		h1=$(counter transport_tx_hold)
		f1=$(counter transport_tx_ring_full)
		s1=$(counter1 transport_rx_ring_sleeps)
		read -r avg peak <<<"$row"
		echo "| $r | $t | $avg | $peak | $((d1 - d0)) | $((h1 - h0)) | $((f1 - f0)) | $((s1 - s0)) |"
	done
done
echo
echo "| run | write_lat -s 2 -n 1000: typical (us) | 99 % (us) |"
echo "| ---: | ---: | ---: |"
for r in $(seq 1 "$RUNS"); do
	row=$(emulab perf --state-dir "$state" write_lat "$lab/h1" "$lab/h2" -s 2 -n 1000 |
		awk '/^ *#bytes/ { getline; print $5, $8 }')
	read -r typ p99 <<<"$row"
	echo "| $r | $typ | $p99 |"
done
echo

echo "## iperf3 TCP h1 -> h2 through emunic, emuswitch, emunic (5 s)"
echo
echo "| run | Gb/s (receiver) | retransmits |"
echo "| ---: | ---: | ---: |"
for r in $(seq 1 "$RUNS"); do
	emulab exec --state-dir "$state" "$lab/h2" -- iperf3 -s -1 -D -B 10.0.0.2 >/dev/null
	sleep 0.3
	out=$(emulab exec --state-dir "$state" "$lab/h1" -- iperf3 -c 10.0.0.2 -t 5 -J)
	gbps=$(printf '%s' "$out" | awk -F'[:,]' '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { printf "%.2f", $2 / 1e9; exit }')
	retr=$(printf '%s' "$out" | awk -F'[:,]' '/"sum_sent"/ { f = 1 } f && /"retransmits"/ { gsub(/ /, "", $2); print $2; exit }')
	echo "| $r | $gbps | $retr |"
done
echo

echo "## peak resident memory (VmHWM, MiB) after the runs above"
echo
echo "| emuswitch | emunic h1, h2 |"
echo "| ---: | ---: |"
echo "| $(rss emuswitch-sw1) | $(rss emunic-h1 emunic-h2) |"
