#!/usr/bin/env python3
"""Write a synthetic pcap of many short, overlapping TCP connections (default 200,000).

    bench/gen-many.py OUT.pcap [--conns N] [--duration S] [--seed N] [--concurrent]

Each connection, as seen by a capture point next to the server:
  SYN / SYN-ACK / ACK with MSS, SACK-permitted, timestamps and window-scale options
  (Linux option layout), a request of 1-2 segments, an optional delayed ACK from a slow
  server, a response of 1-8 segments (MSS 1448), delayed ACKs from the client, then an
  optional keep-alive idle period (so that tens of thousands of connections are open at
  once), then FIN/ACK both ways, closed by either side.
Start times are spread over --duration seconds (Poisson arrivals); RTTs 2-200 ms
(log-uniform).  Valid Ethernet/IPv4/TCP headers (IP header checksums are right, TCP
checksums are zero), every packet cut to a 96-byte snap length like `tcpdump -s 96`,
original lengths kept.  Deterministic for a given seed.  Pure Python, standard library.

--concurrent: every connection open at once, round-robin interleaved: the k-th packet of
every connection, in connection order, then the (k+1)-th (200,000 connections: 2.6 M
packets, all 200,000 open from the first round to the last). Round k takes --duration /
(longest connection's packet count) seconds, so each connection's packets stay in order and
its timing keeps its shape only loosely; what it measures is state held for many open
connections.
"""
import argparse
import math
import random
import struct
import sys

SNAPLEN = 96
BASE_TIME = 1_700_000_000  # seconds, fixed so that the file is reproducible
MSS = 1448  # payload per full segment with 12 bytes of timestamp option
SRV_MAC = b"\x02\x00\x00\x00\x00\x01"
GW_MAC = b"\x02\x00\x00\x00\x00\xfe"

F_FIN, F_SYN, F_RST, F_PSH, F_ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_ip_hdr = struct.Struct("!BBHHHBBH4s4s")
_tcp_hdr = struct.Struct("!HHIIBBHHH")
_ts_opt = struct.Struct("!BBBBII")  # NOP NOP TS(8,10) val ecr
_syn_opt = struct.Struct("!BBHBBBBIIBBBB")  # MSS, SACK_PERM, TS, NOP, WS
_words10 = struct.Struct("!10H")
_rec_hdr = struct.Struct("<IIII")


def ip_checksum(hdr):
    s = sum(_words10.unpack(hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Side:
    """One endpoint of a connection: addresses, sequence space, clocks."""
    __slots__ = ("mac_src", "mac_dst", "ip", "port", "seq", "ts_off", "ip_id", "ttl",
                 "win", "ts_recent")

    def __init__(self, mac_src, mac_dst, ip, port, seq, ts_off, ip_id, ttl, win):
        self.mac_src, self.mac_dst, self.ip, self.port = mac_src, mac_dst, ip, port
        self.seq, self.ts_off, self.ip_id, self.ttl, self.win = seq, ts_off, ip_id, ttl, win
        self.ts_recent = 0


def frame(t_us, a, b, flags, payload_len, syn_opts=None, wscale=7):
    """Build one truncated frame from a to b; advances a's sequence number."""
    tsval = (a.ts_off + t_us // 1000) & 0xFFFFFFFF  # 1 kHz timestamp clock
    if syn_opts is not None:
        opts = syn_opts
    else:
        opts = _ts_opt.pack(1, 1, 8, 10, tsval, a.ts_recent)
    thl = 20 + len(opts)
    ack = b.seq if flags & F_ACK else 0
    tcp = _tcp_hdr.pack(a.port, b.port, a.seq, ack, (thl // 4) << 4, flags,
                        a.win, 0, 0) + opts
    tot = 20 + thl + payload_len
    a.ip_id = (a.ip_id + 1) & 0xFFFF
    iph = _ip_hdr.pack(0x45, 0, tot, a.ip_id, 0x4000, a.ttl, 6, 0, a.ip, b.ip)
    csum = ip_checksum(iph)
    iph = iph[:10] + struct.pack("!H", csum) + iph[12:]
    hdr = a.mac_dst + a.mac_src + b"\x08\x00" + iph + tcp
    wire = len(hdr) + payload_len
    cap = min(SNAPLEN, wire)
    data = hdr + bytes(cap - len(hdr)) if cap > len(hdr) else hdr[:cap]
    # sequence space
    a.seq = (a.seq + payload_len + (1 if flags & (F_SYN | F_FIN) else 0)) & 0xFFFFFFFF
    # the peer will echo this timestamp
    b.ts_recent = tsval
    return (t_us, _rec_hdr.pack(BASE_TIME + t_us // 1_000_000, t_us % 1_000_000, cap, wire) + data)


def connection(rng, t0, cli_ip, cli_port, srv_ip, srv_port, out):
    rtt = int(math.exp(rng.uniform(math.log(2000), math.log(200_000))))  # us
    c = Side(GW_MAC, SRV_MAC, cli_ip, cli_port, rng.getrandbits(32), rng.getrandbits(32),
             rng.getrandbits(16), rng.choice((52, 54, 57, 116, 119)), 0)
    s = Side(SRV_MAC, GW_MAC, srv_ip, srv_port, rng.getrandbits(32), rng.getrandbits(32),
             0, 64, 0)
    c_ws = rng.choice((7, 8, 9, 10))
    s_ws = 9
    t = t0
    # handshake
    c.win = 64240
    out.append(frame(t, c, s, F_SYN, 0, _syn_opt.pack(
        2, 4, 1460, 4, 2, 8, 10, (c.ts_off + t // 1000) & 0xFFFFFFFF, 0, 1, 3, 3, c_ws)))
    t += rng.randint(15, 80)
    s.win = 65160
    out.append(frame(t, s, c, F_SYN | F_ACK, 0, _syn_opt.pack(
        2, 4, 1460, 4, 2, 8, 10, (s.ts_off + t // 1000) & 0xFFFFFFFF, s.ts_recent, 1, 3, 3, s_ws)))
    t += rtt
    c.win = 64256 >> c_ws or 1
    s.win = 65280 >> s_ws
    out.append(frame(t, c, s, F_ACK, 0))
    # request: 1 or 2 segments
    t += rng.randint(5, 300)
    req = rng.randint(80, 2400)
    while req > 0:
        n = min(req, MSS)
        req -= n
        out.append(frame(t, c, s, F_ACK | (F_PSH if req == 0 else 0), n))
        t += 12
    # server think time; a pure ACK if longer than the delayed-ACK timer
    think = int(rng.expovariate(1 / 8000)) + 50
    if think > 40_000:
        out.append(frame(t + 40_000, s, c, F_ACK, 0))
    t += think
    # response: 1-8 segments in one flight (initial window 10)
    resp = rng.randint(200, 8 * MSS)
    segs = []
    while resp > 0:
        n = min(resp, MSS)
        resp -= n
        segs.append(n)
    t_flight = t
    for i, n in enumerate(segs):
        out.append(frame(t, s, c, F_ACK | (F_PSH if i == len(segs) - 1 else 0), n))
        t += 12
    # client ACKs every second segment, the odd last one after its delayed-ACK timer
    t = t_flight + rtt
    s.win = 65280 >> s_ws
    for i in range(1, len(segs) + 1):
        if i % 2 == 0 or i == len(segs):
            # the ACK covers segments up to i; rewind the server seq for the ack number
            covered = sum(segs[i:])
            s.seq = (s.seq - covered) & 0xFFFFFFFF
            t += 12 * 2 if i % 2 == 0 else rng.randint(4000, 40_000)
            out.append(frame(t, c, s, F_ACK, 0))
            s.seq = (s.seq + covered) & 0xFFFFFFFF
    # keep-alive idle period for some connections
    r = rng.random()
    if r < 0.55:
        idle = rng.randint(1000, 200_000)
    else:
        idle = int(rng.uniform(1, 30) * 1_000_000)
    t += idle
    # close: usually the client first, sometimes the server (keep-alive timeout); the
    # capture is next to the server, so the client's packets come ~1 RTT after the server's
    if rng.random() < 0.7:
        first, second, first_is_client = c, s, True
    else:
        first, second, first_is_client = s, c, False
    out.append(frame(t, first, second, F_FIN | F_ACK, 0))
    t += (rng.randint(20, 200) if first_is_client else rtt)
    out.append(frame(t, second, first, F_ACK, 0))
    t += rng.randint(30, 5000)
    out.append(frame(t, second, first, F_FIN | F_ACK, 0))
    t += (rtt if first_is_client else rng.randint(20, 200))
    out.append(frame(t, first, second, F_ACK, 0))


def interleave(conns, duration):
    """Round-robin: the k-th packet of each connection in turn, re-timed evenly."""
    rounds = max(len(c) for c in conns)
    step = duration * 1e6 / (rounds * len(conns))  # microseconds between packets
    out = []
    n = 0
    for k in range(rounds):
        for c in conns:
            if k < len(c):
                t_us = int(n * step)
                n += 1
                hdr = _rec_hdr.pack(BASE_TIME + t_us // 1_000_000, t_us % 1_000_000,
                                    *_rec_hdr.unpack_from(c[k][1])[2:])
                out.append((t_us, hdr + c[k][1][_rec_hdr.size:]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--conns", type=int, default=200_000)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds over which connections start")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--concurrent", action="store_true",
                    help="all connections open at once, their packets round-robin interleaved")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    servers = [bytes((203, 0, 113, i)) for i in range(1, 41)]
    rate = args.conns / (args.duration * 1e6)  # arrivals per microsecond
    used = set()
    pkts = []
    t = 0
    for _ in range(args.conns):
        t += int(rng.expovariate(rate)) + 1
        while True:
            cli_ip = bytes((100, 64 + rng.randrange(64), rng.randrange(256), 1 + rng.randrange(254)))
            cli_port = rng.randint(32768, 60999)
            srv = rng.choice(servers)
            key = (cli_ip, cli_port, srv)
            if key not in used:
                used.add(key)
                break
        srv_port = 443 if rng.random() < 0.8 else 80
        if args.concurrent:
            mine = []
            connection(rng, t, cli_ip, cli_port, srv, srv_port, mine)
            pkts.append(mine)
        else:
            connection(rng, t, cli_ip, cli_port, srv, srv_port, pkts)
    if args.concurrent:
        pkts = interleave(pkts, args.duration)
    else:
        pkts.sort(key=lambda p: p[0])  # stable: packets of one connection keep their order
    with open(args.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, 1))
        f.writelines(p[1] for p in pkts)
    print(f"gen-many: wrote {args.out}: {args.conns} connections, {len(pkts)} packets",
          file=sys.stderr)


if __name__ == "__main__":
    main()
