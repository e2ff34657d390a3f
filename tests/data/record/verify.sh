#!/usr/bin/env bash
# Cross-check recorded traces with tcptrace and tshark against the truth files.
#   verify.sh [DIR]      (default: the directory above this script, i.e. tests/data)
# Prints one block per scenario: truth numbers, tcptrace numbers, tshark numbers.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:-$HERE/..}"
cd "$DIR" || exit 1

tt() {  # tt FILE LABEL -> "a->b b->a" values of a tcptrace -l -r -n line
  tcptrace -l -r -n "$1" 2>/dev/null | awk -v k="$2" -F: '
    index($0, k":") { n++; split($2, x, " "); a = x[1]; split($3, y, " "); b = y[1]; print a, b; exit }'
}
ts() {  # ts FILE FILTER -> number of matching frames
  tshark -r "$1" -Y "$2" 2>/dev/null | wc -l
}

for truth in *.truth.json; do
  name=${truth%.truth.json}
  echo "== $name"
  python3 - "$truth" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
k, kr, c = t["kernel"], t["kernel_receiver"], t["captures"]
print("  truth: dropped=%d (relay %d, tbf %d) reordered=%d retransmissions=%d (spurious %d)"
      % (len(t["dropped"]), sum(d["where"] == "relay" for d in t["dropped"]),
         sum(d["where"] == "tbf" for d in t["dropped"]), len(t["reordered"]),
         len(t["retransmissions"]), sum(r["spurious"] for r in t["retransmissions"])))
print("  kernel(snd): RetransSegs=%s Timeouts=%s LossProbes=%s FastRetrans=%s SackRecovery=%s DSACKRecv=%s SpuriousRTOs=%s WinProbe=%s"
      % tuple(k.get(x) for x in ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPFastRetrans",
                                 "TcpExtTCPSackRecovery", "TcpExtTCPDSACKRecv", "TcpExtTCPSpuriousRTOs", "TcpExtTCPWinProbe")))
print("  kernel(rcv): ToZeroWindowAdv=%s OFOQueue=%s DSACKOldSent=%s"
      % tuple(kr.get(x) for x in ("TcpExtTCPToZeroWindowAdv", "TcpExtTCPOFOQueue", "TcpExtTCPDSACKOldSent")))
for side in ("snd", "rcv"):
    s = c[side]
    print("  capture %s: packets=%d data=%d rexmit=%d zwin_adv=%d zwin_probes=%d"
          % (side, s["packets"], s["fwd_data_segments"], s["fwd_retransmitted_segments"],
             s["rev_zero_window_advertisements"], s["fwd_zero_window_probes"]))
print("  checks: %s" % ("all ok" if all(x["ok"] for x in t["checks"]) else
                        "FAILED: " + ", ".join(x["check"] for x in t["checks"] if not x["ok"])))
EOF
  for side in snd rcv; do
    f="$name-$side.pcap"
    read -r pk _ < <(tt "$f" "total packets")
    read -r rx _ < <(tt "$f" "rexmt data pkts")
    read -r oo _ < <(tt "$f" "outoforder pkts")
    read -r zp _ < <(tt "$f" "zwnd probe pkts")
    read -r _ za < <(tt "$f" "zero win adv")
    echo "  tcptrace $side: packets=$pk rexmt_data_pkts=$rx outoforder=$oo zwnd_probe_pkts=$zp zero_win_adv(b->a)=${za:-n/a}"
    echo "  tshark   $side: retransmission=$(ts "$f" tcp.analysis.retransmission) fast_retransmission=$(ts "$f" tcp.analysis.fast_retransmission)" \
         "spurious=$(ts "$f" tcp.analysis.spurious_retransmission) out_of_order=$(ts "$f" tcp.analysis.out_of_order)" \
         "rexmit_or_ooo_with_data=$(ts "$f" '(tcp.analysis.retransmission || tcp.analysis.out_of_order) && tcp.len > 0')" \
         "lost_segment=$(ts "$f" tcp.analysis.lost_segment) dup_ack=$(ts "$f" tcp.analysis.duplicate_ack)" \
         "zero_window=$(ts "$f" tcp.analysis.zero_window) zero_window_probe=$(ts "$f" tcp.analysis.zero_window_probe)" \
         "keep_alive=$(ts "$f" tcp.analysis.keep_alive)"
  done
  echo "  tshark -z expert (snd):"
  tshark -r "$name-snd.pcap" -q -z expert 2>/dev/null | awk '/^ +[0-9]+ +Sequence/ && !/Duplicate ACK \(#/ {sub(/^ +/, ""); print "    " $0}'
done
