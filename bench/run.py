#!/usr/bin/env python3
"""The whole-process benchmarks, side by side in one run, printed as one table.

    python3 bench/run.py            # builds release first; 100k, 1M and 3M-line ledgers
    python3 bench/run.py --quick    # 100k and 1M only, 3 runs each

Every measure is the median of N runs (5 by default) of a fresh process, timed with
/usr/bin/time -v (wall clock and peak RSS). The read+hash+decode baseline (examples/baseline.rs)
runs in the same script on the same files, so ratios compare like with like. tokdash, the peer
that reads the same files, is timed too when it is installed (pip install tokdash).
"""
import argparse, http.server, os, re, shutil, socketserver, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/reasonix-exporter")
GEN = os.path.join(ROOT, "target/release/examples/gen_ledger")
BASELINE = os.path.join(ROOT, "target/release/examples/baseline")


class Sink(http.server.BaseHTTPRequestHandler):
    """A local OTLP/HTTP receiver: takes the protobuf body, answers 200."""
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def fresh_copies(work, builds):
    """Each build copied into `work` at the same moment, so that their pages are alike in the page
    cache: the same binary copied an hour apart took 3–5 % more time and CPU for one `once` as the
    older copy, and the kernel maps a file just written in larger pieces."""
    copies = {}
    for name, binary in builds.items():
        copies[name] = os.path.join(work, f"{name}-exporter")
        shutil.copy2(binary, copies[name])
    return copies


def start_sink():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1/metrics"


def timed(cmd, env=None):
    """Wall seconds, peak RSS in MB, stderr."""
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", out.stderr).group(1)
    parts = [float(p) for p in wall.split(":")]
    seconds = parts[-1] + 60 * parts[-2] + (3600 * parts[-3] if len(parts) > 2 else 0)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) / 1024
    return seconds, rss, out.stderr


def median(xs):
    return statistics.median(xs)


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def measure(lines, runs, endpoint, work, peers):
    # <work>/<lines>/stats, so that REASONIX_HOME=<work>/<lines> points peers at it too.
    stats = os.path.join(work, str(lines), "stats")
    subprocess.run([GEN, stats, str(lines), "365", "1"], check=True)
    ledger_bytes = du(stats)
    base, back, rss = [], [], []
    for _ in range(runs):
        base.append(timed([BASELINE, stats])[0])
        state = os.path.join(work, "state")
        shutil.rmtree(state, ignore_errors=True)
        wall, peak, _ = timed([BIN, "--stats-dir", stats, "--state-dir", state, "once", "--otlp-endpoint", endpoint])
        back.append(wall)
        rss.append(peak)
    store = du(os.path.join(work, "state", "store"))
    # One new line on this history: the whole process (timed here, to the millisecond), and the
    # ingest step it reports; with the export, and with --otlp off (no export, so no fsync).
    one_wall, one_ingest, one_off = [], [], []
    path = os.path.join(stats, sorted(os.listdir(stats))[-1])
    state = os.path.join(work, "state")
    # A history at rest: the backfill's store is on disk before the first new line, not still
    # being written while it is timed. The runs themselves then follow each other back to back,
    # each one's open waiting for what the last one left to write, and a third kind of run is
    # timed at rest again (`sync` and a second's pause first, untimed), as a timer's runs
    # seconds apart find it.
    os.sync()
    one_rest = []
    for i in range(runs):
        for kind in ("export", "off", "rest"):
            export = kind != "off"
            with open(path, "a") as f:
                f.write('{"ts":"2026-12-31T00:%02d:%02dZ","model":"bench/one","source":"%s","total":%d}\n'
                        % (i, int(export), kind, i + 1))
            otlp = ["--otlp-endpoint", endpoint] if export else ["--otlp", "off"]
            if kind == "rest":
                # Started right after `sync`, these runs measured slower than back to back (at
                # 100k and 3M lines); a timer's runs are seconds apart, so a second's pause.
                os.sync()
                time.sleep(1)
            started = time.perf_counter()
            out = subprocess.run([BIN, "--stats-dir", stats, "--state-dir", state, "once"] + otlp,
                                 capture_output=True, text=True)
            wall = time.perf_counter() - started
            if out.returncode != 0:
                sys.exit(f"one new line failed:\n{out.stderr}")
            if kind == "export":
                one_wall.append(wall)
                one_ingest.append(float(re.search(r"in ([0-9.]+) ms", out.stderr).group(1)))
            elif kind == "off":
                one_off.append(wall)
            else:
                one_rest.append(wall)
    tok = tokdash(stats, work) if peers and lines == 1_000_000 else None
    shutil.rmtree(os.path.dirname(stats))
    return dict(lines=lines, ledger_mb=ledger_bytes / 2**20, base=median(base), back=median(back),
                rss=max(rss), store=store, one_wall=median(one_wall), one_off=median(one_off),
                one_ingest=median(one_ingest), one_rest=median(one_rest), tok=tok,
                spread=dict(back=(min(one_wall), max(one_wall)), rest=(min(one_rest), max(one_rest))))


def tokdash(stats, work):
    """tokdash `db sync` on the same ledger, once each: cold (empty database), warm (nothing new),
    and after one appended line. Its own HOME and XDG dirs, so it reads nothing else."""
    if not shutil.which("tokdash"):
        return None
    home = os.path.join(work, "tokdash")
    shutil.rmtree(home, ignore_errors=True)
    env = dict(os.environ, HOME=home, REASONIX_HOME=os.path.dirname(stats))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = os.path.join(home, var.lower())
    cold, cold_rss, _ = timed(["tokdash", "db", "sync"], env)
    warm, _, _ = timed(["tokdash", "db", "sync"], env)
    path = os.path.join(stats, sorted(os.listdir(stats))[-1])
    with open(path, "a") as f:
        f.write('{"ts":"2026-12-31T01:00:00Z","model":"bench/tok","source":"cli","total":1}\n')
    one, _, _ = timed(["tokdash", "db", "sync"], env)
    return dict(cold=cold, cold_rss=cold_rss, warm=warm, one=one)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-peers", action="store_true", help="skip tokdash even when installed")
    args = ap.parse_args()
    runs = args.runs or (3 if args.quick else 5)
    sizes = [100_000, 1_000_000] if args.quick else [100_000, 1_000_000, 3_000_000]
    if not args.no_build:
        # The exporter alone, as released, then the examples (BENCHMARKS.md, "How to reproduce").
        subprocess.run(["cargo", "build", "--release", "--bin", "reasonix-exporter", "--quiet"], cwd=ROOT, check=True)
        subprocess.run(["cargo", "build", "--release", "--examples", "--quiet"], cwd=ROOT, check=True)
    endpoint = start_sink()
    work = tempfile.mkdtemp(prefix="rx-bench-")
    try:
        results = [measure(n, runs, endpoint, work, not args.no_peers) for n in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmedian of {runs} runs each; machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}\n")
    print("| lines | ledger | baseline read+hash+decode | `once` backfill (OTLP to a local sink) | speed vs baseline | peak RSS | store | store/line | per-line ingest | one new line: `once` wall, back to back | the same, `--otlp off` | the same, at rest | one new line: ingest step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['lines']:,} | {r['ledger_mb']:.0f} MiB | {r['base']:.3f} s | {r['back']:.3f} s | "
              f"{r['base'] / r['back']:.2f}x | {r['rss']:.1f} MB | {r['store'] / 2**20:.1f} MiB | "
              f"{r['store'] / r['lines']:.1f} B | {r['back'] / r['lines'] * 1e6:.2f} us | "
              f"{r['one_wall'] * 1000:.1f} ms | {r['one_off'] * 1000:.1f} ms | {r['one_rest'] * 1000:.1f} ms | "
              f"{r['one_ingest']:.2f} ms |")
    # The machine's speed, to read the absolute times by: the baseline has taken 0.8-1.0 s for
    # 1M lines on this kind of machine, and 1.4-1.6 s in its slow spells.
    for r in results:
        if r["lines"] == 1_000_000:
            (b0, b1), (r0, r1) = r["spread"]["back"], r["spread"]["rest"]
            print(f"\nThis machine: baseline {r['base']:.2f} s for 1M lines (0.8-1.0 s on a quiet machine of this kind). "
                  f"One new line at 1M, every run: back to back {b0 * 1000:.1f}-{b1 * 1000:.1f} ms, "
                  f"at rest {r0 * 1000:.1f}-{r1 * 1000:.1f} ms.")
    for r in results:
        tok = r["tok"]
        if tok:
            print(f"\ntokdash `db sync` on the same {r['lines']:,} lines (one run each): cold {tok['cold']:.1f} s "
                  f"({tok['cold_rss']:.0f} MB peak RSS), warm {tok['warm']:.2f} s, after one new line {tok['one']:.2f} s. "
                  f"reasonix-exporter cold backfill is {tok['cold'] / r['back']:.0f}x faster; "
                  f"one new line {tok['one'] / r['one_wall']:.0f}x faster.")


if __name__ == "__main__":
    main()
