#!/usr/bin/env python3
"""Paired timing on a noisy machine: runs the commands in turn, round after round, and reports
each one's wall time (min, median) and, per round, its ratio to the first command's time in the
same round: slow drifts in the machine's speed (other load, a hypervisor stealing the virtual
CPUs) hit both sides of a ratio alike.

    bench/paired.py ROUNDS 'REF COMMAND' 'COMMAND' ...

Output goes to /dev/null; the first command is the reference (e.g. tcptrace).
"""
import statistics
import subprocess
import sys
import time


def run(cmd):
    t = time.monotonic()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t


def main():
    rounds, cmds = int(sys.argv[1]), sys.argv[2:]
    for c in cmds:  # warm-up: page cache, binaries
        run(c)
    times = [[] for _ in cmds]
    for _ in range(rounds):
        for i, c in enumerate(cmds):
            times[i].append(run(c))
    ref = times[0]
    print(f"{rounds} rounds; ratio = reference time / command time in the same round")
    for c, ts in zip(cmds, times):
        ratios = [r / t for r, t in zip(ref, ts)]
        print(f"  min {min(ts):.3f} s  median {statistics.median(ts):.3f} s  "
              f"ratio median {statistics.median(ratios):.2f} (best-vs-best {min(ref) / min(ts):.2f})  {c}")


if __name__ == "__main__":
    main()
