#!/usr/bin/env python3
"""Memory a ledger file costs: `once` over tens of thousands of small files, two builds side by side.

    cargo build --release --bin reasonix-exporter
    python3 bench/many_files.py OLD_BINARY NEW_BINARY [--files 10000,50000] [--runs 3]

Each size is a stats folder of that many files of three lines, all of the same three days (a
synced folder's conflict copies, a restored backup: nothing but the files' number grows), made
once. Per build, size and round: the backfill (`once --otlp off` into an empty state dir) and
then a `once` with nothing new (at rest), each one's peak RSS (GNU time). The builds alternate,
their order swapped every round. Prints the medians, and the cost of a file at the margin: the difference between
the largest and the smallest size, divided by the files between them (what a process holds
whatever the files, sled's buffers and the binary, drops out).
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fresh_copies  # noqa: E402

LINE = ('{"ts":"2026-08-0%dT10:%02d:%02d.%06d+08:00","model":"deepseek/deepseek-v4-flash","source":"desktop",'
        '"prompt":%d,"completion":12,"total":%d,"requests":1}\n')


def make(stats, files):
    os.makedirs(stats)
    for f in range(files):
        day = 1 + f % 3
        text = "".join(LINE % (day, i, f % 60, f, 100 + i, 112 + i) for i in range(3))
        with open(os.path.join(stats, "2026-08-0%d (%d).jsonl" % (day, f)), "w") as out:
            out.write(text)


def peak_kib(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return int(out.stderr.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--files", default="10000,50000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(n) for n in args.files.split(",")]
    work = tempfile.mkdtemp(prefix="rx-files-")
    try:
        builds = fresh_copies(work, {"old": args.old, "new": args.new})
        for n in sizes:
            make(os.path.join(work, str(n)), n)
        peaks = {(b, n, kind): [] for b in builds for n in sizes for kind in ("backfill", "rest")}
        for i in range(args.runs):
            # ABBA: neither build always goes first.
            order = list(builds.items()) if i % 2 == 0 else list(reversed(builds.items()))
            for name, binary in order:
                for n in sizes:
                    state = os.path.join(work, "state")
                    shutil.rmtree(state, ignore_errors=True)
                    once = [binary, "--stats-dir", os.path.join(work, str(n)), "--state-dir", state, "once", "--otlp", "off"]
                    peaks[(name, n, "backfill")].append(peak_kib(once))
                    peaks[(name, n, "rest")].append(peak_kib(once))
        med = {k: statistics.median(v) for k, v in peaks.items()}
        low, high = min(sizes), max(sizes)
        print(f"\n`once` over files of three lines of the same three days; peak RSS, median of {args.runs} rounds, "
              f"builds alternating (ABBA); {os.cpu_count()} cores\n")
        print("| build | " + " | ".join(f"{n:,} files, backfill | {n:,} files, at rest" for n in sizes)
              + " | a file, backfill | a file, at rest |")
        print("|---|" + "---|" * (2 * len(sizes) + 2))
        for name in builds:
            cells = [f"{med[(name, n, kind)] / 1024:.1f} MiB" for n in sizes for kind in ("backfill", "rest")]
            per = [(med[(name, high, kind)] - med[(name, low, kind)]) * 1024 / (high - low) for kind in ("backfill", "rest")]
            print(f"| {name} | " + " | ".join(cells) + f" | {per[0]:.0f} B | {per[1]:.0f} B |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
