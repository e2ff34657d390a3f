#!/usr/bin/env python3
"""Minimal TCP sender / receiver for the recordings.

  ttcp.py recv --bind IP --port P [--rcvbuf N] [--read-size N] [--read-sleep S]
               [--result FILE] [--ready FILE]
  ttcp.py send --dst IP --port P --sport P --bytes N [--cc cubic]
               [--burst N --pause S] [--result FILE]

The sender writes a deterministic byte pattern (byte i = i mod 251), then
shuts down its write side and waits for the receiver's FIN, so the whole
transfer is acknowledged before it exits.  The receiver checks the pattern.
Both write a JSON result (byte counts, addresses, timing, tcp_info).
"""
import argparse
import json
import socket
import struct
import sys
import time

PATTERN = bytes(i % 251 for i in range(251 * 1024))  # 257 KB, period 251

TCP_INFO_FIELDS = [
    # (name, struct code) following include/uapi/linux/tcp.h
    ("state", "B"), ("ca_state", "B"), ("retransmits", "B"), ("probes", "B"),
    ("backoff", "B"), ("options", "B"), ("wscale", "B"), ("flags8", "B"),
    ("rto", "I"), ("ato", "I"), ("snd_mss", "I"), ("rcv_mss", "I"),
    ("unacked", "I"), ("sacked", "I"), ("lost", "I"), ("retrans", "I"), ("fackets", "I"),
    ("last_data_sent", "I"), ("last_ack_sent", "I"), ("last_data_recv", "I"), ("last_ack_recv", "I"),
    ("pmtu", "I"), ("rcv_ssthresh", "I"), ("rtt", "I"), ("rttvar", "I"),
    ("snd_ssthresh", "I"), ("snd_cwnd", "I"), ("advmss", "I"), ("reordering", "I"),
    ("rcv_rtt", "I"), ("rcv_space", "I"), ("total_retrans", "I"),
    ("pacing_rate", "Q"), ("max_pacing_rate", "Q"), ("bytes_acked", "Q"), ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"), ("notsent_bytes", "I"), ("min_rtt", "I"),
    ("data_segs_in", "I"), ("data_segs_out", "I"), ("delivery_rate", "Q"),
    ("busy_time", "Q"), ("rwnd_limited", "Q"), ("sndbuf_limited", "Q"),
    ("delivered", "I"), ("delivered_ce", "I"), ("bytes_sent", "Q"), ("bytes_retrans", "Q"),
    ("dsack_dups", "I"), ("reord_seen", "I"), ("rcv_ooopack", "I"), ("snd_wnd", "I"),
]


def tcp_info(sock):
    fmt = "=" + "".join(c for _, c in TCP_INFO_FIELDS)
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
    n = struct.calcsize(fmt)
    if len(raw) < n:
        return {"raw_len": len(raw)}
    vals = struct.unpack_from(fmt, raw)
    d = dict(zip([f for f, _ in TCP_INFO_FIELDS], vals))
    d.pop("flags8", None)
    d["snd_wscale"], d["rcv_wscale"] = d["wscale"] & 15, d["wscale"] >> 4
    d.pop("wscale")
    d["_units"] = "rto/ato/rtt/rttvar/min_rtt/rcv_rtt in microseconds; busy/rwnd/sndbuf_limited in microseconds"
    return d


def pattern_at(off, n):
    out = bytearray()
    while n > 0:
        start = off % 251
        take = min(n, len(PATTERN) - start)
        out += PATTERN[start:start + take]
        off += take
        n -= take
    return bytes(out)


def recv(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.rcvbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    ls.bind((a.bind, a.port))
    ls.listen(1)
    if a.ready:
        open(a.ready, "w").close()
    c, peer = ls.accept()
    t0 = time.time()
    total, bad = 0, 0
    if a.initial_sleep:
        time.sleep(a.initial_sleep)
    reads = 0
    while True:
        b = c.recv(a.read_size)
        if not b:
            break
        if b != pattern_at(total, len(b)):
            bad += 1
        total += len(b)
        reads += 1
        if a.read_sleep:
            time.sleep(a.read_sleep)
    t1 = time.time()
    info = tcp_info(c)
    rcvbuf = c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    local = list(c.getsockname())
    c.close()
    res = {"role": "receiver", "bytes": total, "pattern_errors": bad, "reads": reads,
           "local": local, "peer": list(peer), "t_accept": t0, "t_eof": t1,
           "rcvbuf_effective": rcvbuf, "tcp_info": info}
    if a.result:
        json.dump(res, open(a.result, "w"), indent=1)
    return 0 if bad == 0 else 1


def send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.src or "0.0.0.0", a.sport))
    t0 = time.time()
    s.connect((a.dst, a.port))
    t1 = time.time()
    sent = 0
    burst = a.burst or a.bytes
    bursts = 0
    burst_times = []
    while sent < a.bytes:
        burst_times.append(time.time())
        end = min(a.bytes, sent + burst)
        while sent < end:
            n = min(65536, end - sent)
            s.sendall(pattern_at(sent, n))
            sent += n
        bursts += 1
        if sent < a.bytes and a.pause:
            time.sleep(a.pause)
    t2 = time.time()
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):
        pass
    t3 = time.time()
    info = tcp_info(s)
    cc = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    res = {"role": "sender", "bytes": sent, "bursts": bursts, "burst_start_times": burst_times, "local": list(s.getsockname()),
           "peer": [a.dst, a.port], "congestion_control": cc,
           "t_connect_start": t0, "t_connected": t1, "t_write_done": t2, "t_peer_fin": t3,
           "tcp_info": info}
    s.close()
    if a.result:
        json.dump(res, open(a.result, "w"), indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sp = ap.add_subparsers(dest="cmd", required=True)
    r = sp.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--rcvbuf", type=int, default=0)
    r.add_argument("--read-size", type=int, default=65536)
    r.add_argument("--read-sleep", type=float, default=0.0)
    r.add_argument("--initial-sleep", type=float, default=0.0)
    r.add_argument("--result")
    r.add_argument("--ready")
    s = sp.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--src")
    s.add_argument("--sport", type=int, default=0)
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--cc", default="cubic")
    s.add_argument("--burst", type=int, default=0)
    s.add_argument("--pause", type=float, default=0.0)
    s.add_argument("--result")
    a = ap.parse_args()
    sys.exit(recv(a) if a.cmd == "recv" else send(a))


if __name__ == "__main__":
    main()
