#!/usr/bin/env python3
"""One new line on a big history, two builds side by side: `once` end to end (with the export,
and with --otlp off) and the ingest step, interleaved run by run so both see the same machine.

    python3 bench/ab_one_line.py OLD_BINARY NEW_BINARY [--lines 1000000] [--runs 15] [--gap 0]

--gap SECONDS pauses before each timed run, as a timer's runs are apart: sled leaves megabytes of
dirty pages at every open, and a run started milliseconds after the last one pays for writing
them (see BENCHMARKS.md). The default, 0, runs them back to back.

Each build backfills its own store from the same generated ledger first (not timed), then every
round appends one line per build and times a fresh process. Prints medians and new/old ratios.
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import GEN, fresh_copies, start_sink  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--gap", type=float, default=0.0)
    args = ap.parse_args()
    endpoint = start_sink()
    work = tempfile.mkdtemp(prefix="rx-ab-")
    try:
        master = os.path.join(work, "ledger")
        subprocess.run([GEN, master, str(args.lines), "365", "1"], check=True)
        builds = fresh_copies(work, {"old": args.old, "new": args.new})
        for name, binary in builds.items():
            shutil.copytree(master, os.path.join(work, name, "stats"))
            base = [binary, "--stats-dir", os.path.join(work, name, "stats"), "--state-dir", os.path.join(work, name, "state"), "once"]
            subprocess.run(base + ["--otlp-endpoint", endpoint], check=True, capture_output=True)
        wall = {n: [] for n in builds}
        off = {n: [] for n in builds}
        ingest = {n: [] for n in builds}
        for i in range(args.runs):
            for name, binary in builds.items():
                stats = os.path.join(work, name, "stats")
                path = os.path.join(stats, sorted(os.listdir(stats))[-1])
                base = [binary, "--stats-dir", stats, "--state-dir", os.path.join(work, name, "state"), "once"]
                for export in (True, False):
                    with open(path, "a") as f:
                        f.write('{"ts":"2026-12-31T00:%02d:%02dZ","model":"bench/one","source":"cli","total":%d}\n'
                                % (i % 60, int(export), i + 1))
                    extra = ["--otlp-endpoint", endpoint] if export else ["--otlp", "off"]
                    time.sleep(args.gap)
                    started = time.perf_counter()
                    out = subprocess.run(base + extra, capture_output=True, text=True)
                    elapsed = (time.perf_counter() - started) * 1000
                    if out.returncode != 0:
                        sys.exit(f"{name} failed:\n{out.stderr}")
                    if export:
                        wall[name].append(elapsed)
                        ingest[name].append(float(re.search(r"in ([0-9.]+) ms", out.stderr).group(1)))
                    else:
                        off[name].append(elapsed)
        store = {n: sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(work, n, "state", "store")) for f in fs)
                 for n in builds}
        m = lambda xs: statistics.median(xs)
        print(f"\none new line on a {args.lines:,}-line history; median of {args.runs} interleaved runs, {args.gap:g} s apart; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
        print("| build | `once` with export | `once --otlp off` | ingest step | store |")
        print("|---|---|---|---|---|")
        for n in builds:
            print(f"| {n} | {m(wall[n]):.1f} ms | {m(off[n]):.1f} ms | {m(ingest[n]):.2f} ms | {store[n] / 2**20:.1f} MiB |")
        print(f"| new/old | {m(wall['new']) / m(wall['old']):.2f}x | {m(off['new']) / m(off['old']):.2f}x | "
              f"{m(ingest['new']) / m(ingest['old']):.2f}x | {store['new'] / store['old']:.2f}x |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
