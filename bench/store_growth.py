#!/usr/bin/env python3
"""The store's size on a busy day, two builds side by side: one day file of LINES lines is
backfilled (`once --otlp off`, timed, the builds alternating round by round), then single lines
are appended to it, a `once --otlp off` after each, as a timer or `run` would see a busy bot.

    python3 bench/store_growth.py OLD_BINARY NEW_BINARY [--lines 2000000] [--appends 1000] [--rounds 3]
                                  [--old-appends N]

--old-appends stops the old build's appends after N (a build whose every append rewrites
megabytes takes seconds each); its bytes a line are then those after N appends.

Prints the backfill medians and their ratio, and each build's store (the state dir's files, as
allocated on disk) after the backfill and after the appends, in bytes per line counted.
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import GEN, fresh_copies  # noqa: E402


def disk_bytes(folder):
    return sum(os.lstat(os.path.join(d, f)).st_blocks * 512 for d, _, fs in os.walk(folder) for f in fs)


def once(binary, stats, state):
    out = subprocess.run([binary, "--stats-dir", stats, "--state-dir", state, "once", "--otlp", "off"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} failed:\n{out.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--appends", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-appends", type=int, default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-growth-")
    try:
        master = os.path.join(work, "ledger")
        subprocess.run([GEN, master, str(args.lines), "1", "1"], check=True)
        day_file = sorted(os.listdir(master))[0]
        day = day_file.removesuffix(".jsonl")
        builds = fresh_copies(work, {"old": args.old, "new": args.new})
        backfill = {n: [] for n in builds}
        for _ in range(args.rounds):
            for name, binary in builds.items():
                stats, state = os.path.join(work, name, "stats"), os.path.join(work, name, "state")
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                shutil.copytree(master, stats)
                subprocess.run(["sync"], check=True)
                started = time.perf_counter()
                once(binary, stats, state)
                backfill[name].append(time.perf_counter() - started)
        after_backfill = {n: disk_bytes(os.path.join(work, n, "state")) for n in builds}
        appended = {n: [] for n in builds}
        limit = {"old": args.appends if args.old_appends is None else args.old_appends, "new": args.appends}
        for i in range(args.appends):
            for name, binary in builds.items():
                if i >= limit[name]:
                    continue
                stats, state = os.path.join(work, name, "stats"), os.path.join(work, name, "state")
                with open(os.path.join(stats, day_file), "a") as f:
                    f.write('{"ts":"%sT23:%02d:%02d.%06dZ","model":"bench/append","source":"bot","total":%d}\n'
                            % (day, i // 60 % 60, i % 60, i, i + 1))
                started = time.perf_counter()
                once(binary, stats, state)
                appended[name].append((time.perf_counter() - started) * 1000)
        m = statistics.median
        print(f"\none {args.lines:,}-line day, then {args.appends:,} single appends; backfill median of "
              f"{args.rounds} interleaved rounds; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print("| build | backfill | store after backfill | appends | store after them | bytes a line | one append, median |")
        print("|---|---|---|---|---|---|---|")
        for n in builds:
            final = disk_bytes(os.path.join(work, n, "state"))
            lines = args.lines + limit[n]
            print(f"| {n} | {m(backfill[n]):.2f} s | {after_backfill[n] / 2**20:.1f} MiB | {limit[n]:,} | {final / 2**20:.1f} MiB | "
                  f"{final / lines:.1f} B | {m(appended[n]):.1f} ms |")
        print(f"| new/old | {m(backfill['new']) / m(backfill['old']):.2f}x | | | | "
              f"{m(appended['new']) / m(appended['old']):.2f}x |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
