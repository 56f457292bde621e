#!/usr/bin/env python3
"""One new line on a busy day against one on a quiet day: the same build, both days in one loop.

    cargo build --release --bin reasonix-exporter && cargo build --release --examples
    python3 bench/one_line_day_sizes.py BINARY [--busy 2000000] [--quiet 1000] [--runs 31] [--gap 1]
                                        [--busy-backfilled-by OTHER]

Each day (one file of the generator's, seeded) is backfilled into its own store first, not timed.
Then every round appends one line to each day file and times a fresh `once --otlp off` on it,
the two days alternating and their order swapped every round (ABBA), GAP seconds after the last
run, so that both see the same machine, the same page cache and the same neighbours. Prints the
medians, the quartiles, the ingest step `once` reports, and busy/quiet: the contract's "a new line
costs what it adds, not what the file holds" as one ratio (of the medians, and the median of each
round's own ratio).

--busy-backfilled-by OTHER adds a third day: the busy day again, its store backfilled (and
compacted) by another build, then timed with BINARY like the others, in the same loop: what the
store a build leaves costs the runs after it, with the machine's drift taken out.
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import GEN  # noqa: E402


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--busy", type=int, default=2_000_000)
    ap.add_argument("--quiet", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--gap", type=float, default=1.0)
    ap.add_argument("--busy-backfilled-by", metavar="OTHER")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-days-")
    try:
        days = {"busy": args.busy, "quiet": args.quiet}
        backfilled_by = {"busy": args.binary, "quiet": args.binary}
        if args.busy_backfilled_by:
            days["busy-other"] = args.busy
            backfilled_by["busy-other"] = args.busy_backfilled_by
        for name, lines in days.items():
            stats = os.path.join(work, name, "stats")
            subprocess.run([GEN, stats, str(lines), "1", "1"], check=True)
            backfill = [backfilled_by[name], "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once", "--otlp", "off"]
            subprocess.run(backfill, check=True, capture_output=True)
        subprocess.run(["sync"], check=True)
        wall = {n: [] for n in days}
        step = {n: [] for n in days}
        for i in range(args.runs):
            order = list(days) if i % 2 == 0 else list(reversed(days))
            for name in order:
                stats = os.path.join(work, name, "stats")
                path = os.path.join(stats, os.listdir(stats)[0])
                day = os.path.basename(path).removesuffix(".jsonl")
                with open(path, "a") as f:
                    f.write('{"ts":"%sT23:59:%02dZ","model":"bench/one","source":"cli","total":%d}\n' % (day, i % 60, i + 1))
                time.sleep(args.gap)
                cmd = [args.binary, "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once", "--otlp", "off"]
                started = time.perf_counter()
                out = subprocess.run(cmd, capture_output=True, text=True)
                elapsed = (time.perf_counter() - started) * 1000
                if out.returncode != 0:
                    sys.exit(f"{name} day failed:\n{out.stderr}")
                wall[name].append(elapsed)
                found = re.search(r"in ([0-9.]+) ms", out.stderr)
                if found:
                    step[name].append(float(found.group(1)))
        print(f"\none new line, `once --otlp off`, {args.busy:,}-line day against {args.quiet:,}-line day; "
              f"{args.runs} rounds, days alternating (ABBA), {args.gap:g} s apart; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print("| day | p25 | median | p75 | ingest step, median |")
        print("|---|---|---|---|---|")
        for name, lines in days.items():
            p25, p50, p75 = quartiles(wall[name])
            ingest = f"{statistics.median(step[name]):.2f} ms" if step[name] else "-"
            label = f"{lines:,} lines" + (", the other build's store" if name == "busy-other" else "")
            print(f"| {label} | {p25:.1f} ms | {p50:.1f} ms | {p75:.1f} ms | {ingest} |")
        def against_quiet(name):
            """The ratio of the medians, and the median of each round's own ratio: a round's runs
            are neighbours in time, so what stays of it is the difference the machine's own drift
            does not move."""
            ratio = statistics.median(wall[name]) / statistics.median(wall["quiet"])
            return ratio, statistics.median(b / q for b, q in zip(wall[name], wall["quiet"]))

        ratio, paired = against_quiet("busy")
        print(f"| busy/quiet | | {ratio:.2f}x | | |")
        print(f"\nbusy/quiet, round by round: median {paired:.2f}x")
        if "busy-other" in wall:
            ratio, paired = against_quiet("busy-other")
            print(f"busy (the other build's store)/quiet: {ratio:.2f}x; round by round: median {paired:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
