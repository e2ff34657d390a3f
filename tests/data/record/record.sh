#!/usr/bin/env bash
# Record real Linux TCP transfers through a router namespace with known
# impairments and write NAME-snd.pcap, NAME-rcv.pcap, NAME.truth.json.
#
#   record.sh SCENARIO OUTDIR        (SCENARIO: clean loss randloss bottleneck zerowin reorder bursty)
#   record.sh all OUTDIR
#
# Needs root, iproute2, ethtool, tcpdump, nstat, python3, /dev/net/tun.
# Topology (all inside namespaces this script creates and deletes):
#
#   [snd ns] snd0 192.0.2.1 --veth-- rtr0 192.0.2.254 [rtr ns] rtr1 198.51.100.254 --veth-- rcv0 198.51.100.1 [rcv ns]
#
# In the router every packet arriving on rtr0/rtr1 is policy-routed into tun0,
# where netem.py (userspace) delays / drops / reorders it and writes it back;
# the kernel then forwards it by destination.  The bottleneck scenario also
# puts a tbf qdisc on rtr1 (egress towards the receiver).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
# Run relay / captures / apps with SCHED_FIFO so that other load on the
# machine does not add jitter to the emulated delay (RT=0 to disable).
if [[ "${RT:-1}" != 0 ]] && command -v chrt >/dev/null && chrt -f 1 true 2>/dev/null; then
  RT_RELAY="chrt -f 50"; RT_CAP="chrt -f 40"; RT_APP="chrt -f 30"
else
  RT_RELAY=""; RT_CAP=""; RT_APP=""
fi

SND_IP=192.0.2.1
RTR_IP0=192.0.2.254
RTR_IP1=198.51.100.254
RCV_IP=198.51.100.1
PORT=5001
SPORT=40001

SCENARIOS="clean loss randloss bottleneck zerowin reorder bursty"

usage() { echo "usage: $0 {all|$(echo $SCENARIOS | tr ' ' '|')} OUTDIR" >&2; exit 2; }

[[ $# -eq 2 ]] || usage
[[ $(id -u) -eq 0 ]] || { echo "must run as root" >&2; exit 1; }
for t in ip tc ethtool tcpdump nstat "$PY"; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

MSS_PAYLOAD=1448   # MTU 1500 - 20 IP - 20 TCP - 12 timestamp option

# ---------------------------------------------------------------- scenarios
# Sets: BYTES DELAY_MS DROP REORDER HOLD TBF SEND_ARGS RECV_ARGS DESC CC
scenario_params() {
  BYTES=1048576; DELAY_MS=10; DROP=""; LOSS_RATE=0; REORDER=""; HOLD=3; TBF=""; CC=cubic
  SEND_ARGS=""; RECV_ARGS=""; DESC=""
  local s=$MSS_PAYLOAD
  case "$1" in
    clean)
      DESC="bulk transfer, 10 ms one-way delay each way (RTT ~20 ms), no loss" ;;
    loss)
      # Relative byte offsets; the segment carrying that byte is dropped.
      # Data segment k (0-based) normally carries bytes [k*1448, (k+1)*1448).
      # 100/101 are adjacent; 400:2 also drops the first retransmission of
      # that segment; the last segment is dropped twice (original + tail loss
      # probe) so that the sender has to wait for the RTO.
      DROP="$((30*s)),$((100*s)),$((101*s)),$((200*s)),$((300*s)),$((400*s)):2,$((500*s)),$((600*s)),$((650*s)),$((BYTES-1)):2"
      DESC="bulk transfer, RTT ~20 ms, 10 data segments dropped by the router (two adjacent; two retransmissions dropped too, the tail one forcing an RTO)" ;;
    randloss)
      BYTES=2097152; LOSS_RATE=0.01
      DESC="bulk transfer, RTT ~20 ms, the router drops each data segment (original or resent) with probability 1% (seeded)" ;;
    bottleneck)
      BYTES=1572864
      TBF="rate 10mbit burst 3000 limit 15000"
      DESC="bulk transfer, RTT ~20 ms, 10 Mbit/s tbf bottleneck with a 15000-byte queue on the router's egress to the receiver; the kernel drops on overflow" ;;
    zerowin)
      BYTES=262144
      RECV_ARGS="--rcvbuf 4096 --read-size 8192 --read-sleep 0.5 --initial-sleep 1.0"
      DESC="slow reader: receiver SO_RCVBUF=4096, sleeps 1 s after accept, then reads <=8192 bytes every 0.5 s; zero windows and zero-window probes" ;;
    reorder)
      REORDER="$((50*s)),$((150*s)),$((151*s)),$((300*s)),$((450*s)),$((600*s))"
      DESC="bulk transfer, RTT ~20 ms, 6 data segments each held back behind the next 3 packets (no loss)" ;;
    bursty)
      SEND_ARGS="--burst 65536 --pause 0.2"
      DESC="application-limited: sender writes 64 KiB, pauses 200 ms, repeated (16 bursts), RTT ~20 ms, no loss" ;;
    *) echo "unknown scenario: $1" >&2; exit 2 ;;
  esac
}

# ---------------------------------------------------------------- cleanup
NS_SND=""; NS_RTR=""; NS_RCV=""; PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do
    [[ -n "$p" ]] && kill "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]:-}"; do
    [[ -n "$p" ]] && wait "$p" 2>/dev/null || true
  done
  PIDS=()
  for n in "$NS_SND" "$NS_RTR" "$NS_RCV"; do
    [[ -n "$n" ]] && ip netns del "$n" 2>/dev/null || true
  done
  NS_SND=""; NS_RTR=""; NS_RCV=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_file() {  # wait_file FILE TIMEOUT_S
  local i
  for ((i = 0; i < $2 * 20; i++)); do [[ -s "$1" || -e "$1" && "${3:-}" == any ]] && return 0; sleep 0.05; done
  echo "timeout waiting for $1" >&2; return 1
}
wait_grep() {  # wait_grep FILE PATTERN TIMEOUT_S
  local i
  for ((i = 0; i < $3 * 20; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "timeout waiting for '$2' in $1" >&2; cat "$1" >&2 || true; return 1
}

nsx() { local n=$1; shift; ip netns exec "$n" "$@"; }

setup_topology() {
  local tag="tsc$$"
  NS_SND="$tag-snd"; NS_RTR="$tag-rtr"; NS_RCV="$tag-rcv"
  ip netns add "$NS_SND"; ip netns add "$NS_RTR"; ip netns add "$NS_RCV"
  ip link add snd0 netns "$NS_SND" type veth peer name rtr0 netns "$NS_RTR"
  ip link add rcv0 netns "$NS_RCV" type veth peer name rtr1 netns "$NS_RTR"
  local n
  for n in "$NS_SND" "$NS_RTR" "$NS_RCV"; do
    nsx "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    nsx "$n" ip link set lo up
  done
  for n in "$NS_SND" "$NS_RCV"; do
    nsx "$n" sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1 net.ipv4.tcp_window_scaling=1 \
      net.ipv4.tcp_no_metrics_save=1 net.ipv4.tcp_ecn=0
  done
  nsx "$NS_SND" ip addr add $SND_IP/24 dev snd0
  nsx "$NS_RTR" ip addr add $RTR_IP0/24 dev rtr0
  nsx "$NS_RTR" ip addr add $RTR_IP1/24 dev rtr1
  nsx "$NS_RCV" ip addr add $RCV_IP/24 dev rcv0
  local d
  for d in "$NS_SND:snd0" "$NS_RTR:rtr0" "$NS_RTR:rtr1" "$NS_RCV:rcv0"; do
    nsx "${d%%:*}" ethtool -K "${d#*:}" tso off gso off gro off >/dev/null 2>&1 || \
      nsx "${d%%:*}" ethtool -K "${d#*:}" tso off gso off gro off
    nsx "${d%%:*}" ip link set "${d#*:}" up
  done
  nsx "$NS_SND" ip route add default via $RTR_IP0
  nsx "$NS_RCV" ip route add default via $RTR_IP1
  # router: forward everything that comes in on the veths through tun0
  nsx "$NS_RTR" ip tuntap add dev tun0 mode tun
  nsx "$NS_RTR" ip link set tun0 txqueuelen 10000 up
  nsx "$NS_RTR" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
    net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.tun0.rp_filter=0 \
    net.ipv4.conf.rtr0.rp_filter=0 net.ipv4.conf.rtr1.rp_filter=0 \
    net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.all.accept_local=1
  nsx "$NS_RTR" ip route add default dev tun0 table 100
  nsx "$NS_RTR" ip rule add iif rtr0 lookup 100 pref 100
  nsx "$NS_RTR" ip rule add iif rtr1 lookup 100 pref 101
  # static neighbours: no ARP traffic in the captures, no ARP delay
  local m_snd m_rtr0 m_rtr1 m_rcv
  m_snd=$(nsx "$NS_SND" cat /sys/class/net/snd0/address)
  m_rcv=$(nsx "$NS_RCV" cat /sys/class/net/rcv0/address)
  m_rtr0=$(nsx "$NS_RTR" cat /sys/class/net/rtr0/address)
  m_rtr1=$(nsx "$NS_RTR" cat /sys/class/net/rtr1/address)
  nsx "$NS_SND" ip neigh replace $RTR_IP0 lladdr "$m_rtr0" dev snd0 nud permanent
  nsx "$NS_RTR" ip neigh replace $SND_IP lladdr "$m_snd" dev rtr0 nud permanent
  nsx "$NS_RTR" ip neigh replace $RCV_IP lladdr "$m_rcv" dev rtr1 nud permanent
  nsx "$NS_RCV" ip neigh replace $RTR_IP1 lladdr "$m_rtr1" dev rcv0 nud permanent
}

run_scenario() {
  local name=$1 out=$2
  scenario_params "$name"
  local work; work=$(mktemp -d "/tmp/tcpscope-rec-$name.XXXXXX")
  echo "=== $name (work dir $work)"
  setup_topology
  nsx "$NS_SND" ethtool -k snd0 >"$work/ethtool-snd0.txt"

  # Background jobs are started with a plain "ip netns exec" (no shell
  # function), so that $! is the PID of the program itself.
  # relay
  $RT_RELAY ip netns exec "$NS_RTR" "$PY" "$HERE/netem.py" --tun tun0 --sender $SND_IP --receiver $RCV_IP --port $PORT \
      --delay-ms "$DELAY_MS" --drop "$DROP" --loss-rate "$LOSS_RATE" --seed 7 --reorder "$REORDER" --hold "$HOLD" \
      --log "$work/relay.jsonl" --ready "$work/relay.ready" 2>"$work/relay.err" &
  local relay_pid=$!; PIDS+=("$relay_pid")
  wait_file "$work/relay.ready" 10 any

  if [[ -n "$TBF" ]]; then
    # shellcheck disable=SC2086
    nsx "$NS_RTR" tc qdisc replace dev rtr1 root tbf $TBF
  fi

  # captures
  rm -f "$out/$name-snd.pcap" "$out/$name-rcv.pcap"
  $RT_CAP ip netns exec "$NS_SND" tcpdump -Z root -n -i snd0 -s 128 -B 8192 --immediate-mode -U -w "$work/snd.pcap" tcp 2>"$work/tcpdump-snd.err" &
  local td1=$!; PIDS+=("$td1")
  $RT_CAP ip netns exec "$NS_RCV" tcpdump -Z root -n -i rcv0 -s 128 -B 8192 --immediate-mode -U -w "$work/rcv.pcap" tcp 2>"$work/tcpdump-rcv.err" &
  local td2=$!; PIDS+=("$td2")
  wait_grep "$work/tcpdump-snd.err" "listening on" 10
  wait_grep "$work/tcpdump-rcv.err" "listening on" 10

  # receiver
  # shellcheck disable=SC2086
  $RT_APP ip netns exec "$NS_RCV" "$PY" "$HERE/ttcp.py" recv --bind $RCV_IP --port $PORT $RECV_ARGS \
      --result "$work/recv.json" --ready "$work/recv.ready" &
  local rcv_pid=$!; PIDS+=("$rcv_pid")
  wait_file "$work/recv.ready" 10 any

  sleep 0.2
  nsx "$NS_SND" nstat -asz >"$work/nstat-snd-before.txt"
  nsx "$NS_RCV" nstat -asz >"$work/nstat-rcv-before.txt"
  # shellcheck disable=SC2086
  # in the background + wait, so that a signal to this script is handled at once
  timeout 120 $RT_APP ip netns exec "$NS_SND" "$PY" "$HERE/ttcp.py" send --dst $RCV_IP --port $PORT \
      --src $SND_IP --sport $SPORT --bytes "$BYTES" --cc "$CC" $SEND_ARGS --result "$work/send.json" &
  local snd_pid=$!; PIDS+=("$snd_pid")
  wait "$snd_pid"
  wait "$rcv_pid"
  nsx "$NS_SND" nstat -asz >"$work/nstat-snd-after.txt"
  nsx "$NS_RCV" nstat -asz >"$work/nstat-rcv-after.txt"
  sleep 0.3   # let the last ACK / FIN reach both captures

  kill -TERM "$td1" "$td2"; wait "$td1" || true; wait "$td2" || true
  kill -TERM "$relay_pid"; wait "$relay_pid" || true
  PIDS=()
  nsx "$NS_RTR" tc -s qdisc show dev rtr1 >"$work/tc-rtr1.txt"
  nsx "$NS_RTR" tc -s -j qdisc show dev rtr1 >"$work/tc-rtr1.json"
  nsx "$NS_RTR" ip -s -j link show tun0 >"$work/tun0.json"
  nsx "$NS_RTR" ip -s -j link show rtr0 >"$work/rtr0.json"
  nsx "$NS_RTR" ip -s -j link show rtr1 >"$work/rtr1.json"
  cat "$work/tcpdump-snd.err" "$work/tcpdump-rcv.err"

  cp "$work/snd.pcap" "$out/$name-snd.pcap"
  cp "$work/rcv.pcap" "$out/$name-rcv.pcap"
  cat >"$work/params.json" <<EOF
{"scenario": "$name", "description": "$DESC", "transfer_bytes": $BYTES,
 "one_way_delay_ms": $DELAY_MS, "drop": "$DROP", "reorder": "$REORDER", "hold": $HOLD,
 "tbf": "$TBF", "congestion_control": "$CC", "send_args": "$SEND_ARGS", "recv_args": "$RECV_ARGS",
 "sender_ip": "$SND_IP", "receiver_ip": "$RCV_IP", "sender_port": $SPORT, "receiver_port": $PORT,
 "command": "tests/data/record/record.sh $name tests/data"}
EOF
  cleanup
  "$PY" "$HERE/analyze.py" --work "$work" --outdir "$out" --name "$name"
  [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$work"
}

main() {
  local what=$1 out=$2
  mkdir -p "$out"; out=$(cd "$out" && pwd)
  if [[ $what == all ]]; then
    local s
    for s in $SCENARIOS; do run_scenario "$s" "$out"; done
  else
    run_scenario "$what" "$out"
  fi
}
main "$@"
