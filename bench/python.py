#!/usr/bin/env python3
"""The columnar exports and the cluster plan, timed (docs/python.md, docs/scale.md).

1. On the bulk trace (bench/out/bulk.pcap, made by bench/run.sh): `stats`, `export` to
   Parquet (every table, and `connections` alone) and Python's `tcpscope.read`, in paired
   rounds (ratios to `stats` in the same round), with each one's peak RSS.
2. On a made ring of capture files with many connections crossing file boundaries: the
   one-machine read, one shard task at several shard counts (the per-task costs of the
   plan), and `tcpscope.dask.analyze` on a LocalCluster of 2 worker processes.

    TCPSCOPE_BIN=target/release/tcpscope VENV/bin/python bench/python.py [TRACE]
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "crates", "py", "tests"))


def run(cmd):
    """Wall time and peak RSS (MB) of one command."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return time.monotonic() - t, ru.ru_maxrss / 1024


def paired(rounds, cmds):
    for c in cmds.values():
        run(c)
    times = {k: [] for k in cmds}
    rss = {k: 0.0 for k in cmds}
    for _ in range(rounds):
        for k, c in cmds.items():
            t, m = run(c)
            times[k].append(t)
            rss[k] = max(rss[k], m)
    ref = times[next(iter(cmds))]
    for k in cmds:
        ratio = statistics.median(t / r for t, r in zip(times[k], ref))
        print(f"  {k:<34} median {statistics.median(times[k]):6.3f} s  ×stats {ratio:5.2f}  peak RSS {rss[k]:6.0f} MB")
    return times


PLAIN_READ = "python read, plain install"


def plain_cmds(trace):
    """`read` and the imports in the interpreter $BENCH_PY_PLAIN, of a virtual environment holding
    only the package and what it requires (`make bench-python` makes it): the fresh process a
    plain `pip install tcpscope` gives. This one (with pandas and Dask) has numpy, which pyarrow
    imports whenever it is installed."""
    plain = os.environ.get("BENCH_PY_PLAIN")
    if not plain:
        return {}
    return {
        PLAIN_READ: [plain, "-c", f"import tcpscope; tcpscope.read({trace!r})"],
        "plain install: start, import": [plain, "-c", "import tcpscope"],
    }


def main():
    bin_ = os.environ.get("TCPSCOPE_BIN", "target/release/tcpscope")
    trace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out", "bulk.pcap")
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="tcpscope-bench-py-") as tmp:
        if os.path.exists(trace):
            rounds = int(os.environ.get("BENCH_PY_ROUNDS", "5"))
            print(f"{trace}: {rounds} paired rounds")
            times = paired(
                rounds,
                {
                    "stats": [bin_, "stats", "-q", trace],
                    "export parquet (all tables)": [bin_, "export", "-q", trace, "-o", f"{tmp}/all"],
                    "export parquet (connections)": [bin_, "export", "-q", trace, "-o", f"{tmp}/c", "--tables", "connections"],
                    "export parquet (segments)": [bin_, "export", "-q", trace, "-o", f"{tmp}/s", "--tables", "segments"],
                    "export parquet (segments, lz4)": [
                        bin_, "export", "-q", trace, "-o", f"{tmp}/z", "--tables", "segments", "--compression", "lz4",
                    ],
                    "python read (all tables)": [py, "-c", f"import tcpscope; tcpscope.read({trace!r})"],
                    "python start, import tcpscope": [py, "-c", "import tcpscope"],
                    **plain_cmds(trace),
                },
            )
            export = times["export parquet (all tables)"]
            # What `read` itself costs a notebook, whose interpreter has started and imported
            # pyarrow already: the process less its start, round by round, against the export.
            rounds = zip(times["python read (all tables)"], times["python start, import tcpscope"], export)
            ratio = statistics.median((r - i) / e for r, i, e in rounds)
            print(f"  python read less the start and imports, ×export parquet (all tables) {ratio:5.2f}")
            for k in ("python read (all tables)", PLAIN_READ):
                if k in times:
                    ratio = statistics.median(r / e for r, e in zip(times[k], export))
                    print(f"  {k} as a fresh process, ×export parquet (all tables) {ratio:5.2f}")
        else:
            print(f"{trace} missing (bench/run.sh records it): the export timings are skipped")
        cluster(tmp, py)


def cluster(tmp, py):
    import tcpscope
    import tcpscope.dask
    from conftest import make_ring
    from dask.distributed import Client, LocalCluster

    ring = make_ring(os.path.join(tmp, "ring"), files=24, n_conns=int(os.environ.get("BENCH_RING_CONNS", "4000")))
    size = sum(os.path.getsize(os.path.join(ring, f)) for f in os.listdir(ring))
    t = time.monotonic()
    one = tcpscope.read(ring, "connections")
    t_one = time.monotonic() - t
    print(f"ring: 24 files, {size / 1e6:.1f} MB, {one.num_rows // 2} connections; one machine {t_one:.3f} s")
    for n in (1, 2, 4, 8, 16):
        ts = []
        for _ in range(3):
            t = time.monotonic()
            part = tcpscope.read(ring, "connections", shard=(0, n) if n > 1 else None)
            ts.append(time.monotonic() - t)
        mb = part.nbytes / 1e6
        print(f"  one task of {n:>2} shards: {min(ts):.3f} s, {part.num_rows // 2} connections, result {mb:.2f} MB")
    # CPU time, which other load on the machine does not inflate as it does wall time: the one
    # read in process, then each analyze's client (which runs the scheduler too) and workers.
    c0 = cpu()
    tcpscope.read(ring, "connections")
    print(f"  one machine, CPU {cpu() - c0:.3f} s")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, Client(cl) as c:
        for shards in (1, 2, 4, 8):
            tcpscope.dask.analyze([ring], client=c, shards=shards).compute()  # warm the workers
            w0, c0, t = c.run(cpu), cpu(), time.monotonic()
            # The default spelled out: new task keys, so nothing is reused from the warm-up.
            got = tcpscope.dask.analyze([ring], client=c, shards=shards, idle_split=240.0).compute()
            dt, c1, w1 = time.monotonic() - t, cpu(), c.run(cpu)
            workers = sum(w1[k] - w0[k] for k in w0)
            print(
                f"  LocalCluster 2 workers, {shards} shards: {dt:.3f} s ({t_one / dt:.2f}× one machine), {len(got)} rows;"
                f" CPU: workers {workers:.3f} s, client and scheduler {c1 - c0:.3f} s"
            )


def cpu():
    """This process's CPU time (user and system), s."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


if __name__ == "__main__":
    main()
