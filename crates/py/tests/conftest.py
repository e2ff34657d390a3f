"""Shared helpers: the repository's recorded traces, the CLI, and made-up captures."""

import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


@pytest.fixture
def loss_snd():
    return str(DATA / "loss-snd.pcap")


@pytest.fixture
def cli():
    """The tcpscope binary the Makefile built (TCPSCOPE_BIN), or a skip saying why."""
    b = os.environ.get("TCPSCOPE_BIN") or shutil.which("tcpscope")
    if not b or not os.path.exists(b):
        pytest.skip("no tcpscope binary: set TCPSCOPE_BIN (make test-python does)")
    return lambda *args: subprocess.run([b, *args], check=True, capture_output=True, text=True).stdout


def _ip_tcp(src, dst, sport, dport, seq, ack, flags, payload_len):
    """An Ethernet + IPv4 + TCP packet (checksums zero: tcpscope does not check them)."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    total = 20 + len(tcp) + payload_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0, 64, 6, 0, bytes(src), bytes(dst))
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    return eth + ip + tcp + b"x" * payload_len


def write_pcap(path, packets):
    """packets: (ts_ns, frame bytes) in order; a microsecond pcap."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ts, frame in packets:
            f.write(struct.pack("<IIII", ts // 10**9, ts % 10**9 // 1000, len(frame), len(frame)))
            f.write(frame)


def made_connections(n_conns=150, seed=23):
    """Many overlapping connections (handshake, data with some losses resent, FIN), their
    packets interleaved in time: (ts_ns, frame) sorted."""
    rnd = random.Random(seed)
    pkts = []
    SYN, ACK, FIN, PSH = 0x02, 0x10, 0x01, 0x08
    t0 = 1_700_000_000 * 10**9
    for k in range(n_conns):
        c, s = [10, 1, k // 250, 1 + k % 250], [10, 2, 0, 1 + rnd.randrange(8)]
        cp, sp = 20000 + k, 443
        ci, si = rnd.randrange(1 << 32), rnd.randrange(1 << 32)
        t = t0 + rnd.randrange(60 * 10**9)
        rtt = (5 + rnd.randrange(50)) * 10**6
        out = []

        def p(from_c, flags, seq, ack, ln, at):
            src, dst, a, b = (c, s, cp, sp) if from_c else (s, c, sp, cp)
            out.append((at, _ip_tcp(src, dst, a, b, seq, ack, flags, ln)))

        p(True, SYN, ci, 0, 0, t)
        p(False, SYN | ACK, si, ci + 1, 0, t + rtt)
        p(True, ACK, ci + 1, si + 1, 0, t + 2 * rtt)
        seq = ci + 1
        t += 2 * rtt
        for i in range(5 + rnd.randrange(30)):
            t += rnd.randrange(400) * 10**6
            ln = 1000
            p(True, ACK | PSH, seq, si + 1, ln, t)
            if rnd.random() < 0.1:  # lost, resent after a timeout
                t += 300 * 10**6
                p(True, ACK | PSH, seq, si + 1, ln, t)
            seq += ln
            p(False, ACK, si + 1, seq, 0, t + rtt)
        t += rtt
        p(True, FIN | ACK, seq, si + 1, 0, t)
        p(False, FIN | ACK, si + 1, seq + 1, 0, t + rtt)
        p(True, ACK, seq + 1, si + 2, 0, t + 2 * rtt)
        pkts.extend(out)
    pkts.sort(key=lambda x: x[0])
    return pkts


def make_ring(directory, files=24, **kw):
    """A ring directory: the made connections cut into `files` pcaps in time order."""
    pkts = made_connections(**kw)
    os.makedirs(directory, exist_ok=True)
    per = -(-len(pkts) // files)
    for i in range(files):
        write_pcap(os.path.join(directory, f"ring-{i:03d}.pcap"), pkts[i * per : (i + 1) * per])
    return directory
