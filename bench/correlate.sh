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
#
# Memory: the same pair made 4 times longer (bench/repeat.py: the transfer 4 times over, one
# after the other, each copy with other ports) is correlated too, and the peak RSS of each
# (`/usr/bin/time`) given with their ratio: the memory is bounded by the window and the number
# of connections, not by the captures' length (docs/correlate.md, "Memory"), so the ratio stays
# near 1 where keeping every packet would make it near 4.
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
if [ ! -s "$OUT/bulk4-b.pcap" ]; then
    # Each copy starts 10 s after the previous one ended (more than the window).
    step=$(python3 - "$A" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
head = f.read(24)
order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
unit = 1e9 if head[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e6
first = last = None
while len(rec := f.read(16)) == 16:
    sec, frac, incl, _ = struct.unpack(order + "IIII", rec)
    f.seek(incl, 1)
    t = sec + frac / unit
    first = t if first is None else first
    last = t
print(int(last - first) + 11)
PY
)
    python3 bench/repeat.py "$A" "$OUT/bulk4.pcap.tmp" 4 "$step"
    python3 bench/repeat.py "$B" "$OUT/bulk4-b.pcap.tmp" 4 "$step"
    mv "$OUT/bulk4.pcap.tmp" "$OUT/bulk4.pcap"
    mv "$OUT/bulk4-b.pcap.tmp" "$OUT/bulk4-b.pcap"
fi
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
rss() { # peak RSS (kB) of "$@"
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
}
m1=$(rss "$TCPSCOPE" correlate "$A" "$B" --json)
m4=$(rss "$TCPSCOPE" correlate "$OUT/bulk4.pcap" "$OUT/bulk4-b.pcap" --json)
python3 - "$m1" "$m4" <<'PY'
import sys
m1, m4 = int(sys.argv[1]), int(sys.argv[2])
print(f"correlate peak RSS: the pair {m1 / 1024:.0f} MB, the pair 4 times longer {m4 / 1024:.0f} MB; "
      f"ratio {m4 / m1:.2f} (bounded memory: near 1)")
PY
