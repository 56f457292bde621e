#!/usr/bin/env python3
"""`history` against the backfill it follows, side by side in one run: a 1M-line ledger counted
by `once` (exporting to a local sink, which notes the history frontier), then, round by round,
`once` on a fresh state dir and `history` (OpenMetrics and VictoriaMetrics, to /dev/null) on the
first store, each timed with /usr/bin/time -v (wall clock and peak RSS). Then the history's
memory against the history's length: the same density of lines over three times the days
(3M lines, 1095 files), its peak RSS beside the year's.

    python3 bench/history.py [--lines 1000000] [--runs 5]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, GEN, start_sink, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-history-")
    try:
        stats = os.path.join(work, "stats")
        subprocess.run([GEN, stats, str(args.lines), "365", "1", first_day(365)], check=True)
        endpoint = start_sink()
        common = ["--stats-dir", stats, "--otlp-protocol", "http/protobuf", "--otlp-endpoint", endpoint]
        kept = os.path.join(work, "kept")
        timed([BIN, *common, "--state-dir", kept, "once"])
        sides = {"backfill (`once`)": [], "history, OpenMetrics": [], "history, VictoriaMetrics": []}
        rss = {name: [] for name in sides}
        for _ in range(args.runs):
            fresh = os.path.join(work, "fresh")
            shutil.rmtree(fresh, ignore_errors=True)
            runs = {
                "backfill (`once`)": [BIN, *common, "--state-dir", fresh, "once"],
                "history, OpenMetrics": ["sh", "-c", f'"$0" "$@" > /dev/null', BIN, *common, "--state-dir", kept, "history"],
                "history, VictoriaMetrics": ["sh", "-c", f'"$0" "$@" > /dev/null', BIN, *common, "--state-dir", kept,
                                             "history", "--format", "victoriametrics"],
            }
            for name, cmd in runs.items():
                os.sync()
                seconds, peak, _ = timed(cmd)
                sides[name].append(seconds)
                rss[name].append(peak)
        base = statistics.median(sides["backfill (`once`)"])
        print(f"\n{args.lines:,} lines in 365 day files; median of {args.runs} alternating rounds; "
              f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print("| side | median | vs backfill | peak RSS |")
        print("|---|---|---|---|")
        for name, xs in sides.items():
            m = statistics.median(xs)
            print(f"| {name} | {m:.2f} s | {m / base:.2f}x | {max(rss[name]):.0f} MB |")
        longer(work, args.lines, endpoint, max(rss["history, OpenMetrics"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def first_day(days):
    """The first of `days` days that end yesterday: the whole ledger is history."""
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() - (days + 1) * 86_400))


def longer(work, lines, endpoint, year_rss):
    """The history of three years at the year's density: its peak RSS beside the year's."""
    stats = os.path.join(work, "stats3")
    subprocess.run([GEN, stats, str(3 * lines), "1095", "1", first_day(1095)], check=True)
    common = ["--stats-dir", stats, "--otlp-protocol", "http/protobuf", "--otlp-endpoint", endpoint]
    state = os.path.join(work, "kept3")
    timed([BIN, *common, "--state-dir", state, "once"])
    seconds, peak, _ = timed(["sh", "-c", f'"$0" "$@" > /dev/null', BIN, *common, "--state-dir", state, "history"])
    print(f"\nhistory, OpenMetrics, {3 * lines:,} lines in 1095 day files: {seconds:.2f} s, "
          f"peak RSS {peak:.0f} MB ({peak / year_rss:.2f}x the year's)")


if __name__ == "__main__":
    main()
