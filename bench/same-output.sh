#!/usr/bin/env bash
# Fingerprint tcpscope's output, to check that a change leaves it byte-identical.
#
#   bench/same-output.sh BIN > before.md5        # with the old binary
#   bench/same-output.sh BIN > after.md5         # with the new one
#   diff before.md5 after.md5                    # must print nothing
#
# One line per (trace, command): the md5 of stdout, the exit status and the md5 of stderr.
# Traces: every file in $TRACES (default ../shared/traces/public) and bench/out/{bulk,many}.pcap
# ($BENCH_OUT; the big ones are skipped if missing). $JOBS commands run at once (default 2).
set -uo pipefail
BIN=${1:?usage: same-output.sh TCPSCOPE_BINARY}
BIN=$(realpath "$BIN")
here=$(dirname "$0")
TRACES=${TRACES:-$here/../../shared/traces/public}
BENCH_OUT=${BENCH_OUT:-$here/out}
JOBS=${JOBS:-2}

cmds=(
    "stats --json"
    "stats"
    "stats --csv"
    "screen --all --json"
    "screen --all --events"
    "conns --json"
)

one() { # BIN TRACE CMD...
    local bin=$1 trace=$2; shift 2
    local err out rc
    err=$(mktemp)
    out=$("$bin" "$@" -q "$trace" 2>"$err" | md5sum | cut -c1-32; exit "${PIPESTATUS[0]}")
    rc=$?
    printf '%s\t%s\t%s rc=%s err=%s\n' "$(basename "$trace")" "$*" "$out" "$rc" \
        "$(sed "s|$trace|TRACE|g" "$err" | md5sum | cut -c1-8)"
    rm -f "$err"
}
export -f one

{
    for t in "$TRACES"/*; do
        case $t in *.md|*.tsv|*.txt) continue ;; esac
        [ -f "$t" ] || continue
        for c in "${cmds[@]}"; do printf '%s\0%s\0%s\0' "$BIN" "$t" "$c"; done
    done
    for t in "$BENCH_OUT/bulk.pcap" "$BENCH_OUT/many.pcap"; do
        [ -s "$t" ] || { echo "same-output.sh: $t missing, skipped" >&2; continue; }
        for c in "${cmds[@]}"; do printf '%s\0%s\0%s\0' "$BIN" "$t" "$c"; done
    done
} | xargs -0 -n3 -P "$JOBS" bash -c 'one "$0" "$1" $2' | sort
