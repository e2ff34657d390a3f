#!/usr/bin/env python3
"""Build NAME.truth.json from a record.sh work directory and check it.

Inputs (in --work): snd.pcap, rcv.pcap, relay.jsonl, nstat-{snd,rcv}-{before,after}.txt,
send.json, recv.json, params.json, tc-rtr1.json, tun0.json, rtr0.json, rtr1.json,
tcpdump-{snd,rcv}.err.   Pure standard library (no scapy).
Exit status 1 if a consistency check fails.
"""
import argparse
import datetime
import json
import os
import platform
import re
import struct
import sys

ALWAYS = [
    "TcpActiveOpens", "TcpOutSegs", "TcpInSegs", "TcpRetransSegs", "TcpOutRsts",
    "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery",
    "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPLostRetransmit",
    "TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery", "TcpExtTCPSACKReorder",
    "TcpExtTCPTSReorder", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKOfoRecv",
    "TcpExtTCPSpuriousRTOs", "TcpExtTCPSpuriousRtxHostQueues", "TcpExtTCPWinProbe",
    "TcpExtTCPSackRecoveryFail", "TcpExtTCPLossUndo", "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo", "TcpExtTCPDSACKUndo", "TcpExtTCPAutoCorking",
]
ALWAYS_RCV = [
    "TcpPassiveOpens", "TcpOutSegs", "TcpInSegs", "TcpExtTCPOFOQueue", "TcpExtTCPDSACKOldSent",
    "TcpExtTCPDSACKOfoSent", "TcpExtTCPToZeroWindowAdv", "TcpExtTCPFromZeroWindowAdv",
    "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPRcvQDrop", "TcpExtTCPOFODrop", "TcpExtDelayedACKs",
    "TcpExtTCPPureAcks",
]


def read_pcap(path):
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xA1B2C3D4:
        e, div = "<", 1e6
    elif magic == 0xA1B23C4D:
        e, div = "<", 1e9
    elif magic == 0xD4C3B2A1:
        e, div = ">", 1e6
    else:
        raise SystemExit("%s: not a pcap file" % path)
    linktype = struct.unpack_from(e + "I", data, 20)[0]
    assert linktype == 1, "expected Ethernet linktype"
    off = 24
    out = []
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from(e + "IIII", data, off)
        off += 16
        out.append((sec + frac / div, data[off:off + incl], orig))
        off += incl
    return out


def parse_tcp(frame):
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    p = frame[14:]
    ihl = (p[0] & 15) * 4
    if p[9] != 6:
        return None
    tot, ipid = struct.unpack_from("!HH", p, 2)
    src, dst = ".".join(map(str, p[12:16])), ".".join(map(str, p[16:20]))
    sport, dport, seq, ack = struct.unpack_from("!HHII", p, ihl)
    doff = (p[ihl + 12] >> 4) * 4
    flags = p[ihl + 13]
    win = struct.unpack_from("!H", p, ihl + 14)[0]
    opts = p[ihl + 20:ihl + doff]
    sack_blocks, wscale, tsval = 0, None, None
    i = 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        ln = opts[i + 1]
        if ln < 2:
            break
        if k == 5:
            sack_blocks = (ln - 2) // 8
        elif k == 3:
            wscale = opts[i + 2]
        elif k == 8:
            tsval = struct.unpack_from("!I", opts, i + 2)[0]
        i += ln
    return {"src": src, "dst": dst, "sport": sport, "dport": dport, "seq": seq, "ack": ack,
            "flags": flags, "win": win, "len": tot - ihl - doff, "ip_id": ipid,
            "sack_blocks": sack_blocks, "wscale": wscale, "tsval": tsval}


def analyze_capture(pkts, snd_ip, rcv_ip):
    """Summarise one capture; returns (summary, list of decoded packets)."""
    dec = []
    for t, fr, orig in pkts:
        d = parse_tcp(fr)
        if d is None:
            continue
        d["t"] = t
        d["dir"] = "fwd" if d["src"] == snd_ip else "rev"
        dec.append(d)
    isn = {}
    for d in dec:
        if d["flags"] & 0x02:
            isn.setdefault(d["dir"], d["seq"])
    s = {"packets": len(pkts), "tcp_packets": len(dec),
         "fwd_packets": 0, "rev_packets": 0, "fwd_data_segments": 0, "fwd_data_bytes": 0,
         "fwd_retransmitted_segments": 0, "fwd_retransmitted_bytes": 0,
         "fwd_zero_window_probes": 0, "fwd_max_seq_end": 0, "rev_pure_acks": 0, "rev_data_segments": 0,
         "rev_zero_window_advertisements": 0, "rev_acks_with_sack": 0, "rev_dup_acks": 0,
         "syn": 0, "fin": 0, "rst": 0,
         "first_time": dec[0]["t"] if dec else None, "last_time": dec[-1]["t"] if dec else None}
    max_end = 0
    prev_ack = None
    wscale_rcv = None
    for d in dec:
        f = d["flags"]
        s["syn"] += bool(f & 0x02)
        s["fin"] += bool(f & 0x01)
        s["rst"] += bool(f & 0x04)
        base = isn.get(d["dir"])
        d["rel"] = ((d["seq"] - base - 1) & 0xFFFFFFFF) if base is not None else None
        if f & 0x02:
            d["rel"] = -1
            if d["dir"] == "rev":
                wscale_rcv = d["wscale"]
        if d["dir"] == "fwd":
            s["fwd_packets"] += 1
            if d["len"] > 0:
                s["fwd_data_segments"] += 1
                s["fwd_data_bytes"] += d["len"]
                if d["rel"] < max_end:
                    d["rexmit"] = True
                    s["fwd_retransmitted_segments"] += 1
                    s["fwd_retransmitted_bytes"] += min(d["len"], max_end - d["rel"])
                max_end = max(max_end, d["rel"] + d["len"])
            elif not f & 0x07 and max_end > 0 and d["rel"] == max_end - 1:
                s["fwd_zero_window_probes"] += 1
        else:
            s["rev_packets"] += 1
            if d["len"] > 0:
                s["rev_data_segments"] += 1
            elif not f & 0x07:
                s["rev_pure_acks"] += 1
                if d["win"] == 0:
                    s["rev_zero_window_advertisements"] += 1
                if d["sack_blocks"]:
                    s["rev_acks_with_sack"] += 1
                if prev_ack is not None and d["ack"] == prev_ack[0] and d["win"] == prev_ack[1]:
                    s["rev_dup_acks"] += 1
                prev_ack = (d["ack"], d["win"])
    s["fwd_max_seq_end"] = max_end
    s["receiver_window_scale"] = wscale_rcv
    return s, dec, isn


def read_nstat(path):
    out = {}
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.split()
        if len(f) >= 2 and f[1].lstrip("-").isdigit():
            out[f[0]] = int(f[1])
    return out


def nstat_delta(work, side, always):
    b = read_nstat(os.path.join(work, "nstat-%s-before.txt" % side))
    a = read_nstat(os.path.join(work, "nstat-%s-after.txt" % side))
    d = {k: a[k] - b.get(k, 0) for k in a}
    out = {k: d.get(k, 0) for k in always if k in a}
    for k, v in sorted(d.items()):
        if v and (k.startswith("Tcp") or k.startswith("Ip") and not k.startswith("Ip6")):
            out[k] = v
    return dict(sorted(out.items()))


def link_stats(path):
    try:
        j = json.load(open(path))[0]
        st = j.get("stats64", j.get("stats", {}))
        return {"rx_packets": st["rx"]["packets"], "rx_dropped": st["rx"]["dropped"],
                "tx_packets": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}
    except Exception as ex:  # pragma: no cover
        return {"error": str(ex)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--name", required=True)
    a = ap.parse_args()
    W = lambda f: os.path.join(a.work, f)
    P = json.load(open(W("params.json")))
    snd_ip, rcv_ip = P["sender_ip"], P["receiver_ip"]
    send = json.load(open(W("send.json")))
    recv = json.load(open(W("recv.json")))

    s_sum, s_dec, s_isn = analyze_capture(read_pcap(W("snd.pcap")), snd_ip, rcv_ip)
    r_sum, r_dec, r_isn = analyze_capture(read_pcap(W("rcv.pcap")), snd_ip, rcv_ip)

    # relay log
    relay = [json.loads(l) for l in open(W("relay.jsonl"))]
    rstart = relay[0]
    rend = relay[-1] if relay[-1]["ev"] == "end" else {"stats": {}, "delay_ms": None}
    rpk = [r for r in relay if r["ev"] == "pkt"]
    releases = [r for r in relay if r["ev"] == "release"]

    snd_by_key = {}
    for d in s_dec:
        snd_by_key.setdefault((d["dir"], d["rel"], d["len"], d["ip_id"]), d)

    dropped = []
    for r in rpk:
        if r["fate"] == "drop":
            m = snd_by_key.get((r["dir"], r["seq"], r["len"], r["ip_id"]))
            dropped.append({"seq": r["seq"], "len": r["len"], "time": r["t"], "where": "relay",
                            "retransmission": bool(r.get("rexmit")), "ip_id": r["ip_id"],
                            "time_sender_capture": m["t"] if m else None})
    reordered = []
    for r in rpk:
        if r["fate"] == "hold":
            rel = next((x for x in releases if x["seq"] == r["seq"] and x["ip_id"] == r["ip_id"]), None)
            m = snd_by_key.get((r["dir"], r["seq"], r["len"], r["ip_id"]))
            reordered.append({"seq": r["seq"], "len": r["len"], "time": r["t"],
                              "released_time": rel["t"] if rel else None,
                              "held_behind_packets": rel["behind"] if rel else None,
                              "release_reason": rel["why"] if rel else None,
                              "retransmission": bool(r.get("rexmit")), "ip_id": r["ip_id"],
                              "time_sender_capture": m["t"] if m else None})

    # capture diff: fwd packets seen at the sender but not at the receiver
    def keyset(dec, direction):
        c = {}
        for d in dec:
            if d["dir"] == direction:
                k = (d["rel"], d["len"], d["ip_id"], d["flags"])
                c[k] = c.get(k, 0) + 1
        return c
    s_f, r_f = keyset(s_dec, "fwd"), keyset(r_dec, "fwd")
    missing = []
    for d in s_dec:
        if d["dir"] != "fwd":
            continue
        k = (d["rel"], d["len"], d["ip_id"], d["flags"])
        if r_f.get(k, 0) > 0:
            r_f[k] -= 1
        else:
            missing.append(d)
    extra_at_rcv = sum(v for v in r_f.values() if v > 0)
    s_r, r_r = keyset(s_dec, "rev"), keyset(r_dec, "rev")
    rev_missing = sum(max(0, v - s_r.get(k, 0)) for k, v in r_r.items())

    relay_drop_keys = {(x["seq"], x["len"], x["ip_id"]) for x in dropped}
    for d in missing:
        if (d["rel"], d["len"], d["ip_id"]) not in relay_drop_keys:
            dropped.append({"seq": d["rel"], "len": d["len"], "time": d["t"], "where": "tbf",
                            "retransmission": bool(d.get("rexmit")), "ip_id": d["ip_id"],
                            "time_sender_capture": d["t"]})
    dropped.sort(key=lambda x: x["time_sender_capture"] or x["time"])

    # every retransmission in the sender capture, and whether it was needed:
    # spurious = an earlier transmission covering the same bytes reached the receiver
    rcv_keys = {(d["rel"], d["len"], d["ip_id"]) for d in r_dec if d["dir"] == "fwd"}
    retransmissions = []
    sent_before = []
    for d in s_dec:
        if d["dir"] != "fwd" or d["len"] <= 0:
            continue
        if d.get("rexmit"):
            s0, e0 = d["rel"], d["rel"] + d["len"]
            prior = [p for p in sent_before if p["rel"] < e0 and p["rel"] + p["len"] > s0]
            delivered = [p for p in prior if (p["rel"], p["len"], p["ip_id"]) in rcv_keys]
            retransmissions.append({
                "seq": d["rel"], "len": d["len"], "time_sender_capture": d["t"], "ip_id": d["ip_id"],
                "transmission": len(prior) + 1,
                "reached_receiver": (d["rel"], d["len"], d["ip_id"]) in rcv_keys,
                "spurious": bool(delivered) and all(
                    any(p["rel"] <= b < p["rel"] + p["len"] for p in delivered) for b in (s0, e0 - 1))})
        sent_before.append(d)

    # one-way delays measured between the two captures (same clock)
    def owd(direction):
        first, second = (s_dec, r_dec) if direction == "fwd" else (r_dec, s_dec)
        seen = {}
        for d in first:
            if d["dir"] == direction:
                seen.setdefault((d["rel"], d["len"], d["ip_id"], d["flags"]), d["t"])
        v = sorted((d["t"] - seen[k]) * 1000 for d in second if d["dir"] == direction
                   for k in [(d["rel"], d["len"], d["ip_id"], d["flags"])] if k in seen)
        if not v:
            return None
        return {"n": len(v), "min": round(v[0], 3), "median": round(v[len(v) // 2], 3),
                "mean": round(sum(v) / len(v), 3), "p99": round(v[int(len(v) * 0.99) - 1 if len(v) > 1 else 0], 3),
                "max": round(v[-1], 3)}
    one_way = {"sender_to_receiver": owd("fwd"), "receiver_to_sender": owd("rev"),
               "note": "capture-to-capture (rcv0 vs snd0 timestamps) per matched packet, milliseconds; "
                       "includes relay jitter, reorder holds and tbf queueing"}

    tc_drops = None
    tcj = json.load(open(W("tc-rtr1.json")))
    tc_info = []
    for q in tcj:
        tc_info.append({k: q.get(k) for k in ("kind", "options", "bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")})
        if q.get("kind") == "tbf":
            tc_drops = q.get("drops")

    kern = nstat_delta(a.work, "snd", ALWAYS)
    kern_r = nstat_delta(a.work, "rcv", ALWAYS_RCV)
    errs = open(W("tcpdump-snd.err")).read() + open(W("tcpdump-rcv.err")).read()
    kdrops = [int(x) for x in re.findall(r"(\d+) packets dropped by kernel", errs)]

    links = {n: link_stats(W(n + ".json")) for n in ("tun0", "rtr0", "rtr1")}

    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    T = P["transfer_bytes"]
    check("receiver got all bytes with the right content",
          recv["bytes"] == T and recv["pattern_errors"] == 0 and send["bytes"] == T,
          "sent %d, received %d, pattern errors %d" % (send["bytes"], recv["bytes"], recv["pattern_errors"]))
    check("tcpdump dropped nothing", kdrops and all(x == 0 for x in kdrops), "kernel drops per capture: %s" % kdrops)
    check("no unaccounted drops in the router",
          all(v.get("tx_dropped", 1) == 0 and v.get("rx_dropped", 1) == 0 for v in links.values()),
          json.dumps(links))
    check("sender-capture retransmissions == kernel TcpRetransSegs",
          s_sum["fwd_retransmitted_segments"] == kern.get("TcpRetransSegs"),
          "capture %d, kernel %s" % (s_sum["fwd_retransmitted_segments"], kern.get("TcpRetransSegs")))
    n_relay = sum(1 for x in dropped if x["where"] == "relay")
    n_tbf = sum(1 for x in dropped if x["where"] == "tbf")
    check("capture diff == relay drop log + tc drops",
          len(missing) == n_relay + (tc_drops or 0) and n_tbf == (tc_drops or 0) and extra_at_rcv == 0,
          "missing at receiver %d, relay drops %d, tbf drops by diff %d, tc drop counter %s, extra at receiver %d"
          % (len(missing), n_relay, n_tbf, tc_drops, extra_at_rcv))
    check("reverse direction lossless", rev_missing == 0, "rev packets at receiver not at sender: %d" % rev_missing)
    check("all drop/reorder rules fired",
          all(r["left"] == 0 for r in rend.get("drop", [{"left": 1}]) + rend.get("reorder", [])) and
          len(dropped) >= sum(r["count"] for r in rstart["drop"]) and
          len(reordered) == sum(r["count"] for r in rstart["reorder"]),
          "drop rules %d (%d drops), reorder rules %d; logged drops %d, reorders %d"
          % (len(rstart["drop"]), sum(r["count"] for r in rstart["drop"]), len(rstart["reorder"]),
             n_relay, len(reordered)))
    # reordering really visible at the receiver: later-sent packets arrive before the held one
    if reordered:
        order = {}
        for i, d in enumerate(r_dec):
            order.setdefault((d["dir"], d["rel"], d["len"], d["ip_id"]), i)
        snd_order = {}
        for i, d in enumerate(x for x in s_dec if x["dir"] == "fwd"):
            snd_order.setdefault((d["rel"], d["len"], d["ip_id"]), i)
        overtaken = []
        fwd_r = [d for d in r_dec if d["dir"] == "fwd"]
        for x in reordered:
            k = (x["seq"], x["len"], x["ip_id"])
            si = snd_order.get(k)
            pos = next((i for i, d in enumerate(fwd_r) if (d["rel"], d["len"], d["ip_id"]) == k), None)
            if si is None or pos is None:
                overtaken.append(None)
                continue
            n = sum(1 for d in fwd_r[:pos] if snd_order.get((d["rel"], d["len"], d["ip_id"]), -1) > si)
            overtaken.append(n)
            x["overtaken_by_at_receiver"] = n
        check("reordered segments arrive behind later-sent ones",
              all(n == x["held_behind_packets"] for n, x in zip(overtaken, reordered)),
              "overtaken counts %s" % overtaken)
    if P["scenario"] == "zerowin":
        check("zero windows and window probes present",
              r_sum["rev_zero_window_advertisements"] > 0 and kern.get("TcpExtTCPWinProbe", 0) > 0
              and s_sum["fwd_zero_window_probes"] == kern.get("TcpExtTCPWinProbe", 0),
              "zero-window ACKs at receiver %d, probes in sender capture %d, TcpExtTCPWinProbe %s"
              % (r_sum["rev_zero_window_advertisements"], s_sum["fwd_zero_window_probes"],
                 kern.get("TcpExtTCPWinProbe")))

    def strip(s):
        return {k: v for k, v in s.items()}

    params = {
        "rtt_ms": 2 * P["one_way_delay_ms"],
        "one_way_delay_ms": {"sender_to_receiver": P["one_way_delay_ms"], "receiver_to_sender": P["one_way_delay_ms"]},
        "rate": None, "tbf": None,
        "drop_rules": [{"byte": r["byte"], "transmissions": r["count"]} for r in rstart["drop"]],
        "reorder_rules": [{"byte": r["byte"]} for r in rstart["reorder"]],
        "reorder_hold_packets": P["hold"] if rstart["reorder"] else None,
        "reorder_hold_timeout_ms": rstart["hold_timeout_ms"] if rstart["reorder"] else None,
        "congestion_control": send["congestion_control"], "sack": True, "timestamps": True,
        "window_scaling": True, "ecn": False, "mtu": 1500, "mss_payload": send["tcp_info"].get("snd_mss"),
        "offloads": "tso/gso/gro off on every veth",
        "sender_app": P["send_args"] or "bulk: writes everything in 64 KiB sendall() calls",
        "receiver_app": P["recv_args"] or "reads up to 65536 bytes per recv(), no sleeps",
        "snaplen": 128,
    }
    if P["tbf"]:
        m = re.search(r"rate (\S+) burst (\d+) limit (\d+)", P["tbf"])
        params["rate"] = m.group(1)
        params["tbf"] = {"where": "router egress towards receiver (rtr1)", "rate": m.group(1),
                         "burst_bytes": int(m.group(2)), "limit_bytes": int(m.group(3))}

    truth = {
        "scenario": P["scenario"],
        "description": P["description"],
        "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernel_release": platform.release(),
        "command": P["command"],
        "parameters": params,
        "transfer_bytes": T,
        "connection": {"sender": {"ip": snd_ip, "port": send["local"][1]},
                       "receiver": {"ip": rcv_ip, "port": P["receiver_port"]},
                       "sender_isn": s_isn.get("fwd"), "receiver_isn": s_isn.get("rev")},
        "seq_note": "seq fields are relative: sequence number - ISN - 1 of the sender->receiver direction, "
                    "so the first payload byte is 0. Times are UNIX epoch seconds (CLOCK_REALTIME, same clock "
                    "as the pcap timestamps); 'time' is when the router saw the packet, "
                    "'time_sender_capture' the timestamp of the same packet in NAME-snd.pcap.",
        "kernel": kern,
        "kernel_note": "nstat -az deltas in the sender's network namespace over the transfer (only this connection runs there)",
        "kernel_receiver": kern_r,
        "tcp_info_sender": send["tcp_info"],
        "tcp_info_receiver": recv["tcp_info"],
        "dropped": dropped,
        "reordered": reordered,
        "retransmissions": retransmissions,
        "retransmissions_note": "every data segment in NAME-snd.pcap whose start lies below the highest sequence "
                                "sent so far; transmission = 1 + number of earlier transmissions overlapping it; "
                                "spurious = an earlier transmission of the same bytes reached the receiver capture",
        "tc": tc_info if P["tbf"] else None,
        "relay": {"stats": rend.get("stats"), "measured_delay_ms": rend.get("delay_ms")},
        "measured_one_way_delay_ms": one_way,
        "captures": {
            "snd": dict(file="%s-snd.pcap" % a.name, where="sender veth snd0", **strip(s_sum)),
            "rcv": dict(file="%s-rcv.pcap" % a.name, where="receiver veth rcv0", **strip(r_sum)),
        },
        "app": {"sender": {k: v for k, v in send.items() if k != "tcp_info"},
                "receiver": {k: v for k, v in recv.items() if k != "tcp_info"}},
        "checks": checks,
    }
    out = os.path.join(a.outdir, a.name + ".truth.json")
    with open(out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    bad = [c for c in checks if not c["ok"]]
    print("  retransmissions: %d (spurious %d)" % (len(retransmissions), sum(r["spurious"] for r in retransmissions)))
    print("%s: kernel TcpRetransSegs=%s timeouts=%s TLP=%s fastretrans=%s winprobe=%s | dropped %d (relay %d, tbf %d) reordered %d | snd pkts %d rcv pkts %d"
          % (a.name, kern.get("TcpRetransSegs"), kern.get("TcpExtTCPTimeouts"), kern.get("TcpExtTCPLossProbes"),
             kern.get("TcpExtTCPFastRetrans"), kern.get("TcpExtTCPWinProbe"), len(dropped), n_relay, n_tbf,
             len(reordered), s_sum["packets"], r_sum["packets"]))
    for c in checks:
        print("  [%s] %s: %s" % ("ok" if c["ok"] else "FAIL", c["check"], c["detail"]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
