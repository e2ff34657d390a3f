#!/usr/bin/env bash
# Benchmark tcpscope against tcptrace and tshark; see docs/performance.md.
#
#   bench/run.sh            (make bench)
#
# Environment: BENCH_RUNS (runs per command, default 5), BENCH_TSHARK_RUNS (default 1).
# Inputs are generated into bench/out/ only if missing (the bulk recording needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
# The binary cargo builds below: under CARGO_TARGET_DIR when it is set, as `make` does.
BIN=${CARGO_TARGET_DIR:-target}/release/tcpscope
mkdir -p "$OUT" bench/results

for t in tcptrace tshark tcpdump python3; do
    command -v "$t" >/dev/null || echo "run.sh: $t not found (apt-get install -y tcptrace tshark tcpdump)" >&2
done

echo "run.sh: building tcpscope (release)" >&2
cargo build --release -q -p tcpscope

if [ ! -s "$OUT/bulk.pcap" ]; then
    echo "run.sh: recording $OUT/bulk.pcap" >&2
    bench/gen-bulk.sh "$OUT/bulk.pcap.tmp"
    mv "$OUT/bulk.pcap.tmp" "$OUT/bulk.pcap"
fi
if [ ! -s "$OUT/many.pcap" ]; then
    echo "run.sh: generating $OUT/many.pcap" >&2
    python3 bench/gen-many.py "$OUT/many.pcap.tmp"
    mv "$OUT/many.pcap.tmp" "$OUT/many.pcap"
fi
if [ ! -s "$OUT/concurrent.pcap" ]; then
    echo "run.sh: generating $OUT/concurrent.pcap" >&2
    python3 bench/gen-many.py --concurrent "$OUT/concurrent.pcap.tmp"
    mv "$OUT/concurrent.pcap.tmp" "$OUT/concurrent.pcap"
fi
if [ ! -s "$OUT/bulk.pcapng" ]; then
    # the same packets in pcapng, the format Wireshark and dumpcap write (editcap comes with tshark)
    if command -v editcap >/dev/null; then
        editcap -F pcapng "$OUT/bulk.pcap" "$OUT/bulk.pcapng.tmp"
        mv "$OUT/bulk.pcapng.tmp" "$OUT/bulk.pcapng"
    else
        echo "run.sh: editcap not found: bulk.pcapng not made, not timed" >&2
    fi
fi
if [ ! -s "$OUT/mid.pcap" ]; then
    # a mid-size input for the parallel-scaling run: the first 800k packets of the bulk trace
    tcpdump -r "$OUT/bulk.pcap" -c 800000 -w "$OUT/mid.pcap.tmp" 2>/dev/null
    mv "$OUT/mid.pcap.tmp" "$OUT/mid.pcap"
fi

python3 bench/measure.py --bin "$BIN" --out "$OUT" --results bench/results

# The same comparison with the tools run in turn, round after round: on a virtual machine whose
# speed drifts (other load, CPU steal), a ratio taken within one round is the steadier figure.
echo "run.sh: paired rounds (bench/paired.py)" >&2
for input in bulk.pcap:${BENCH_PAIRED_ROUNDS:-15} bulk.pcapng:${BENCH_PAIRED_ROUNDS:-15} many.pcap:${BENCH_PAIRED_ROUNDS_MANY:-3} \
    concurrent.pcap:${BENCH_PAIRED_ROUNDS_MANY:-3}; do
    f=$OUT/${input%%:*}
    [ -s "$f" ] || continue
    echo "${input%%:*}:"
    bench/paired.py "${input##*:}" "tcptrace -l -r -n $f" \
        "$BIN stats -q $f" "$BIN screen -q --all $f"
done
