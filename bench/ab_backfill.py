#!/usr/bin/env python3
"""The cold backfill, two builds side by side with the read+hash+decode baseline: `once --otlp off`
on a fresh state dir, old, new and baseline alternating round by round so that all three see the
same machine (its speed moves by half within minutes; see BENCHMARKS.md, "Machine and method").

    python3 bench/ab_backfill.py OLD_BINARY NEW_BINARY [--lines 1000000] [--runs 12]

Every run starts after a `sync`, so none pays for the last one's writes. Prints each side's
median and fastest run, the medians' ratios, and new/old taken round by round.
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BASELINE, GEN, fresh_copies  # noqa: E402


def timed(cmd):
    os.sync()
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=12)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-ab-backfill-")
    try:
        stats = os.path.join(work, "stats")
        state = os.path.join(work, "state")
        subprocess.run([GEN, stats, str(args.lines), "365", "1"], check=True)
        sides = fresh_copies(work, {"old": args.old, "new": args.new})
        times = {name: [] for name in [*sides, "baseline"]}
        for _ in range(args.runs):
            for name, binary in sides.items():
                shutil.rmtree(state, ignore_errors=True)
                times[name].append(timed([binary, "--stats-dir", stats, "--state-dir", state, "once", "--otlp", "off"]))
            times["baseline"].append(timed([BASELINE, stats]))
        m = {name: statistics.median(xs) for name, xs in times.items()}
        per_round = statistics.median(n / o for n, o in zip(times["new"], times["old"]))
        print(f"\ncold backfill of {args.lines:,} lines, --otlp off; median of {args.runs} alternating rounds; "
              f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print("| side | median | fastest | speed vs baseline |")
        print("|---|---|---|---|")
        for name, xs in times.items():
            print(f"| {name} | {m[name]:.3f} s | {min(xs):.3f} s | {m['baseline'] / m[name]:.2f}x |")
        print(f"\nnew/old: {m['new'] / m['old']:.2f}x of the medians, {per_round:.2f}x round by round (median)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
