#!/usr/bin/env bash
# The monitor's cost at scale (docs/monitor.md): 10,000 loopback sockets sampled at 10 Hz,
# against `ss -tin` parsed at 10 Hz. As root it runs in a network namespace of its own (only the
# benchmark's sockets there); otherwise in this one.
#
#   bench/monitor.sh [PAIRS] [SECONDS]      (make bench-monitor; default 5000 pairs, 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-5000}
SECS=${2:-10}
cargo build --release -q -p tcpscope-monitor --example bench
BIN=${CARGO_TARGET_DIR:-target}/release/examples/bench
ulimit -n $((2 * PAIRS + 1000)) 2>/dev/null || echo "monitor.sh: could not raise the open-file limit" >&2
if [ "$(id -u)" = 0 ] && ip netns add "tcpscope-bench-$$" 2>/dev/null; then
	trap 'ip netns del "tcpscope-bench-$$"' EXIT
	ip netns exec "tcpscope-bench-$$" ip link set lo up
	ip netns exec "tcpscope-bench-$$" "$BIN" "$PAIRS" "$SECS"
else
	"$BIN" "$PAIRS" "$SECS"
fi
