#!/usr/bin/env bash
# Does `tcpscope capture` stay flat in memory while it rotates and deletes for a long time?
# Captures a steady TCP stream on the loopback of a private network namespace into a ring of
# small files (thousands of rotations and deletions), and prints the capture's resident memory
# every INTERVAL seconds, then the ring's state. Needs root (network namespaces).
#
#   bench/capture-soak.sh [SECONDS] [INTERVAL]      # default 120 s, every 10 s
set -euo pipefail
secs=${1:-120}
every=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TCPSCOPE:-$(cd "$here" && realpath -m "${CARGO_TARGET_DIR:-target}")/release/tcpscope}
ns=tcpscope-soak-$$
dir=$(mktemp -d)
cleanup() {
    [ -n "${cap:-}" ] && kill "$cap" 2>/dev/null || true
    [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up

# A receiver that discards, and a sender paced to ~20k packets/s so the capture keeps up.
ip netns exec "$ns" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 5001)); s.listen(1)
while True:
    c, _ = s.accept()
    while c.recv(1 << 16): pass
' &
srv=$!
sleep 0.5
ip netns exec "$ns" "$bin" capture -i lo -f 'tcp port 5001' -w "$dir/ring" \
    --file-size 128KB --keep 2MB --rotate-every 5s 2>"$dir/log" &
cap=$!
sleep 1
ip netns exec "$ns" python3 -c '
import socket, time, sys
end = time.time() + float(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1000)  # before connect, or it is ignored
s.connect(("127.0.0.1", 5001))
buf = b"x" * 1000
while time.time() < end:
    for _ in range(200):
        s.send(buf)
    time.sleep(0.01)
' "$secs" &
snd=$!

echo "seconds  rss_kib  files_in_ring  opened  deleted"
start=$(date +%s)
while kill -0 "$snd" 2>/dev/null; do
    sleep "$every"
    rss=$(awk '/VmRSS/ {print $2}' /proc/"$cap"/status)
    files=$(find "$dir/ring" -name '*.pcap' | wc -l)
    printf '%7d  %7s  %13s  %6s  %7s\n' $(( $(date +%s) - start )) "$rss" "$files" \
        "$(grep -c opened "$dir/log" || true)" "$(grep -c deleted "$dir/log" || true)"
done
kill -TERM "$cap"
wait "$cap" || true
cap=
tail -n 1 "$dir/log"
