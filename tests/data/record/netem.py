#!/usr/bin/env python3
"""Tiny userspace "netem" for the router namespace (no kernel netem needed).

The router namespace policy-routes every packet that arrives on its two veths
into a TUN device; this program reads them from the TUN device, applies

  * a fixed one-way delay per direction (--delay-ms),
  * deterministic drops (--drop BYTE[:COUNT],...: drop the first COUNT
    transmissions -- original or retransmission -- of the sender->receiver data
    segment(s) covering relative byte BYTE; COUNT defaults to 1),
  * deterministic reordering (--reorder BYTE,...: the first data segment that
    covers relative byte BYTE is held back until --hold N further packets of the
    same direction have been forwarded, then released right behind them;
    a hold expires after --hold-timeout-ms),

and writes the packets back into the TUN device, from where the kernel routes
them on by destination.  "Relative byte" means: sequence number minus the
initial sequence number minus 1, i.e. the first payload byte of the connection
is byte 0.

Everything it does is logged as JSON lines (--log): one "pkt" record for every
TCP packet with its fate ("fwd", "drop", "hold"), plus "release" records for
held packets.  Times are CLOCK_REALTIME seconds (same clock as tcpdump).
"""
import argparse
import collections
import fcntl
import json
import random
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    ifr = struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI)
    fcntl.ioctl(fd, TUNSETIFF, ifr)
    os.set_blocking(fd, False)
    return fd


def ip2b(s):
    return bytes(int(x) for x in s.split("."))


def parse_rules(spec, with_count):
    out = []
    if not spec:
        return out
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if ":" in item:
            b, c = item.split(":")
            out.append({"byte": int(b), "count": int(c), "left": int(c)})
        else:
            out.append({"byte": int(item), "count": 1, "left": 1})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tun", default="tun0")
    ap.add_argument("--sender", required=True, help="sender IPv4 address")
    ap.add_argument("--receiver", required=True, help="receiver IPv4 address")
    ap.add_argument("--port", type=int, required=True, help="receiver (data) port")
    ap.add_argument("--delay-ms", type=float, default=10.0)
    ap.add_argument("--drop", default="")
    ap.add_argument("--loss-rate", type=float, default=0.0,
                    help="also drop each data segment (original or resent) with this probability")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random drops")
    ap.add_argument("--reorder", default="")
    ap.add_argument("--hold", type=int, default=3)
    ap.add_argument("--hold-timeout-ms", type=float, default=50.0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", help="file to create once the TUN device is open")
    a = ap.parse_args()

    snd, rcv = ip2b(a.sender), ip2b(a.receiver)
    delay = a.delay_ms / 1000.0
    hold_timeout = a.hold_timeout_ms / 1000.0
    drops = parse_rules(a.drop, True)
    rng = random.Random(a.seed)
    reorders = parse_rules(a.reorder, False)

    fd = open_tun(a.tun)
    log = open(a.log, "w", buffering=1 << 16)

    def L(rec):
        log.write(json.dumps(rec, separators=(",", ":")) + "\n")

    L({"ev": "start", "t": time.time(), "delay_ms": a.delay_ms, "drop": drops,
       "loss_rate": a.loss_rate, "seed": a.seed,
       "reorder": reorders, "hold": a.hold, "hold_timeout_ms": a.hold_timeout_ms,
       "sender": a.sender, "receiver": a.receiver, "port": a.port})

    stop = [False]

    def on_sig(*_):
        stop[0] = True

    signal.signal(signal.SIGTERM, on_sig)
    signal.signal(signal.SIGINT, on_sig)

    if a.ready:
        open(a.ready, "w").close()

    # per direction: FIFO of [release_monotonic, packet, info]
    queues = {"fwd": collections.deque(), "rev": collections.deque(), "other": collections.deque()}
    held = {"fwd": [], "rev": []}  # [pkt, info, remaining, deadline_mono, arrival_mono]
    isn = {"fwd": None, "rev": None}
    snd_max = {"fwd": 0, "rev": 0}
    stats = collections.Counter()

    def classify(p):
        """Return (direction, info) for a packet."""
        if len(p) < 20 or p[0] >> 4 != 4:
            return "other", None
        ihl = (p[0] & 15) * 4
        src, dst = p[12:16], p[16:20]
        d = "fwd" if (src == snd and dst == rcv) else "rev" if (src == rcv and dst == snd) else "other"
        if p[9] != 6 or len(p) < ihl + 20 or d == "other":
            return d, None
        tot = struct.unpack_from("!H", p, 2)[0]
        ipid = struct.unpack_from("!H", p, 4)[0]
        sport, dport, seq, ack = struct.unpack_from("!HHII", p, ihl)
        doff = (p[ihl + 12] >> 4) * 4
        flags = p[ihl + 13]
        plen = tot - ihl - doff
        port_ok = (dport == a.port) if d == "fwd" else (sport == a.port)
        if not port_ok:
            return "other", None
        if flags & 0x02:  # SYN
            isn[d] = seq
        rel = None
        if isn[d] is not None:
            rel = (seq - isn[d] - 1) & 0xFFFFFFFF
            if flags & 0x02:
                rel = -1
        return d, {"dir": d, "seq": rel, "len": plen, "flags": flags, "ip_id": ipid,
                   "abs_seq": seq, "ack": ack}

    def process(p, now_m, now_r):
        d, info = classify(p)
        stats["in_" + d] += 1
        rec = None
        if info is not None:
            rec = {"ev": "pkt", "t": now_r, "dir": d, "seq": info["seq"], "len": info["len"],
                   "flags": info["flags"], "ip_id": info["ip_id"]}
        fate = "fwd"
        if d == "fwd" and info is not None and info["len"] > 0 and info["seq"] is not None:
            s, e = info["seq"], info["seq"] + info["len"]
            rexmit = s < snd_max["fwd"]
            rec["rexmit"] = rexmit
            snd_max["fwd"] = max(snd_max["fwd"], e)
            hit = False
            for r in drops:
                if r["left"] > 0 and s <= r["byte"] < e:
                    r["left"] -= 1
                    hit = True
            if a.loss_rate > 0 and rng.random() < a.loss_rate:
                hit = True
            if hit:
                fate = "drop"
            else:
                for r in reorders:
                    if r["left"] > 0 and s <= r["byte"] < e:
                        r["left"] -= 1
                        fate = "hold"
                        break
        if rec is not None:
            rec["fate"] = fate
            L(rec)
        stats[fate + "_" + d] += 1
        if fate == "drop":
            return
        if fate == "hold":
            held[d].append([p, rec, a.hold, now_m + hold_timeout, now_m])
            return
        rel_t = now_m + delay
        queues[d].append([rel_t, p, rec])
        # count this packet against every packet held in this direction
        if d in held and held[d]:
            keep = []
            for h in held[d]:
                h[2] -= 1
                if h[2] <= 0:
                    queues[d].append([rel_t, h[0], h[1]])
                    L({"ev": "release", "t": now_r, "dir": d, "seq": h[1]["seq"], "len": h[1]["len"],
                       "ip_id": h[1]["ip_id"], "why": "count", "behind": a.hold})
                else:
                    keep.append(h)
            held[d] = keep

    def expire_holds(now_m, now_r):
        for d in held:
            keep = []
            for h in held[d]:
                if now_m >= h[3]:
                    queues[d].append([max(now_m, h[4] + delay), h[0], h[1]])
                    L({"ev": "release", "t": now_r, "dir": d, "seq": h[1]["seq"], "len": h[1]["len"],
                       "ip_id": h[1]["ip_id"], "why": "timeout", "behind": a.hold - h[2]})
                else:
                    keep.append(h)
            held[d] = keep

    delays = []
    while not stop[0]:
        now = time.monotonic()
        nxt = now + 0.1
        for q in queues.values():
            if q:
                nxt = min(nxt, q[0][0])
        for d in held:
            for h in held[d]:
                nxt = min(nxt, h[3])
        timeout = max(0.0, nxt - now)
        try:
            r, _, _ = select.select([fd], [], [], timeout)
        except InterruptedError:
            continue
        if r:
            while True:
                try:
                    p = os.read(fd, 65536)
                except BlockingIOError:
                    break
                process(p, time.monotonic(), time.time())
        now_m, now_r = time.monotonic(), time.time()
        expire_holds(now_m, now_r)
        for d, q in queues.items():
            while q and q[0][0] <= now_m:
                rel_t, p, rec = q.popleft()
                while True:
                    try:
                        os.write(fd, p)
                        break
                    except BlockingIOError:
                        time.sleep(0.0001)
                stats["out_" + d] += 1
                if rec is not None:
                    delays.append(time.time() - rec["t"])
                now_m = time.monotonic()
    # flush everything still queued (shutdown), so that nothing is silently lost
    for d in held:
        for h in held[d]:
            L({"ev": "release", "t": time.time(), "dir": d, "seq": h[1]["seq"], "len": h[1]["len"],
               "ip_id": h[1]["ip_id"], "why": "shutdown", "behind": a.hold - h[2]})
    nd = [x for x in delays]
    L({"ev": "end", "t": time.time(), "stats": dict(stats), "drop": drops, "reorder": reorders,
       "delay_ms": {"n": len(nd),
                    "mean": (sum(nd) / len(nd) * 1000) if nd else None,
                    "min": min(nd) * 1000 if nd else None,
                    "max": max(nd) * 1000 if nd else None}})
    log.close()


if __name__ == "__main__":
    main()
