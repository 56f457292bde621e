#!/usr/bin/env python3
"""Measures `run`: newline -> committed latency (with file events, and polling alone) and idle CPU
on a large history. Prints one table. Usage:

    cargo build --release --examples
    python3 bench/daemon.py [--history-lines 1000000] [--samples 200] [--idle-seconds 60]
                            [--binary PATH]   # another build, for a side-by-side

"Committed" is observed through /metrics, which serves only committed totals: the script appends
one line and polls /metrics every millisecond until the line's increment shows.
"""
import argparse, os, random, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/reasonix-exporter")
GEN = os.path.join(ROOT, "target/release/examples/gen_ledger")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(port, series):
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return None
    for line in body.splitlines():
        if line.startswith("reasonix_tokens_total{") and series in line:
            return int(line.rsplit(" ", 1)[1])
    return 0


def start(stats, state, port, extra):
    cmd = [BIN, "--stats-dir", stats, "--state-dir", state, "--otlp", "off",
           "--prometheus", f"127.0.0.1:{port}", "run"] + extra
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while scrape(port, "x") is None:
        if time.time() > deadline:
            sys.exit("the exporter did not come up")
        time.sleep(0.05)
    return proc


def latencies(stats, state, samples, extra, label):
    port = free_port()
    proc = start(stats, state, port, extra)
    series = f'model_ref="bench/{label}"'
    path = os.path.join(stats, "2099-01-01.jsonl")
    total, out = 0, []
    for i in range(samples):
        time.sleep(random.uniform(0.05, 0.25))  # writes arrive at random moments
        value = i + 1
        total += value
        line = '{"ts":"2099-01-01T00:00:%02d.%06dZ","model":"bench/%s","source":"cli","total":%d}\n' % (
            i % 60, i, label, value)
        t0 = time.perf_counter()
        with open(path, "a") as f:
            f.write(line)
        while scrape(port, series) != total:
            time.sleep(0.001)
        out.append(time.perf_counter() - t0)
    proc.terminate()
    proc.wait()
    return out


def idle_cpu(stats, state, seconds):
    port = free_port()
    proc = start(stats, state, port, [])
    time.sleep(2)  # let the startup poll settle
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    read_before = open(f"/proc/{proc.pid}/io").read()
    c0, t0 = cpu(), time.time()
    time.sleep(seconds)
    c1, t1 = cpu(), time.time()
    read_after = open(f"/proc/{proc.pid}/io").read()
    proc.terminate()
    proc.wait()
    rchar = lambda text: int([l for l in text.splitlines() if l.startswith("rchar")][0].split()[1])
    return 100.0 * (c1 - c0) / (t1 - t0), rchar(read_after) - rchar(read_before)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    global BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--history-lines", type=int, default=1_000_000)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--poll-samples", type=int, default=20)
    ap.add_argument("--idle-seconds", type=int, default=60)
    ap.add_argument("--binary", default=BIN, help="the exporter to measure (default: this tree's release build)")
    args = ap.parse_args()
    BIN = args.binary
    work = tempfile.mkdtemp(prefix="rx-bench-")
    stats, state = os.path.join(work, "stats"), os.path.join(work, "state")
    subprocess.run([GEN, stats, str(args.history_lines), "365", "1"], check=True)
    t = time.time()
    subprocess.run([BIN, "--stats-dir", stats, "--state-dir", state, "--otlp", "off", "once"],
                   check=True, stderr=subprocess.DEVNULL)
    print(f"history: {args.history_lines:,} lines, backfilled in {time.time() - t:.2f} s")

    events = latencies(stats, state, args.samples, [], "events")
    polling = latencies(stats, state, args.poll_samples, ["--watch", "off"], "polling")
    cpu, reread = idle_cpu(stats, state, args.idle_seconds)
    shutil.rmtree(work)

    print()
    print("| measure | n | p50 | p99 | max | target |")
    print("|---|---|---|---|---|---|")
    for name, xs, target in [("newline -> committed, file events", events, "p99 <= 1 s"),
                             ("newline -> committed, polling alone (2 s)", polling, "p99 <= 2.1 s")]:
        print(f"| {name} | {len(xs)} | {pct(xs, 50)*1000:.1f} ms | {pct(xs, 99)*1000:.1f} ms | "
              f"{max(xs)*1000:.1f} ms | {target} |")
    print(f"| idle CPU of run over {args.idle_seconds} s | 1 | {cpu:.3f} % of a core | | | < 1 % |")
    print(f"| ledger bytes read while idle | 1 | {reread:,} bytes (syscall rchar, incl. /metrics-free idle) | | | 0 ledger bytes |")


if __name__ == "__main__":
    main()
