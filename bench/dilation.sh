#!/usr/bin/env bash
# dilation.sh: what time_dilation buys the built-in RDMA engine.
#
# For each DILATION:RATE pair (default 1:5G 10:5G 1:10G 10:10G 10:40G 10:100G) it brings
# up two emunic hosts behind one emuswitch (MTU 4200, 1 us links, the
# given rate, `time_dilation: DILATION`), runs `emulab perf write_bw -s
# 65536 -n ITERS --report_gbits` from h1 to h2 (figures in the lab's
# time), and prints per run the average and peak, the wall-clock rate
# behind the average (average / dilation), and what congestion control
# saw: the ECN marks of the switch port toward h2 and the CNPs h1 handled.
#
# Needs root, ip and go (to build the commands from this checkout) or
# EMULAB_BIN=DIR holding emulab, emuswitch and emunic. Labs live under a
# temporary state directory and are taken down on exit.
#
# Usage: sudo bench/dilation.sh [--iters N] [--runs N] [DILATION:RATE ...]
set -euo pipefail

ITERS=2000
RUNS=1
PAIRS=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--iters) ITERS="$2"; shift 2 ;;
	--runs) RUNS="$2"; shift 2 ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	[1-9]*:[1-9]*) PAIRS+=("$1"); shift ;;
	*) echo "dilation.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ ${#PAIRS[@]} -gt 0 ]] || PAIRS=(1:5G 10:5G 1:10G 10:10G 10:40G 10:100G)
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || { echo "dilation.sh: --iters $ITERS: a positive whole number" >&2; exit 2; }
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "dilation.sh: --runs $RUNS: a positive whole number" >&2; exit 2; }
for p in "${PAIRS[@]}"; do
	[[ "$p" =~ ^[1-9][0-9]*:[1-9][0-9]*[GM]$ ]] || { echo "dilation.sh: $p: want DILATION:RATE, e.g. 4:40G" >&2; exit 2; }
done
if [[ $(id -u) -ne 0 ]]; then
	echo "dilation.sh: needs root (network namespaces, TAP devices)" >&2
	exit 1
fi
command -v ip >/dev/null || { echo "dilation.sh: ip is missing (Debian: apt-get install iproute2)" >&2; exit 1; }

# shellcheck source=lab_env.sh
source "$(dirname "$0")/lab_env.sh"

stat1() { # stat1 NODE[:PORT] NAME [--hw]: one counter of `emulab stats`
	emulab stats --state-dir "$state" ${3:-} "$lab/$1" | awk -v n="$2" '$1 == n || $1 == n ":" { print $2 }'
}

echo "## write_bw -s 65536 -n $ITERS between two emunic hosts, by time_dilation and link rate"
echo
echo "| dilation | link | run | BW average, lab time (Gb/s) | BW peak (Gb/s) | wall-clock rate (Gb/s) | ECN marks toward h2 | CNPs handled by h1 |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for p in "${PAIRS[@]}"; do
	dil=${p%%:*} rate=${p#*:}
	lab="dil$dil-$rate"
	cat >"$tmp/$lab.yaml" <<-YAML
		name: $lab
		time_dilation: $dil
		topology:
		  defaults: {rate: $rate, delay: 1us, mtu: 4200}
		  nodes:
		    sw1: {kind: switch}
		    h1: {kind: nic}
		    h2: {kind: nic}
		  links:
		    - endpoints: ["h1:eth0", "sw1:p1"]
		    - endpoints: ["h2:eth0", "sw1:p2"]
	YAML
	emulab up -q --state-dir "$state" --hosts nic "$tmp/$lab.yaml" >/dev/null
	for r in $(seq 1 "$RUNS"); do
		m0=$(stat1 sw1:p2 tx_prio3_ecn_marked)
		c0=$(stat1 h1 rp_cnp_handled --hw)
		row=$(emulab perf --state-dir "$state" write_bw "$lab/h1" "$lab/h2" -s 65536 -n "$ITERS" --report_gbits |
			awk '/^ *#bytes/ { getline; print $4, $3 }')
		m1=$(stat1 sw1:p2 tx_prio3_ecn_marked)
		c1=$(stat1 h1 rp_cnp_handled --hw)
		read -r avg peak <<<"$row"
		wall=$(awk -v a="$avg" -v d="$dil" 'BEGIN { printf "%.2f", a / d }')
		echo "| $dil | $rate | $r | $avg | $peak | $wall | $((m1 - m0)) | $((c1 - c0)) |"
	done
	emulab down --state-dir "$state" "$lab" >/dev/null
done
