#!/usr/bin/env bash
# `make demo`'s monitored transfer (docs/monitor.md): a 3.5 s transfer whose writer pauses for
# 0.8 s, recorded by `tcpscope monitor` every 20 ms, then `stats` and a limits plot. As root it
# runs in a network namespace of its own behind a 20 Mbit/s token bucket (so the sender is
# network-limited, then idle, then network-limited); otherwise on this machine's loopback
# (unshaped: the sender is mostly idle). Usage: tools/monitor-demo.sh TCPSCOPE_BINARY
set -euo pipefail
BIN=$1
if ! command -v python3 >/dev/null; then
	echo "monitor demo skipped: it drives its transfer with python3, which is not installed"
	exit 0
fi
OUT=${DEMO_OUT:-demo-out}
mkdir -p "$OUT"
PORT=$((20000 + $$ % 20000))
XFER=$(mktemp)
NS=
cleanup() {
	rm -f "$XFER"
	if [ -n "$NS" ]; then ip netns del "$NS" 2>/dev/null || true; fi
}
trap cleanup EXIT
cat >"$XFER" <<PY
import socket, threading, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", $PORT)); l.listen()
def read():
    s, _ = l.accept()
    while s.recv(65536): pass
threading.Thread(target=read, daemon=True).start()
c = socket.create_connection(("127.0.0.1", $PORT)); buf = b"x" * 65536; t0 = time.time()
while time.time() - t0 < 1.2: c.send(buf)
time.sleep(0.8)
while time.time() - t0 < 3.5: c.send(buf)
c.close(); time.sleep(0.5)
PY
RUN=()
if [ "$(id -u)" = 0 ] && ip netns add "tcpscope-demo-$$" 2>/dev/null; then
	NS="tcpscope-demo-$$"
	RUN=(ip netns exec "$NS")
	ip netns exec "$NS" ip link set lo up mtu 1500
	ip netns exec "$NS" tc qdisc add dev lo root tbf rate 20mbit burst 32kb latency 50ms
	echo "(in network namespace $NS, loopback shaped to 20 Mbit/s)"
else
	echo "(not root: on this machine's loopback, unshaped)"
fi
echo "\$ tcpscope monitor --filter 'port $PORT' -i 20ms --for 5s -w $OUT/run.tsm"
"${RUN[@]}" "$BIN" monitor --filter "port $PORT" -i 20ms --for 5s -w "$OUT/run.tsm" &
MON=$!
sleep 0.3
"${RUN[@]}" python3 "$XFER"
wait "$MON"
echo
echo "\$ tcpscope stats $OUT/run.tsm"
"$BIN" stats "$OUT/run.tsm"
SENDER=$("$BIN" stats "$OUT/run.tsm" --json | python3 -c 'import json,sys; print([c["id"] for c in json.load(sys.stdin)["connections"] if c["dport"] == '"$PORT"'][0])')
echo
echo "\$ tcpscope plot $OUT/run.tsm -k limits -c $SENDER -o $OUT/limits.svg"
"$BIN" plot "$OUT/run.tsm" -k limits -c "$SENDER" -o "$OUT/limits.svg"
