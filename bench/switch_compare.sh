#!/usr/bin/env bash
# switch_compare.sh: emuswitch vs vde_switch vs the Linux bridge, side by
# side in one run on this machine.
#
# Two hosts in network namespaces are joined by, in turn,
#   (a) emuswitch with two TAP ports (one in each host's namespace),
#   (b) vde_switch with two TAPs (Debian package vde2), moved into the
#       hosts' namespaces,
#   (c) a Linux bridge with two veth pairs,
# and each is measured with
#   - iperf3 TCP, host A -> host B, in Gb/s (receiver side),
#   - delivered 64-byte UDP packets per second (iperf3 -u -l 64 -b 0:
#     the receiver's count of datagrams that arrived, over the run time),
#   - ping RTT, the average of 50 pings at 10 ms intervals.
# It prints a markdown table on stdout and, with --json FILE, writes the
# figures as JSON too.
#
# Needs root (namespaces, TAPs), ip, iperf3, ping, vde_switch and either
# go (to build emuswitch from this checkout) or EMUSWITCH=/path/to/binary.
# It installs nothing. Everything it creates (namespaces, TAPs, veths, the
# bridge, processes, sockets) lives in its own namespaces or a temporary
# directory and is removed on exit, also on Ctrl-C or an error: nothing
# touches the interfaces of the namespace it is started from.
#
# Usage: sudo bench/switch_compare.sh [--time SECONDS] [--json FILE] [--only emuswitch,vde,bridge]
set -euo pipefail

SECS=10
JSON=""
ONLY="emuswitch,vde,bridge"
while [[ $# -gt 0 ]]; do
	case "$1" in
	--time) SECS="$2"; shift 2 ;;
	--json) JSON="$2"; shift 2 ;;
	--only) ONLY="$2"; shift 2 ;;
	-h | --help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "switch_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "switch_compare.sh: --time $SECS: a whole number of seconds" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
	echo "switch_compare.sh: needs root (network namespaces, TAP devices)" >&2
	exit 1
fi
missing=()
for t in ip iperf3 ping vde_switch; do
	command -v "$t" >/dev/null || missing+=("$t")
done
if [[ -z "${EMUSWITCH:-}" ]] && ! command -v go >/dev/null; then
	missing+=("go (or set EMUSWITCH to an emuswitch binary)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
	echo "switch_compare.sh: missing: ${missing[*]}" >&2
	echo "  Debian/Ubuntu: apt-get install iproute2 iperf3 iputils-ping vde2" >&2
	exit 1
fi

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TMP=$(mktemp -d /tmp/switch_compare.XXXXXX)
ID=$$
NS=()
PIDS=()

cleanup() {
	set +e
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	for n in "${NS[@]}"; do
		# Processes left inside (iperf3 servers) go first, then the
		# namespace, with its TAPs, veths and bridge.
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns delete "$n" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "switch_compare: $*" >&2; }

if [[ -n "${EMUSWITCH:-}" ]]; then
	EMU="$EMUSWITCH"
else
	log "building emuswitch"
	(cd "$ROOT" && go build -o "$TMP/emuswitch" ./cmd/emuswitch)
	EMU="$TMP/emuswitch"
fi

newns() {
	ip netns add "$1"
	NS+=("$1")
	ip -n "$1" link set lo up
}

# addr NS IF ADDR: address and up.
addr() {
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$1" link set "$2" up
}

# wait_ping NS DST: until the path works (ARP, ports up).
wait_ping() {
	for _ in $(seq 100); do
		ip netns exec "$1" ping -c 1 -W 1 "$2" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	log "no ping from $1 to $2"
	return 1
}

# measure NAME NS_A NS_B DST_B: fills R_<NAME>_{tcp,pps,rtt}.
measure() {
	local name=$1 a=$2 b=$3 dst=$4 out rtt tcp pps srv
	wait_ping "$a" "$dst"
	out=$(ip netns exec "$a" ping -c 50 -i 0.01 -q "$dst")
	rtt=$(awk -F'[/ ]' '/^rtt|^round-trip/ {print $8}' <<<"$out")

	ip netns exec "$b" iperf3 -s -1 -p 5201 >"$TMP/srv-$name-tcp.log" 2>&1 &
	srv=$!
	sleep 0.5
	out=$(ip netns exec "$a" iperf3 -c "$dst" -p 5201 -t "$SECS" -f m)
	tcp=$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") printf "%.2f", $(i-1) / 1000 }' <<<"$out")
	wait "$srv" || true

	ip netns exec "$b" iperf3 -s -1 -p 5202 >"$TMP/srv-$name-udp.log" 2>&1 &
	srv=$!
	sleep 0.5
	out=$(ip netns exec "$a" iperf3 -c "$dst" -p 5202 -u -l 64 -b 0 -t "$SECS" -f m)
	# Receiver line: ... LOST/TOTAL (PCT%) receiver; delivered = TOTAL - LOST.
	pps=$(awk -v secs="$SECS" '/receiver/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) { split($i, x, "/"); printf "%d", (x[2] - x[1]) / secs } }' <<<"$out")
	wait "$srv" || true

	printf -v "R_${name}_rtt" '%s' "${rtt:-NA}"
	printf -v "R_${name}_tcp" '%s' "${tcp:-NA}"
	printf -v "R_${name}_pps" '%s' "${pps:-NA}"
	log "$name: TCP ${tcp:-NA} Gb/s, UDP-64 ${pps:-NA} pps delivered, RTT ${rtt:-NA} ms"
}

run_emuswitch() {
	local a=sc${ID}ea b=sc${ID}eb
	newns "$a"
	newns "$b"
	cat >"$TMP/lab.yaml" <<-EOF
		name: sc$ID
		topology:
		  defaults: {rate: 100G, delay: 0us, mtu: 1500}
		  nodes:
		    sw1: {kind: switch, cut_through: true}
		    h1: {kind: nic}
		    h2: {kind: nic}
		  links:
		    - endpoints: ["h1:eth0", "sw1:p1"]
		    - endpoints: ["h2:eth0", "sw1:p2"]
	EOF
	"$EMU" --lab "$TMP/lab.yaml" --node sw1 --port "p1=tap:eth0@$a" --port "p2=tap:eth0@$b" \
		--control "$TMP/sw1.ctl" >"$TMP/emuswitch.out" 2>"$TMP/emuswitch.err" &
	PIDS+=($!)
	for _ in $(seq 100); do grep -q ready "$TMP/emuswitch.out" && break; sleep 0.1; done
	grep -q ready "$TMP/emuswitch.out" || { log "emuswitch did not start:"; cat "$TMP/emuswitch.err" >&2; return 1; }
	addr "$a" eth0 10.77.1.1/24
	addr "$b" eth0 10.77.1.2/24
	measure emuswitch "$a" "$b" 10.77.1.2
	EMU_RSS=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/${PIDS[-1]}/status" 2>/dev/null || echo NA)
	kill "${PIDS[-1]}"
}

run_vde() {
	local a=sc${ID}va b=sc${ID}vb s=sc${ID}vs
	newns "$a"
	newns "$b"
	newns "$s"
	# vde_switch creates its TAPs in the namespace it runs in: its own,
	# from which they are moved to the hosts.
	ip netns exec "$s" vde_switch -d -p "$TMP/vde.pid" -s "$TMP/vde.ctl" -t vdeA -t vdeB
	for _ in $(seq 50); do [[ -s "$TMP/vde.pid" ]] && break; sleep 0.1; done
	PIDS+=("$(cat "$TMP/vde.pid")")
	for _ in $(seq 50); do ip -n "$s" link show vdeB >/dev/null 2>&1 && break; sleep 0.1; done
	ip -n "$s" link set vdeA netns "$a"
	ip -n "$s" link set vdeB netns "$b"
	addr "$a" vdeA 10.77.2.1/24
	addr "$b" vdeB 10.77.2.2/24
	measure vde "$a" "$b" 10.77.2.2
	kill "${PIDS[-1]}"
}

run_bridge() {
	local a=sc${ID}ba b=sc${ID}bb s=sc${ID}bs
	newns "$a"
	newns "$b"
	newns "$s"
	ip -n "$s" link add br0 type bridge
	ip -n "$s" link set br0 up
	for h in a b; do
		local ns=$a
		[[ $h == b ]] && ns=$b
		ip -n "$s" link add "v$h" type veth peer name eth0 netns "$ns"
		ip -n "$s" link set "v$h" master br0
		ip -n "$s" link set "v$h" up
	done
	addr "$a" eth0 10.77.3.1/24
	addr "$b" eth0 10.77.3.2/24
	measure bridge "$a" "$b" 10.77.3.2
}

R_emuswitch_tcp=NA R_emuswitch_pps=NA R_emuswitch_rtt=NA EMU_RSS=NA
R_vde_tcp=NA R_vde_pps=NA R_vde_rtt=NA
R_bridge_tcp=NA R_bridge_pps=NA R_bridge_rtt=NA
[[ ",$ONLY," == *,emuswitch,* ]] && run_emuswitch
[[ ",$ONLY," == *,vde,* ]] && run_vde
[[ ",$ONLY," == *,bridge,* ]] && run_bridge

ratio() { awk -v x="$1" -v y="$2" 'BEGIN { if (x == "NA" || y == "NA" || y == 0) print "NA"; else printf "%.2fx", x / y }'; }

echo "| switch | iperf3 TCP (Gb/s) | UDP 64 B delivered (pps) | ping RTT avg (ms) |"
echo "| --- | ---: | ---: | ---: |"
echo "| emuswitch (2 TAP ports) | $R_emuswitch_tcp | $R_emuswitch_pps | $R_emuswitch_rtt |"
echo "| vde_switch (2 TAPs) | $R_vde_tcp | $R_vde_pps | $R_vde_rtt |"
echo "| Linux bridge (veth) | $R_bridge_tcp | $R_bridge_pps | $R_bridge_rtt |"
echo "| emuswitch / vde_switch | $(ratio "$R_emuswitch_tcp" "$R_vde_tcp") | $(ratio "$R_emuswitch_pps" "$R_vde_pps") | $(ratio "$R_emuswitch_rtt" "$R_vde_rtt") |"
echo
echo "$(nproc) CPUs, kernel $(uname -r), ${SECS} s per iperf3 run, 50 pings at 10 ms, MTU 1500; emuswitch peak RSS ${EMU_RSS} MiB."

if [[ -n "$JSON" ]]; then
	q() { [[ "$1" == NA ]] && echo null || echo "$1"; }
	cat >"$JSON" <<-EOF
		{
		  "seconds": $SECS,
		  "cpus": $(nproc),
		  "kernel": "$(uname -r)",
		  "emuswitch_peak_rss_mib": $(q "$EMU_RSS"),
		  "emuswitch": {"tcp_gbps": $(q "$R_emuswitch_tcp"), "udp64_pps": $(q "$R_emuswitch_pps"), "rtt_ms": $(q "$R_emuswitch_rtt")},
		  "vde_switch": {"tcp_gbps": $(q "$R_vde_tcp"), "udp64_pps": $(q "$R_vde_pps"), "rtt_ms": $(q "$R_vde_rtt")},
		  "bridge": {"tcp_gbps": $(q "$R_bridge_tcp"), "udp64_pps": $(q "$R_bridge_pps"), "rtt_ms": $(q "$R_bridge_rtt")}
		}
	EOF
	log "wrote $JSON"
fi
