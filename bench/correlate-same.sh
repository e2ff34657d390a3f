#!/usr/bin/env bash
# Whether two tcpscope binaries give the same `correlate` answers, byte for byte: `--json` (the
# points, the rows and the events), `--csv` and `--packets --csv` (one row per packet), on the
# seven recorded pairs of tests/data and on the bench pair (bench/out/bulk.pcap and
# bulk-b.pcap, made by `make bench-correlate`; skipped, said, when absent). For a change that
# must not change an answer (docs/correlate.md, "Speed").
#
#   bench/correlate-same.sh OLD_BINARY NEW_BINARY
#
# Prints one line per pair and output; exits 1 if any differs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY" >&2; exit 2; }
OLD=$1
NEW=$2
OUT=${BENCH_OUT:-bench/out}
pairs=()
for snd in tests/data/*-snd.pcap; do
    pairs+=("$snd ${snd%-snd.pcap}-rcv.pcap")
done
if [ -s "$OUT/bulk.pcap" ] && [ -s "$OUT/bulk-b.pcap" ]; then
    pairs+=("$OUT/bulk.pcap $OUT/bulk-b.pcap")
else
    echo "skipped: the bench pair ($OUT/bulk.pcap, bulk-b.pcap: make bench-correlate)"
fi
bad=0
for pair in "${pairs[@]}"; do
    # shellcheck disable=SC2086 # two paths, split on purpose
    set -- $pair
    for out in "--json" "--csv" "--packets --csv"; do
        # shellcheck disable=SC2086
        a=$("$OLD" correlate "$1" "$2" $out | sha256sum | cut -c1-16)
        # shellcheck disable=SC2086
        b=$("$NEW" correlate "$1" "$2" $out | sha256sum | cut -c1-16)
        if [ "$a" = "$b" ]; then
            echo "same      $1 $2 $out ($a)"
        else
            echo "DIFFERENT $1 $2 $out (old $a, new $b)"
            bad=1
        fi
    done
done
exit $bad
