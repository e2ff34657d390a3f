#!/usr/bin/env python3
"""The same capture made K times longer: its frames K times over, copy i later by i * STEP
seconds (STEP longer than the capture) and with both TCP ports of every frame raised by i (the
TCP checksum updated to match), so that each copy is a connection of its own.

    bench/repeat.py IN.pcap OUT.pcap K STEP

Two captures of the same connections repeated with the same K and STEP are again two captures
of the same (K times as many) connections: `bench/correlate.sh` correlates a pair and the pair
made 4 times longer, to show that the peak memory does not grow with the captures' length.
Classic pcap (µs or ns, either byte order), Ethernet (optionally 802.1Q) or raw IP.
"""
import struct
import sys

src, dst, k, step_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])


def frames(path):
    with open(path, "rb") as f:
        head = f.read(24)
        magic = head[:4]
        order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
        link = struct.unpack(order + "I", head[20:24])[0]
        yield head, order, 1_000_000_000 if nanos else 1_000_000, link
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, orig = struct.unpack(order + "IIII", rec)
            yield sec, frac, orig, bytearray(f.read(incl))


def tcp_at(data, link):
    """Byte offset of the TCP header, or None."""
    if link == 1:
        at, eth = 14, data[12:14]
        if eth == b"\x81\x00":
            at, eth = 18, data[16:18]
        if eth not in (b"\x08\x00", b"\x86\xdd"):
            return None
    elif link in (101, 228, 229):
        at = 0
    else:
        sys.exit(f"repeat.py: link type {link} not handled")
    if len(data) < at + 1:
        return None
    v = data[at] >> 4
    if v == 4 and len(data) >= at + 20 and data[at + 9] == 6:
        return at + (data[at] & 15) * 4
    if v == 6 and len(data) >= at + 40 and data[at + 6] == 6:
        return at + 40
    return None


def fold(x):
    while x > 0xFFFF:
        x = (x & 0xFFFF) + (x >> 16)
    return x


def raise_ports(data, at, by):
    """Both ports + by; the checksum updated incrementally (RFC 1624: HC' = ~(~HC + ~m + m'))."""
    if len(data) < at + 18:
        return
    total = 0
    for off in (at, at + 2):
        old = struct.unpack(">H", data[off : off + 2])[0]
        new = (old + by - 1) % 0xFFFF + 1  # never port 0
        struct.pack_into(">H", data, off, new)
        total += (~old & 0xFFFF) + new
    hc = struct.unpack(">H", data[at + 16 : at + 18])[0]
    struct.pack_into(">H", data, at + 16, ~fold((~hc & 0xFFFF) + total) & 0xFFFF)


it = frames(src)
head, order, unit, link = next(it)
first = last = None
for sec, frac, _, _ in it:
    t = sec * unit + frac
    first = t if first is None else first
    last = t
if first is None:
    sys.exit("repeat.py: no frames")
step = round(step_s * unit)
if step <= last - first:
    sys.exit(f"repeat.py: STEP must exceed the capture's span, {(last - first) / unit:.3f} s")
with open(dst, "wb") as out:
    out.write(head)
    for i in range(k):
        it = frames(src)
        next(it)
        for sec, frac, orig, data in it:
            t = sec * unit + frac + i * step
            if i:
                at = tcp_at(data, link)
                if at is not None:
                    raise_ports(data, at, i)
            out.write(struct.pack(order + "IIII", t // unit, t % unit, len(data), orig))
            out.write(data)
