#!/usr/bin/env python3
"""One new line on a busy day against one on a quiet day: the same build, both days in one loop.

    cargo build --release --bin reasonix-exporter && cargo build --release --examples
    python3 bench/one_line_day_sizes.py BINARY [--busy 2000000] [--quiet 1000] [--runs 31] [--gap 1]

Each day (one file of the generator's, seeded) is backfilled into its own store first, not timed.
Then every round appends one line to each day file and times a fresh `once --otlp off` on it,
the two days alternating and their order swapped every round (ABBA), GAP seconds after the last
run, so that both see the same machine, the same page cache and the same neighbours. Prints the
medians, the quartiles, the ingest step `once` reports, and busy/quiet: the contract's "a new line
costs what it adds, not what the file holds" as one ratio.
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
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-days-")
    try:
        days = {"busy": args.busy, "quiet": args.quiet}
        for name, lines in days.items():
            stats = os.path.join(work, name, "stats")
            subprocess.run([GEN, stats, str(lines), "1", "1"], check=True)
            backfill = [args.binary, "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once", "--otlp", "off"]
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
            print(f"| {lines:,} lines | {p25:.1f} ms | {p50:.1f} ms | {p75:.1f} ms | {ingest} |")
        ratio = statistics.median(wall["busy"]) / statistics.median(wall["quiet"])
        print(f"| busy/quiet | | {ratio:.2f}x | | |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
