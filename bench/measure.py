#!/usr/bin/env python3
"""Timing and memory measurements for bench/run.sh (standard library only).

    measure.py --bin target/release/tcpscope --out bench/out --results bench/results

Runs every command several times, one process at a time, under GNU time (for peak RSS);
wall time from a monotonic clock, user/sys time from wait4().
Prints a table and writes bench/results/DATE.json with everything raw.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def run_once(argv, stdout=subprocess.DEVNULL):
    # Peak RSS comes from GNU time (%M): a child forked straight from this Python process
    # would inherit Python's RSS as the floor of its ru_maxrss.  Wall time is measured
    # here (finer than time's %e); user/sys from wait4() (they include time's child).
    fd, tfile = tempfile.mkstemp(prefix="bench-time-")
    os.close(fd)
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M %x", "-o", tfile] + argv,
                             stdout=stdout, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        with open(tfile) as f:
            last = f.read().split("\n")
        rss, code = [x for x in last if x.strip()][-1].split()[-2:]
    finally:
        os.unlink(tfile)
    return {
        "wall_s": round(wall, 4),
        "user_s": round(ru.ru_utime, 4),
        "sys_s": round(ru.ru_stime, 4),
        "max_rss_kib": int(rss),
        "exit": int(code),
    }


def measure(name, argv, runs, warmup=1):
    print(f"  {name}: {' '.join(argv)}  ({warmup} warm-up + {runs} runs)", file=sys.stderr, flush=True)
    for _ in range(warmup):
        run_once(argv)
    rs = [run_once(argv) for _ in range(runs)]
    bad = [r for r in rs if r["exit"] != 0]
    if bad:
        print(f"    WARNING: exit status {bad[0]['exit']}", file=sys.stderr)
    walls = [r["wall_s"] for r in rs]
    summary = {
        "cmd": argv,
        "runs": rs,
        "wall_median_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "cpu_median_s": statistics.median(r["user_s"] + r["sys_s"] for r in rs),
        "max_rss_kib": max(r["max_rss_kib"] for r in rs),
        "load_before": os.getloadavg()[0],
    }
    print(f"    median {summary['wall_median_s']:.3f} s  min {summary['wall_min_s']:.3f} s  "
          f"rss {summary['max_rss_kib'] / 1024:.1f} MiB", file=sys.stderr, flush=True)
    return summary


def pcap_packets(path):
    """Count records of a classic pcap file (either byte order, us or ns), or the enhanced packet
    blocks of a little-endian pcapng file (as editcap writes on this machine)."""
    n = 0
    with open(path, "rb") as f:
        if f.read(4) == b"\x0a\x0d\x0d\x0a":
            f.seek(0)
            while len(h := f.read(8)) == 8:
                kind, length = struct.unpack("<II", h)
                n += kind == 6
                f.seek(length - 8, 1)
            return n
        f.seek(0)
        magic = f.read(24)[:4]
        endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        hdr = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            caplen = hdr.unpack(h)[2]
            f.seek(caplen, 1)
            n += 1
    return n


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        for line in (out.stdout + out.stderr).splitlines():
            if line.strip() and "Running as user" not in line and "arg remaining" not in line:
                return line.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def machine_info():
    cpu = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kib = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    git = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "crates", "Cargo.toml", "Cargo.lock"],
                           capture_output=True, text=True).stdout.strip() != ""
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "mem_total_kib": mem_kib,
        "kernel": platform.release(),
        "git_head": git,
        "crates_dirty": dirty,
        "load_avg_at_start": os.getloadavg(),
    }


def fmt_rate(pps):
    return f"{pps / 1e6:.2f} M" if pps >= 1e6 else f"{pps / 1e3:.0f} k"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True, help="directory with the generated inputs")
    ap.add_argument("--results", required=True)
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 5)))
    ap.add_argument("--tshark-runs", type=int, default=int(os.environ.get("BENCH_TSHARK_RUNS", 1)))
    args = ap.parse_args()

    tcpscope = os.path.abspath(args.bin)
    inputs = {
        "bulk": {"path": os.path.join(args.out, "bulk.pcap"), "connections": 1,
                 "what": "real Linux bulk transfer, netns + tbf 1 Gbit/s + 0.05% random drop, tcpdump -s 96"},
        "many": {"path": os.path.join(args.out, "many.pcap"), "connections": 200_000,
                 "what": "synthetic, 200,000 short overlapping connections over 60 s (gen-many.py, seed 1)"},
        "concurrent": {"path": os.path.join(args.out, "concurrent.pcap"), "connections": 200_000,
                       "what": "the connections of many, all open at once, round-robin interleaved "
                               "(gen-many.py --concurrent, seed 1)"},
        "bulk-ng": {"path": os.path.join(args.out, "bulk.pcapng"), "connections": 1,
                    "what": "bulk.pcap rewritten as pcapng by editcap (Wireshark's and dumpcap's format)"},
        "mid": {"path": os.path.join(args.out, "mid.pcap"), "connections": 1,
                "what": "first 800,000 packets of bulk.pcap (for parallel scaling)"},
    }
    if not os.path.exists(inputs["bulk-ng"]["path"]):
        print("measure: no bulk.pcapng (made by run.sh with editcap): not timed", file=sys.stderr)
        del inputs["bulk-ng"]
    print("measure: inputs", file=sys.stderr)
    for name, inp in inputs.items():
        inp["bytes"] = os.path.getsize(inp["path"])
        inp["sha256"] = sha256(inp["path"])
        inp["packets"] = pcap_packets(inp["path"])
        print(f"  {name}: {inp['packets']} packets, {inp['bytes']} bytes", file=sys.stderr)

    have_tcptrace = shutil.which("tcptrace") is not None
    have_tshark = shutil.which("tshark") is not None
    versions = {
        "tcpscope": first_line([tcpscope, "--version"]),
        "tcptrace": first_line(["tcptrace", "-v"]) if have_tcptrace else None,
        "tshark": first_line(["tshark", "-v"]) if have_tshark else None,
    }

    results = {}
    for name in [n for n in ("bulk", "bulk-ng", "many", "concurrent") if n in inputs]:
        f = inputs[name]["path"]
        print(f"measure: {name}", file=sys.stderr)
        r = {"tcpscope": measure("tcpscope", [tcpscope, "stats", "-q", f], args.runs),
             "tcpscope_screen": measure("tcpscope screen", [tcpscope, "screen", "-q", "--all", f], args.runs)}
        if have_tcptrace:
            r["tcptrace"] = measure("tcptrace", ["tcptrace", "-l", "-r", "-n", f], args.runs)
        # tshark reads the same packets in either format alike: timed once, on bulk.pcap.
        if have_tshark and name not in ("bulk-ng", "concurrent"):
            r["tshark_conv"] = measure("tshark conv,tcp", ["tshark", "-r", f, "-q", "-z", "conv,tcp"],
                                       args.tshark_runs, warmup=0)
            r["tshark_expert"] = measure("tshark expert", ["tshark", "-r", f, "-q", "-z", "expert"],
                                         args.tshark_runs, warmup=0)
        results[name] = r

    # parallel scaling: 4 copies given at once (analysed in parallel) vs one copy
    print("measure: parallel scaling", file=sys.stderr)
    mid = inputs["mid"]["path"]
    copies = []
    for i in range(1, 5):
        c = os.path.join(args.out, f"mid-copy{i}.pcap")
        if not os.path.exists(c) or os.path.getsize(c) != inputs["mid"]["bytes"]:
            shutil.copyfile(mid, c)
        copies.append(c)
    par = {
        "one": measure("tcpscope 1 file", [tcpscope, "stats", "-q", mid], args.runs),
        "four": measure("tcpscope 4 files", [tcpscope, "stats", "-q"] + copies, args.runs),
    }
    t1, t4 = par["one"]["wall_median_s"], par["four"]["wall_median_s"]
    par["speedup"] = round(4 * t1 / t4, 3)  # throughput of 4 files vs 4 x one file
    par["ideal_speedup"] = min(4, os.cpu_count() or 1)
    # A file alone already runs in two or three threads, so the speedup above is no longer a
    # measure of scaling; the cores kept busy (CPU time / wall time) are.
    for k in ("one", "four"):
        par[f"cores_busy_{k}"] = round(par[k]["cpu_median_s"] / par[k]["wall_median_s"], 2)

    many_rss = results["many"]["tcpscope"]["max_rss_kib"] * 1024
    conc_rss = results["concurrent"]["tcpscope"]["max_rss_kib"] * 1024
    mem = {
        "rss_bytes": many_rss,
        "rss_per_connection_bytes": round(many_rss / 200_000, 1),
        "input_bytes": inputs["many"]["bytes"],
        "rss_minus_input_per_connection_bytes": round((many_rss - inputs["many"]["bytes"]) / 200_000, 1),
        # All 200,000 open at once: the state of every connection is held at the same time.
        "concurrent_rss_bytes": conc_rss,
        "concurrent_rss_per_connection_bytes": round(conc_rss / 200_000, 1),
    }

    now = datetime.datetime.now(datetime.timezone.utc)
    doc = {
        "date": now.isoformat(timespec="seconds"),
        "machine": machine_info(),
        "versions": versions,
        "inputs": inputs,
        "runs_per_command": {"default": args.runs, "tshark": args.tshark_runs, "warmup": 1},
        "results": results,
        "parallel": par,
        "memory_many": mem,
    }
    os.makedirs(args.results, exist_ok=True)
    out = os.path.join(args.results, now.strftime("%Y-%m-%d") + ".json")
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")

    # table
    rows = []
    for name in [n for n in ("bulk", "bulk-ng", "many", "concurrent") if n in inputs]:
        pk = inputs[name]["packets"]
        base = results[name]["tcpscope"]["wall_median_s"]
        for tool, r in results[name].items():
            w = r["wall_median_s"]
            cbase = results[name]["tcpscope"]["cpu_median_s"]
            c = r["cpu_median_s"]
            rows.append((name, tool, f"{w:.2f}", f"{r['wall_min_s']:.2f}", f"{c:.2f}",
                         f"{r['max_rss_kib'] / 1024:.0f}", fmt_rate(pk / w),
                         f"{w / base:.2f}", f"{c / cbase:.2f}"))
    hdr = ("input", "tool", "wall s (median)", "wall s (min)", "CPU s (median)", "peak RSS MiB",
           "packets/s", "wall / tcpscope", "CPU / tcpscope")
    widths = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(len(hdr))]
    line = lambda x: "| " + " | ".join(str(v).ljust(w) for v, w in zip(x, widths)) + " |"
    print()
    print(line(hdr))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print()
    print(f"parallel: 1 x mid ({inputs['mid']['packets']} packets) {t1:.2f} s, "
          f"{par['cores_busy_one']:.2f} cores busy (one file: two or three threads); "
          f"4 x mid at once {t4:.2f} s, {par['cores_busy_four']:.2f} cores busy (a thread per file); "
          f"{os.cpu_count()} cores")
    print(f"memory: tcpscope peak RSS on many.pcap {many_rss / 2**20:.0f} MiB = "
          f"{mem['rss_per_connection_bytes']:.0f} B/connection (input read through a 64 KiB buffer)")
    conc = results["concurrent"]
    ratio = (f", tcptrace -l -r / stats {conc['tcptrace']['wall_median_s'] / conc['tcpscope']['wall_median_s']:.2f}x"
             " (median wall; the paired rounds below are the steadier ratio)") if "tcptrace" in conc else ""
    print(f"memory: tcpscope peak RSS on concurrent.pcap (200,000 connections open at once) "
          f"{conc_rss / 2**20:.0f} MiB = {mem['concurrent_rss_per_connection_bytes']:.0f} B/connection{ratio}")
    print(f"raw results: {out}")


if __name__ == "__main__":
    main()
