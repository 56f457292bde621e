#!/usr/bin/env python3
"""One new line on a busy day against one on a quiet day: the same build, both days in one loop.

    cargo build --release --bin reasonix-exporter && cargo build --release --examples
    python3 bench/one_line_day_sizes.py BINARY [--busy 2000000] [--quiet 1000] [--runs 31] [--gap 1]
                                        [--busy-backfilled-by OTHER] [--against OLD] [--cold]

Each day (one file of the generator's, seeded) is backfilled into its own store first, not timed.
Then every round appends one line to each day file and times a fresh `once --otlp off` on it,
the two days alternating and their order swapped every round (ABBA), GAP seconds after the last
run, so that both see the same machine, the same page cache and the same neighbours. Prints the
medians, the quartiles, the ingest step `once` reports, and busy/quiet: the contract's "a new line
costs what it adds, not what the file holds" as one ratio (of the medians, and the median of each
round's own ratio), and the CPU each run took (user and system, all its threads).

--busy-backfilled-by OTHER adds a third day: the busy day again, its store backfilled (and
compacted) by another build, then timed with BINARY like the others, in the same loop: what the
store a build leaves costs the runs after it, with the machine's drift taken out.

--against OLD times OLD too, on the same two stores in the same loop (every side a day and a
build): each build's busy/quiet, and new/old on each day. Both builds are copied afresh first.

--cold drops the page cache before every run (root only): a `once` as the first after a boot, or
after the store's pages were pushed out.
"""
import argparse, os, re, resource, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import GEN, fresh_copies  # noqa: E402


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
    ap.add_argument("--against", metavar="OLD")
    ap.add_argument("--cold", action="store_true")
    args = ap.parse_args()
    if args.cold and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        sys.exit("--cold drops the page cache: run as root")
    work = tempfile.mkdtemp(prefix="rx-days-")
    try:
        builds = fresh_copies(work, {"new": args.binary, **({"old": args.against} if args.against else {})})
        days = {"busy": args.busy, "quiet": args.quiet}
        backfilled_by = {"busy": builds["new"], "quiet": builds["new"]}
        if args.busy_backfilled_by:
            days["busy-other"] = args.busy
            backfilled_by["busy-other"] = args.busy_backfilled_by
        for name, lines in days.items():
            stats = os.path.join(work, name, "stats")
            subprocess.run([GEN, stats, str(lines), "1", "1"], check=True)
            backfill = [backfilled_by[name], "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once", "--otlp", "off"]
            subprocess.run(backfill, check=True, capture_output=True)
        subprocess.run(["sync"], check=True)
        # Each build runs on the same day's store in turn (the format is the same): a side is a
        # day and a build.
        sides = [(day, build) for day in days for build in builds]
        wall = {side: [] for side in sides}
        step = {side: [] for side in sides}
        cpu = {side: [] for side in sides}
        for i in range(args.runs):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for name, build in order:
                stats = os.path.join(work, name, "stats")
                path = os.path.join(stats, os.listdir(stats)[0])
                day = os.path.basename(path).removesuffix(".jsonl")
                # A line of its own for every run: two builds on one day must each count a new
                # line, not find the other's (a duplicate costs less).
                total = i * len(sides) + sides.index((name, build)) + 1
                with open(path, "a") as f:
                    f.write('{"ts":"%sT23:59:%02dZ","model":"bench/one","source":"cli","total":%d}\n' % (day, i % 60, total))
                time.sleep(args.gap)
                if args.cold:
                    with open("/proc/sys/vm/drop_caches", "w") as f:
                        os.sync()
                        f.write("3\n")
                cmd = [builds[build], "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once", "--otlp", "off"]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                out = subprocess.run(cmd, capture_output=True, text=True)
                elapsed = (time.perf_counter() - started) * 1000
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[(name, build)].append(1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
                if out.returncode != 0:
                    sys.exit(f"{name} day, {build} build failed:\n{out.stderr}")
                wall[(name, build)].append(elapsed)
                found = re.search(r"in ([0-9.]+) ms", out.stderr)
                if found:
                    step[(name, build)].append(float(found.group(1)))
        print(f"\none new line, `once --otlp off`, {args.busy:,}-line day against {args.quiet:,}-line day; "
              f"{args.runs} rounds, {'days and builds' if args.against else 'days'} alternating (ABBA), "
              f"{args.gap:g} s apart{', the page cache dropped before each' if args.cold else ''}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print(f"| day{' | build' if args.against else ''} | p25 | median | p75 | CPU, median | ingest step, median |")
        print(f"|---{'|---' if args.against else ''}|---|---|---|---|---|")
        for name, build in sides:
            p25, p50, p75 = quartiles(wall[(name, build)])
            ingest = f"{statistics.median(step[(name, build)]):.2f} ms" if step[(name, build)] else "-"
            label = f"{days[name]:,} lines" + (", the other build's store" if name == "busy-other" else "")
            label += f" | {build}" if args.against else ""
            used = statistics.median(cpu[(name, build)])
            print(f"| {label} | {p25:.1f} ms | {p50:.1f} ms | {p75:.1f} ms | {used:.1f} ms | {ingest} |")

        def ratio(a, b):
            """The ratio of the medians, and the median of each round's own ratio: a round's runs
            are neighbours in time, so what stays of it is the difference the machine's own drift
            does not move."""
            return (statistics.median(wall[a]) / statistics.median(wall[b]),
                    statistics.median(x / y for x, y in zip(wall[a], wall[b])))

        for build in builds:
            of = f" ({build})" if args.against else ""
            r, paired = ratio(("busy", build), ("quiet", build))
            print(f"\nbusy/quiet{of}: {r:.2f}x; round by round: median {paired:.2f}x", end="")
            if "busy-other" in days:
                r, paired = ratio(("busy-other", build), ("quiet", build))
                print(f"\nbusy (the other build's store)/quiet{of}: {r:.2f}x; round by round: median {paired:.2f}x", end="")
        print()
        if args.against:
            for name in days:
                r, paired = ratio((name, "new"), (name, "old"))
                print(f"new/old, {name} day: {r:.2f}x; round by round: median {paired:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
