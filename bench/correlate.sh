#!/usr/bin/env bash
# `tcpscope correlate` throughput (docs/correlate.md, docs/performance.md): two captures of the
# same ~1.5 million-packet bulk transfer, combined packets per second, against `tcpscope stats`
# on the same two files in the same run (the ratio is the figure that travels between
# machines).
#
#   bench/correlate.sh          (make bench-correlate)
#
# The second point is made from the sender's capture (bench/out/bulk.pcap, recorded by
# gen-bulk.sh): every frame 5 ms later, one in 997 removed (packets "lost" between the points),
# written by bench/shift.py. Environment: BENCH_RUNS (default 5), BENCH_OUT (default bench/out),
# TCPSCOPE (the binary; default target/release/tcpscope, built here).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-bench/out}
RUNS=${BENCH_RUNS:-5}
mkdir -p "$OUT"
if [ -z "${TCPSCOPE:-}" ]; then
    cargo build --release -q -p tcpscope
    TCPSCOPE=${CARGO_TARGET_DIR:-target}/release/tcpscope
fi
if [ ! -s "$OUT/bulk.pcap" ]; then
    bench/gen-bulk.sh "$OUT/bulk.pcap.tmp"
    mv "$OUT/bulk.pcap.tmp" "$OUT/bulk.pcap"
fi
if [ ! -s "$OUT/bulk-b.pcap" ]; then
    python3 bench/shift.py "$OUT/bulk.pcap" "$OUT/bulk-b.pcap.tmp" 0.005 997
    mv "$OUT/bulk-b.pcap.tmp" "$OUT/bulk-b.pcap"
fi
A=$OUT/bulk.pcap
B=$OUT/bulk-b.pcap
packets=$("$TCPSCOPE" correlate "$A" "$B" --json | python3 -c 'import json,sys; print(sum(p["packets"] for p in json.load(sys.stdin)["points"]))')
best() { # best wall time of RUNS runs of "$@", seconds
    local b=
    for _ in $(seq "$RUNS"); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null
        t1=$(date +%s.%N)
        b=$(python3 -c "print(min(float('${b:-inf}'), $t1 - $t0))")
    done
    echo "$b"
}
# Alternated, so that both see the same machine.
c=$(best "$TCPSCOPE" correlate "$A" "$B" --json)
s=$(best "$TCPSCOPE" stats -q "$A" "$B" --json)
python3 - "$packets" "$c" "$s" <<'PY'
import sys
n, c, s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"correlate: {n} packets (both captures) in {c:.3f} s = {n / c / 1e6:.2f} M packets/s "
      f"(target 2 M); stats on the same files {s:.3f} s = {n / s / 1e6:.2f} M packets/s; "
      f"correlate / stats time {c / s:.2f}")
PY
