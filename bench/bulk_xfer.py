#!/usr/bin/env python3
"""Bulk TCP transfer for bench/gen-bulk.sh: a receiver that drains a socket and a
sender that writes a fixed number of bytes.  Plain sockets, no dependencies.

    bulk_xfer.py recv HOST PORT
    bulk_xfer.py send HOST PORT BYTES
"""
import socket
import sys
import time


def recv(host, port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(1)
    print("ready", flush=True)
    conn, _ = ls.accept()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    total = 0
    t0 = time.monotonic()
    while True:
        n = conn.recv_into(view)
        if n == 0:
            break
        total += n
    dt = time.monotonic() - t0
    conn.close()
    ls.close()
    print(f"received {total} bytes in {dt:.2f} s ({total * 8 / dt / 1e9:.2f} Gbit/s)",
          file=sys.stderr)


def send(host, port, nbytes):
    s = socket.create_connection((host, port))
    chunk = bytes(range(256)) * 4096  # 1 MiB, non-zero payload
    view = memoryview(chunk)
    left = nbytes
    while left > 0:
        n = min(left, len(chunk))
        s.sendall(view[:n])
        left -= n
    s.shutdown(socket.SHUT_WR)
    # wait for the receiver's FIN so the whole close is in the capture
    while s.recv(65536):
        pass
    s.close()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "recv":
        recv(sys.argv[2], int(sys.argv[3]))
    elif mode == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
