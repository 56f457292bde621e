#!/usr/bin/env python3
"""Every figure of the performance table at each size and shape, two builds side by side (and the
first build twice, for the A/A band), interleaved round by round so that all see the same machine.

    cargo build --release --bin reasonix-exporter && cargo build --release --examples
    python3 bench/matrix.py OLD_BINARY NEW_BINARY [--runs 3] [--one-line-runs 9] [--gap 1]
                            [--idle-seconds 10] [--samples 100] [--shapes 100k,1m,3m,20k,2m-day]

Shapes (the generator of the tests, seeded): 100k, 1M and 3M lines in 365 day files; 1M lines in
20,000 files; 2M lines of one day; and 1k lines of one day, the reference for one new line.
Figures, per shape and build:

- backfill: a cold `once --otlp off` into an empty state dir (`sync` first), median wall time,
  and the read+hash+decode baseline (`examples/baseline`) in the same rounds;
- peak RSS of that backfill (GNU time), and the store it leaves, in bytes per line (allocated);
- one new line: a line appended to the newest day file (the one day of a one-day shape), then a
  `once --otlp off`, GAP seconds after the last, median;
- `run` idle: a `run` that backfills the ledger itself, its resident size IDLE seconds after
  its first reading ended;
- on the 1k-line and 2M-line days, `run`'s newline -> committed latency, p50 and p99, a line
  appended to the day file at random moments and /metrics polled every millisecond.
"""
import argparse, os, random, shutil, statistics, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import free_port, pct  # noqa: E402
from run import BASELINE, GEN, fresh_copies  # noqa: E402
from store_growth import disk_bytes  # noqa: E402

SHAPES = {
    "100k": ("100k lines, 365 files", 100_000, 365),
    "1m": ("1M lines, 365 files", 1_000_000, 365),
    "3m": ("3M lines, 365 files", 3_000_000, 365),
    "20k": ("1M lines, 20,000 files", 1_000_000, 20_000),
    "2m-day": ("2M lines, one day", 2_000_000, 1),
    "1k-day": ("1k lines, one day", 1_000, 1),
}


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of `cmd`."""
    started = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return wall, int(out.stderr.strip().splitlines()[-1]) / 1024


def once(binary, stats, state):
    return [binary, "--stats-dir", stats, "--state-dir", state, "once", "--otlp", "off"]


def metric(port, name, labels=""):
    """The value of a self-metric or token series on /metrics, or None while it cannot be read."""
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return None
    total = 0
    for line in body.splitlines():
        if line.startswith(name) and labels in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def start_run(binary, stats, state, port):
    cmd = [binary, "--stats-dir", stats, "--state-dir", state, "--otlp", "off",
           "--prometheus", f"127.0.0.1:{port}", "run"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_read(port, lines, proc):
    deadline = time.time() + 900
    while (metric(port, "reasonix_exporter_lines_read_total") or 0) < lines:
        if time.time() > deadline or proc.poll() is not None:
            sys.exit("the exporter did not read the ledger")
        time.sleep(0.05)


def wait_ready(port, proc):
    """Until `run` has read its whole ledger once (`/-/ready`)."""
    deadline = time.time() + 900
    while True:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2).status == 200:
                return
        except OSError:
            pass
        if time.time() > deadline or proc.poll() is not None:
            sys.exit("the exporter never became ready")
        time.sleep(0.05)


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run_idle(binary, stats, state, lines, idle):
    """Resident MiB of a `run` that backfilled `stats` itself, `idle` s after its reading ended."""
    port = free_port()
    proc = start_run(binary, stats, state, port)
    wait_read(port, lines, proc)
    time.sleep(idle)
    rss = rss_kb(proc.pid) / 1024
    proc.terminate()
    proc.wait()
    return rss


def latencies(binary, stats, state, day_file, samples, label):
    """newline -> committed, in ms, for `samples` lines appended to `day_file`."""
    port = free_port()
    proc = start_run(binary, stats, state, port)
    wait_ready(port, proc)
    day = os.path.basename(day_file).removesuffix(".jsonl")
    series = f'model_ref="bench/{label}"'
    total, out = 0, []
    for i in range(samples):
        time.sleep(random.uniform(0.05, 0.25))
        value = i + 1
        total += value
        line = '{"ts":"%sT23:59:%02d.%06dZ","model":"bench/%s","source":"cli","total":%d}\n' % (
            day, i % 60, i, label, value)
        t0 = time.perf_counter()
        with open(day_file, "a") as f:
            f.write(line)
        deadline = time.time() + 60
        while metric(port, "reasonix_tokens_total{", series) != total:
            if time.time() > deadline or proc.poll() is not None:
                sys.exit(f"the line {value} was not committed")
            time.sleep(0.001)
        out.append((time.perf_counter() - t0) * 1000)
    proc.terminate()
    proc.wait()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--one-line-runs", type=int, default=9)
    ap.add_argument("--gap", type=float, default=1.0)
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--shapes", default="100k,1m,3m,20k,2m-day,1k-day")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-matrix-")
    # Both binaries copied afresh (run.fresh_copies): the kernel maps a file just written in
    # larger pieces, which shows as up to 1 MiB more resident; copied together, neither side is favoured.
    copies = fresh_copies(work, {"old": args.old, "new": args.new})
    sides = {"old": copies["old"], "old'": copies["old"], "new": copies["new"]}
    rows = {}
    try:
        for shape in args.shapes.split(","):
            title, lines, files = SHAPES[shape]
            print(f"== {title}", file=sys.stderr, flush=True)
            master = os.path.join(work, "ledger")
            shutil.rmtree(master, ignore_errors=True)
            subprocess.run([GEN, master, str(lines), str(files), "1"], check=True, capture_output=True)
            r = {n: {"backfill": [], "peak": []} for n in sides}
            r["baseline"] = {"backfill": []}
            for _ in range(args.runs):
                subprocess.run(["sync"], check=True)
                r["baseline"]["backfill"].append(timed([BASELINE, master])[0])
                for name, binary in sides.items():
                    state = os.path.join(work, name, "state")
                    shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                    subprocess.run(["sync"], check=True)
                    wall, peak = timed(once(binary, master, state))
                    r[name]["backfill"].append(wall)
                    r[name]["peak"].append(peak)
            for name in sides:
                r[name]["store"] = disk_bytes(os.path.join(work, name, "state")) / lines
                stats = os.path.join(work, name, "stats")
                shutil.copytree(master, stats)
                r[name]["one"] = []
            shutil.rmtree(master)
            for i in range(args.one_line_runs):
                for name, binary in sides.items():
                    stats = os.path.join(work, name, "stats")
                    newest = os.path.join(stats, sorted(os.listdir(stats))[-1])
                    day = os.path.basename(newest).removesuffix(".jsonl")
                    with open(newest, "a") as f:
                        f.write('{"ts":"%sT23:58:%02dZ","model":"bench/one","source":"cli","total":%d}\n'
                                % (day, i % 60, i + 1))
                    time.sleep(args.gap)
                    r[name]["one"].append(timed(once(binary, stats, os.path.join(work, name, "state")))[0] * 1000)
            for name, binary in sides.items():
                stats = os.path.join(work, name, "stats")
                state = os.path.join(work, name, "idle-state")
                r[name]["idle"] = run_idle(binary, stats, state, lines, args.idle_seconds)
                shutil.rmtree(state)
            if shape in ("1k-day", "2m-day"):
                for name, binary in sides.items():
                    stats = os.path.join(work, name, "stats")
                    day_file = os.path.join(stats, sorted(os.listdir(stats))[-1])
                    state = os.path.join(work, name, "state")
                    r[name]["latency"] = latencies(binary, stats, state, day_file, args.samples, f"{shape}-{name}")
            for name in sides:
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
            rows[shape] = (title, lines, r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(rows, sides, args)


def report(rows, sides, args):
    m = statistics.median
    print(f"\n{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; medians of {args.runs} backfills and "
          f"{args.one_line_runs} single lines ({args.gap:g} s apart), builds interleaved round by round; "
          "old' is the old build again: old'/old is the A/A band.\n")
    print("| shape | figure | old | new | new/old | old'/old |")
    print("|---|---|---|---|---|---|")
    for shape, (title, lines, r) in rows.items():
        base = m(r["baseline"]["backfill"])
        figures = [
            ("backfill", lambda n: m(r[n]["backfill"]), "{:.2f} s"),
            ("speed vs baseline", lambda n: base / m(r[n]["backfill"]), "{:.2f}x"),
            ("peak RSS", lambda n: m(r[n]["peak"]), "{:.1f} MiB"),
            ("store", lambda n: r[n]["store"], "{:.1f} B/line"),
            ("one new line, `once`", lambda n: m(r[n]["one"]), "{:.1f} ms"),
            ("`run` idle after its backfill", lambda n: r[n]["idle"], "{:.1f} MiB"),
        ]
        if "latency" in r["old"]:
            figures += [
                ("`run` newline -> committed p50", lambda n: pct(r[n]["latency"], 50), "{:.1f} ms"),
                ("`run` newline -> committed p99", lambda n: pct(r[n]["latency"], 99), "{:.1f} ms"),
            ]
        for figure, value, fmt in figures:
            old, new, again = value("old"), value("new"), value("old'")
            print(f"| {title} | {figure} | {fmt.format(old)} | {fmt.format(new)} | {new / old:.2f}x | {again / old:.2f}x |")
        print(f"| {title} | baseline (read+hash+decode) | {base:.2f} s | | | |")


if __name__ == "__main__":
    main()
