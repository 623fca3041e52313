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
#   - 64-byte UDP packets per second forwarded to host B, with two
#     senders: trafgen (Debian netsniff-ng; one thread on a packet-mmap
#     ring, 64-byte UDP frames with consecutive IPv4 IDs as a Linux UDP
#     socket sends them) at the rate it can, to a socket that never reads
#     (perl, from Debian's essential perl-base), which shows the switch's
#     forwarding rate; and iperf3 -u -l 64 -b 0, whose single sender
#     thread tops out near 400k pps on a 2-core machine. Both count the
#     datagrams that reached host B's UDP layer (Udp InDatagrams + InErrors
#     of B's namespace, /proc/net/snmp: queued to the socket or dropped
#     because its buffer was full), whether or not a receiver kept up; for
#     iperf3 also what its receiver read (its report: total - lost),
#   - ping RTT, the average of 50 pings at 10 ms intervals; then, with
#     every switch still running, --rtt-rounds rounds of 10 pings through
#     each switch in turn (the order rotating), so that the machine's
#     drift over the run (a virtual machine's neighbours, its vCPUs'
#     wake-ups) weighs on every switch alike: mean and median of all
#     those samples per switch.
# It prints a markdown table on stdout and, with --json FILE, writes the
# figures as JSON too.
#
# Needs root (namespaces, TAPs), ip, iperf3, ping, trafgen, vde_switch and either
# go (to build emuswitch from this checkout) or EMUSWITCH=/path/to/binary.
# It installs nothing. Everything it creates (namespaces, TAPs, veths, the
# bridge, processes, sockets) lives in its own namespaces or a temporary
# directory and is removed on exit, also on Ctrl-C or an error: nothing
# touches the interfaces of the namespace it is started from.
#
# Usage: sudo bench/switch_compare.sh [--time SECONDS] [--json FILE] [--only emuswitch,vde,bridge]
#                                    [--rtt-rounds N]
#
# With EMUSWITCH_BASELINE=/path/to/an/older/emuswitch a fourth row
# measures that binary in the same run (first, in namespaces of its own):
# before/after figures under the same load of the machine.
set -euo pipefail

SECS=10
JSON=""
ONLY="emuswitch,vde,bridge"
RTT_ROUNDS=20
while [[ $# -gt 0 ]]; do
	case "$1" in
	--time) SECS="$2"; shift 2 ;;
	--json) JSON="$2"; shift 2 ;;
	--only) ONLY="$2"; shift 2 ;;
	--rtt-rounds) RTT_ROUNDS="$2"; shift 2 ;;
	-h | --help) sed -n '2,44p' "$0"; exit 0 ;;
	*) echo "switch_compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$SECS" =~ ^[0-9]+$ && "$SECS" -ge 1 ]] || { echo "switch_compare.sh: --time $SECS: a whole number of seconds, at least 1" >&2; exit 2; }
for o in ${ONLY//,/ }; do
	case "$o" in
	emuswitch | vde | bridge) ;;
	*) echo "switch_compare.sh: --only $ONLY: $o is not one of emuswitch, vde, bridge" >&2; exit 2 ;;
	esac
done
[[ "$RTT_ROUNDS" =~ ^[0-9]+$ ]] || { echo "switch_compare.sh: --rtt-rounds $RTT_ROUNDS: a whole number" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
	echo "switch_compare.sh: needs root (network namespaces, TAP devices)" >&2
	exit 1
fi
missing=()
for t in ip iperf3 ping trafgen vde_switch; do
	command -v "$t" >/dev/null || missing+=("$t")
done
if [[ -z "${EMUSWITCH:-}" ]] && ! command -v go >/dev/null; then
	missing+=("go (or set EMUSWITCH to an emuswitch binary)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
	echo "switch_compare.sh: missing: ${missing[*]}" >&2
	echo "  Debian/Ubuntu: apt-get install iproute2 iperf3 iputils-ping netsniff-ng vde2" >&2
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

# udp_in NS: UDP datagrams that reached a socket in NS so far: queued
# (InDatagrams) or dropped because its buffer was full (InErrors). A port
# nobody listens on would not do: the kernel counts a GSO train for a
# closed port as one NoPorts, not per datagram.
udp_in() {
	ip netns exec "$1" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 + $4 }' /proc/net/snmp
}

# mac NS IF: the interface's MAC address.
mac() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }

# measure NAME NS_A IF_A NS_B IF_B SRC_A DST_B: fills
# R_<NAME>_{tcp,fwd,pps,rd,rtt}.
measure() {
	local name=$1 a=$2 ifa=$3 b=$4 ifb=$5 src=$6 dst=$7 out rtt tcp fwd pps rd srv in0 in1
	wait_ping "$a" "$dst"
	PING_NAMES+=("$name")
	PING_NS[$name]=$a
	PING_DST[$name]=$dst
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
	# 64-byte frames: 14 + 20 + 8 + 22 bytes of payload.
	cat >"$TMP/trafgen-$name.cfg" <<-EOF
		{
		  eth(da=$(mac "$b" "$ifb"), sa=$(mac "$a" "$ifa")),
		  ipv4(saddr=$src, daddr=$dst, id=dinc(), df),
		  udp(sp=40000, dp=5209),
		  fill(0x41, 22)
		}
	EOF
	ip netns exec "$b" perl -MIO::Socket::INET -e \
		'my $s = IO::Socket::INET->new(LocalPort => 5209, Proto => "udp") or die "bind: $!"; sleep 3600' &
	srv=$!
	sleep 0.3
	in0=$(udp_in "$b")
	ip netns exec "$a" timeout -s INT "$SECS" trafgen --dev "$ifa" --conf "$TMP/trafgen-$name.cfg" --cpus 1 -q >"$TMP/trafgen-$name.log" 2>&1 || true
	sleep 0.2
	in1=$(udp_in "$b")
	fwd=$(((in1 - in0) / SECS))
	kill "$srv"
	wait "$srv" || true

	in0=$(udp_in "$b")
	out=$(ip netns exec "$a" iperf3 -c "$dst" -p 5202 -u -l 64 -b 0 -t "$SECS" -f m)
	in1=$(udp_in "$b")
	pps=$(((in1 - in0) / SECS))
	# Receiver line: ... LOST/TOTAL (PCT%) receiver; read = TOTAL - LOST.
	rd=$(awk -v secs="$SECS" '/receiver/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) { split($i, x, "/"); printf "%d", (x[2] - x[1]) / secs } }' <<<"$out")
	wait "$srv" || true

	printf -v "R_${name}_rtt" '%s' "${rtt:-NA}"
	printf -v "R_${name}_tcp" '%s' "${tcp:-NA}"
	printf -v "R_${name}_fwd" '%s' "${fwd:-NA}"
	printf -v "R_${name}_pps" '%s' "${pps:-NA}"
	printf -v "R_${name}_rd" '%s' "${rd:-NA}"
	log "$name: TCP ${tcp:-NA} Gb/s, UDP-64 trafgen ${fwd:-NA} pps, iperf3 ${pps:-NA} pps delivered to the host (${rd:-NA} read by iperf3), RTT ${rtt:-NA} ms"
}

# run_emuswitch NAME BINARY NET: measures BINARY as R_NAME_*, the hosts
# at 10.77.NET.1 and .2.
run_emuswitch() {
	local name=$1 bin=$2 net=$3
	local a=sc${ID}${net}a b=sc${ID}${net}b
	newns "$a"
	newns "$b"
	cat >"$TMP/lab.yaml" <<-EOF
		name: sc$ID$net
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
	"$bin" --lab "$TMP/lab.yaml" --node sw1 --port "p1=tap:eth0@$a" --port "p2=tap:eth0@$b" \
		--control "$TMP/$name.ctl" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	PIDS+=($!)
	for _ in $(seq 100); do grep -q ready "$TMP/$name.out" && break; sleep 0.1; done
	grep -q ready "$TMP/$name.out" || { log "$name did not start:"; cat "$TMP/$name.err" >&2; return 1; }
	addr "$a" eth0 "10.77.$net.1/24"
	addr "$b" eth0 "10.77.$net.2/24"
	measure "$name" "$a" eth0 "$b" eth0 "10.77.$net.1" "10.77.$net.2"
	printf -v "RSS_$name" '%s' "$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/${PIDS[-1]}/status" 2>/dev/null || echo NA)"
	# Left running for the interleaved RTT rounds; cleanup stops it.
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
	measure vde "$a" vdeA "$b" vdeB 10.77.2.1 10.77.2.2
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
	measure bridge "$a" eth0 "$b" eth0 10.77.3.1 10.77.3.2
}

R_emuswitch_tcp=NA R_emuswitch_fwd=NA R_emuswitch_pps=NA R_emuswitch_rd=NA R_emuswitch_rtt=NA RSS_emuswitch=NA
R_baseline_tcp=NA R_baseline_fwd=NA R_baseline_pps=NA R_baseline_rd=NA R_baseline_rtt=NA RSS_baseline=NA
R_vde_tcp=NA R_vde_fwd=NA R_vde_pps=NA R_vde_rd=NA R_vde_rtt=NA
R_bridge_tcp=NA R_bridge_fwd=NA R_bridge_pps=NA R_bridge_rd=NA R_bridge_rtt=NA
PING_NAMES=()
declare -A PING_NS PING_DST
[[ -n "${EMUSWITCH_BASELINE:-}" ]] && run_emuswitch baseline "$EMUSWITCH_BASELINE" 4
[[ ",$ONLY," == *,emuswitch,* ]] && run_emuswitch emuswitch "$EMU" 1
[[ ",$ONLY," == *,vde,* ]] && run_vde
[[ ",$ONLY," == *,bridge,* ]] && run_bridge

ratio() { awk -v x="$1" -v y="$2" 'BEGIN { if (x == "NA" || y == "NA" || y == 0) print "NA"; else printf "%.2fx", x / y }'; }

# Interleaved RTT: every switch is still up; each round pings through each
# of them in turn, starting one further along each round.
n=${#PING_NAMES[@]}
if ((RTT_ROUNDS > 0 && n > 0)); then
	log "interleaved ping: $RTT_ROUNDS rounds of 10 pings through each of ${PING_NAMES[*]}"
	for r in $(seq 0 $((RTT_ROUNDS - 1))); do
		for k in $(seq 0 $((n - 1))); do
			name=${PING_NAMES[$(((r + k) % n))]}
			ip netns exec "${PING_NS[$name]}" ping -c 10 -i 0.01 "${PING_DST[$name]}" |
				sed -nE 's/.*time=([0-9.]+) ms.*/\1/p' >>"$TMP/rtt-$name"
		done
	done
fi
# rtt_stat NAME mean|median: of the interleaved samples, in ms.
rtt_stat() {
	[[ -s "$TMP/rtt-$1" ]] || { echo NA; return; }
	sort -g "$TMP/rtt-$1" | awk -v what="$2" '{ v[NR] = $1; s += $1 } END {
		if (what == "mean") printf "%.3f", s / NR
		else if (NR % 2) printf "%.3f", v[(NR + 1) / 2]
		else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "| switch | iperf3 TCP (Gb/s) | UDP 64 B to host B, trafgen (pps) | UDP 64 B to host B, iperf3 (pps) | UDP 64 B read by iperf3 (pps) | ping RTT avg (ms) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
if [[ -n "${EMUSWITCH_BASELINE:-}" ]]; then
	echo "| emuswitch baseline ($(basename "$EMUSWITCH_BASELINE")${TAPFWD_MODE:+, TAPFWD_MODE=$TAPFWD_MODE}) | $R_baseline_tcp | $R_baseline_fwd | $R_baseline_pps | $R_baseline_rd | $R_baseline_rtt |"
fi
echo "| emuswitch (2 TAP ports) | $R_emuswitch_tcp | $R_emuswitch_fwd | $R_emuswitch_pps | $R_emuswitch_rd | $R_emuswitch_rtt |"
echo "| vde_switch (2 TAPs) | $R_vde_tcp | $R_vde_fwd | $R_vde_pps | $R_vde_rd | $R_vde_rtt |"
echo "| Linux bridge (veth) | $R_bridge_tcp | $R_bridge_fwd | $R_bridge_pps | $R_bridge_rd | $R_bridge_rtt |"
echo "| emuswitch / vde_switch | $(ratio "$R_emuswitch_tcp" "$R_vde_tcp") | $(ratio "$R_emuswitch_fwd" "$R_vde_fwd") | $(ratio "$R_emuswitch_pps" "$R_vde_pps") | $(ratio "$R_emuswitch_rd" "$R_vde_rd") | $(ratio "$R_emuswitch_rtt" "$R_vde_rtt") |"
echo
echo "$(nproc) CPUs, kernel $(uname -r), ${SECS} s per iperf3 run, 50 pings at 10 ms, MTU 1500; emuswitch peak RSS ${RSS_emuswitch} MiB."
if ((RTT_ROUNDS > 0 && n > 0)); then
	echo
	echo "Interleaved ping RTT ($RTT_ROUNDS rounds of 10 pings at 10 ms through each switch in turn):"
	echo
	echo "| switch | samples | mean (ms) | median (ms) |"
	echo "| --- | ---: | ---: | ---: |"
	for name in "${PING_NAMES[@]}"; do
		echo "| $name | $(wc -l <"$TMP/rtt-$name") | $(rtt_stat "$name" mean) | $(rtt_stat "$name" median) |"
	done
	if [[ -s "$TMP/rtt-emuswitch" && -s "$TMP/rtt-vde" ]]; then
		echo "| emuswitch / vde_switch | | $(ratio "$(rtt_stat emuswitch mean)" "$(rtt_stat vde mean)") | $(ratio "$(rtt_stat emuswitch median)" "$(rtt_stat vde median)") |"
	fi
fi

if [[ -n "$JSON" ]]; then
	q() { [[ "$1" == NA ]] && echo null || echo "$1"; }
	cat >"$JSON" <<-EOF
		{
		  "seconds": $SECS,
		  "cpus": $(nproc),
		  "kernel": "$(uname -r)",
		  "emuswitch_peak_rss_mib": $(q "$RSS_emuswitch"),
		  "emuswitch_baseline": $([[ -n "${EMUSWITCH_BASELINE:-}" ]] && echo "{\"tcp_gbps\": $(q "$R_baseline_tcp"), \"udp64_trafgen_pps\": $(q "$R_baseline_fwd"), \"udp64_pps\": $(q "$R_baseline_pps"), \"udp64_read_pps\": $(q "$R_baseline_rd"), \"rtt_ms\": $(q "$R_baseline_rtt")}" || echo null),
		  "emuswitch": {"tcp_gbps": $(q "$R_emuswitch_tcp"), "udp64_trafgen_pps": $(q "$R_emuswitch_fwd"), "udp64_pps": $(q "$R_emuswitch_pps"), "udp64_read_pps": $(q "$R_emuswitch_rd"), "rtt_ms": $(q "$R_emuswitch_rtt"), "rtt_interleaved_mean_ms": $(q "$(rtt_stat emuswitch mean)"), "rtt_interleaved_median_ms": $(q "$(rtt_stat emuswitch median)")},
		  "vde_switch": {"tcp_gbps": $(q "$R_vde_tcp"), "udp64_trafgen_pps": $(q "$R_vde_fwd"), "udp64_pps": $(q "$R_vde_pps"), "udp64_read_pps": $(q "$R_vde_rd"), "rtt_ms": $(q "$R_vde_rtt"), "rtt_interleaved_mean_ms": $(q "$(rtt_stat vde mean)"), "rtt_interleaved_median_ms": $(q "$(rtt_stat vde median)")},
		  "bridge": {"tcp_gbps": $(q "$R_bridge_tcp"), "udp64_trafgen_pps": $(q "$R_bridge_fwd"), "udp64_pps": $(q "$R_bridge_pps"), "udp64_read_pps": $(q "$R_bridge_rd"), "rtt_ms": $(q "$R_bridge_rtt"), "rtt_interleaved_mean_ms": $(q "$(rtt_stat bridge mean)"), "rtt_interleaved_median_ms": $(q "$(rtt_stat bridge median)")}
		}
	EOF
	log "wrote $JSON"
fi
