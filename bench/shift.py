#!/usr/bin/env python3
"""A second vantage point from a capture: every frame DELAY seconds later, one in N removed.

    bench/shift.py IN.pcap OUT.pcap DELAY N

Classic pcap (µs or ns, either byte order) in, the same format out.
"""
import struct
import sys

src, dst, delay, every = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
with open(src, "rb") as f, open(dst, "wb") as out:
    head = f.read(24)
    magic = head[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    unit = 1_000_000_000 if nanos else 1_000_000
    shift = round(delay * unit)
    out.write(head)
    n = 0
    while True:
        rec = f.read(16)
        if len(rec) < 16:
            break
        sec, frac, incl, orig = struct.unpack(order + "IIII", rec)
        data = f.read(incl)
        n += 1
        if n % every == 0:
            continue
        t = sec * unit + frac + shift
        out.write(struct.pack(order + "IIII", t // unit, t % unit, incl, orig))
        out.write(data)
