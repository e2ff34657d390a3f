#!/usr/bin/env bash
# Record a real Linux TCP bulk transfer (~1.5 million packets) across three network
# namespaces (sender - router - receiver, veth pairs), captured at the sender with
# tcpdump -s 96.
#
#   bench/gen-bulk.sh OUT.pcap
#
# Needs root, iproute2, ethtool, nftables, tcpdump, python3.
# Knobs (environment): BULK_BYTES (payload bytes, default 1.87e9 ~ 1.3M data segments +
# ACKs), BULK_RATE (tbf bottleneck rate on the router, default 1gbit), BULK_QUEUE (tbf
# queue, as latency, default 5ms), BULK_DROP (1 in N data packets dropped at random in
# the router, default 2000 = 0.05%).
#
# Only traffic between the two namespaces this script creates; both are deleted on exit.
set -euo pipefail

OUT=${1:?usage: gen-bulk.sh OUT.pcap}
BYTES=${BULK_BYTES:-1870000000}
RATE=${BULK_RATE:-1gbit}
DROP=${BULK_DROP:-2000}
QLAT=${BULK_QUEUE:-5ms}
PORT=5001
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ]; then echo "gen-bulk.sh: needs root (network namespaces)" >&2; exit 1; fi
for t in ip ethtool nft tcpdump tc python3; do
    command -v "$t" >/dev/null || { echo "gen-bulk.sh: missing $t" >&2; exit 1; }
done

TAG="tsbench$$"
SND="${TAG}-snd"
RTR="${TAG}-rtr"
RCV="${TAG}-rcv"
# TEST-NET-1/-2 addresses, only ever inside the namespaces created here
SND_IP=192.0.2.1;    RTR_IP1=192.0.2.254
RCV_IP=198.51.100.1; RTR_IP2=198.51.100.254
PIDS=()
TMP=$(mktemp -d)

cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "$SND" "$RTR" "$RCV"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# sender --veth-- router --veth-- receiver
for ns in "$SND" "$RTR" "$RCV"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add eth0 netns "$SND" type veth peer name eth0 netns "$RTR"
ip link add eth1 netns "$RTR" type veth peer name eth0 netns "$RCV"
ip -n "$SND" addr add "$SND_IP/24" dev eth0
ip -n "$RTR" addr add "$RTR_IP1/24" dev eth0
ip -n "$RTR" addr add "$RTR_IP2/24" dev eth1
ip -n "$RCV" addr add "$RCV_IP/24" dev eth0
ip -n "$SND" link set eth0 up
ip -n "$RTR" link set eth0 up
ip -n "$RTR" link set eth1 up
ip -n "$RCV" link set eth0 up
ip -n "$SND" route add default via "$RTR_IP1"
ip -n "$RCV" route add default via "$RTR_IP2"
ip netns exec "$RTR" sysctl -qw net.ipv4.ip_forward=1

# one packet = one segment: no segmentation/receive offloads anywhere on the path
# (GRO on the router would merge segments before forwarding them)
for pair in "$SND eth0" "$RTR eth0" "$RTR eth1" "$RCV eth0"; do
    set -- $pair
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null
done

# the bottleneck: the router's link to the receiver, with a bounded queue, so the sender's
# congestion control sees queueing delay and tail drops like on a real path
ip netns exec "$RTR" tc qdisc add dev eth1 root tbf rate "$RATE" burst 32kb latency "$QLAT"

# plus a small random loss of data segments in the router, so there are retransmissions,
# SACK blocks and dup ACKs even when the queue does not overflow; the sender-side capture
# sees every original and every retransmission
ip netns exec "$RTR" nft -f - <<NFT
table inet tsbench {
    chain route {
        type filter hook forward priority 0; policy accept;
        tcp dport $PORT numgen random mod $DROP 0 counter drop
    }
}
NFT

# receiver
ip netns exec "$RCV" python3 "$HERE/bulk_xfer.py" recv "$RCV_IP" "$PORT" >"$TMP/recv.out" 2>"$TMP/recv.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q ready "$TMP/recv.out" 2>/dev/null && break; sleep 0.1; done

# capture at the sender, headers only
ip netns exec "$SND" tcpdump -i eth0 -s 96 -B 262144 -n -w "$OUT" "tcp port $PORT" 2>"$TMP/tcpdump.err" &
TCPDUMP=$!
PIDS+=($TCPDUMP)
for _ in $(seq 100); do grep -q listening "$TMP/tcpdump.err" 2>/dev/null && break; sleep 0.1; done
sleep 0.5

echo "gen-bulk: sending $BYTES bytes at $RATE, 1/$DROP random drop ..." >&2
ip netns exec "$SND" python3 "$HERE/bulk_xfer.py" send "$RCV_IP" "$PORT" "$BYTES"
wait "${PIDS[0]}" || true
sleep 0.5
kill -INT "$TCPDUMP"
wait "$TCPDUMP" || true
cat "$TMP/recv.err" >&2
grep -E 'captured|dropped' "$TMP/tcpdump.err" >&2 || true
ip netns exec "$RTR" nft list table inet tsbench | grep -o 'packets [0-9]*' | sed 's/^/gen-bulk: nft dropped /' >&2 || true
if grep -Eq '[1-9][0-9]* packets dropped by kernel' "$TMP/tcpdump.err"; then
    echo "gen-bulk: WARNING: tcpdump dropped packets; the trace has capture gaps" >&2
fi
echo "gen-bulk: wrote $OUT" >&2
