#!/usr/bin/env python3
"""`history` measured again on a scenario of its own, apart from tests/history/: a realistic
seeded ledger (gen_ledger: every kind of line Reasonix writes, four zones, lines out of time
order within a file), a copy of a day file and a line that is not JSON, two exporters on their
defaults but a 10 s export interval, the live stream running on with new lines. Three paths:

- exporter A: OTLP to VictoriaMetrics, and `/metrics` scraped by a Prometheus 2 every 15 s;
  its history loaded into both (`--format victoriametrics`, `--format openmetrics` and promtool
  2's backfill), the labels taken from what `--check` says is missing, as a user would;
- exporter B: OTLP to a Prometheus 3 with a 60-day out-of-order window; history `--format otlp`.

Each backend is then asked the dashboard's daily table as Grafana asks it (a range query of the
panel's own expressions, step 1d, aligned to local midnight) in zones no test uses (+05:45,
-09:30, +13:00), and every row is compared with an oracle of the ledger written here from
docs/counting-rules.md (not from the exporter's code); `resets()` over the span, and the lifetime.

    python3 bench/history_days.py [--days 45] [--lines 40000]
"""
import argparse, datetime, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.parse, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/reasonix-exporter")
GEN = os.path.join(ROOT, "target/release/examples/gen_ledger")
TOOLS = os.path.join(ROOT, "target/tools")
DAY = 86_400
COLUMNS = ["Prompt", "Completion", "Reasoning", "Cache hit", "Cache miss", "Tokens", "Requests", "Turns"]
KEYS = ["prompt", "completion", "reasoning", "cache_hit", "cache_miss", "total", "requests", "turns"]
METRICS = ["reasonix_prompt_tokens_total", "reasonix_completion_tokens_total", "reasonix_reasoning_tokens_total",
           "reasonix_cache_hit_tokens_total", "reasonix_cache_miss_tokens_total", "reasonix_tokens_total",
           "reasonix_requests_total", "reasonix_turns_total"]
ZONES = [(5 * 3600 + 45 * 60, "+05:45"), (-(9 * 3600 + 30 * 60), "-09:30"), (13 * 3600, "+13:00")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.read()
    except OSError:
        return None


def until(what, check, patience=90):
    deadline = time.time() + patience
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"never: {what}")


class Oracle:
    """The ledger's lines by the counting rules: each distinct line once, at its `ts`."""

    def __init__(self):
        self.seen, self.events = set(), []

    def line(self, text, at=None):
        text = text.rstrip("\r")
        if not text.strip() or text in self.seen:
            return
        self.seen.add(text)
        try:
            row = json.loads(text)
        except ValueError:
            return
        counts = [0] * 8
        if row.get("turn") is True:
            counts[7] = 1
        elif row.get("compaction") is None:
            for i, key in enumerate(KEYS[:6]):
                counts[i] = row.get(key) or 0
            counts[6] = row.get("requests") or (1 if counts[5] > 0 else 0)
        when = at if at is not None else datetime.datetime.fromisoformat(row["ts"]).timestamp()
        self.events.append((int(when * 1000) / 1000, counts))

    def rows(self, offset_s, start_s, end_s):
        """Each local day's sums, by its local midnight (a Unix time), zero rows left out."""
        out = [dict() for _ in COLUMNS]
        for at, counts in self.events:
            midnight = (at + offset_s) // DAY * DAY - offset_s
            if not start_s <= midnight <= end_s:
                continue
            for q, n in enumerate(counts):
                if n:
                    out[q][int(midnight)] = out[q].get(int(midnight), 0) + n
        return out

    def lifetime(self, q):
        return sum(c[q] for _, c in self.events)


def daily_table(port, offset_s, from_s, to_s):
    """The shipped dashboard's daily table, as Grafana asks it: rows by local midnight."""
    dash = json.load(open(os.path.join(ROOT, "deploy/grafana/reasonix.json")))
    panel = next(p for p in dash["panels"] if p.get("type") == "table" and p["title"].startswith("Daily totals"))
    align = lambda t: (t + offset_s) // DAY * DAY - offset_s
    out = []
    for column in COLUMNS:
        target = next(t for t in panel["targets"] if t["legendFormat"] == column)
        expr = target["expr"].replace("$__interval", "1d")
        for var in ["instance", "provider", "model_ref", "source"]:
            expr = expr.replace(f"${var}", ".*")
        query = urllib.parse.urlencode({"query": expr, "start": align(from_s), "end": align(to_s), "step": DAY})
        body = get(port, f"/api/v1/query_range?{query}")
        result = json.loads(body)["data"]["result"] if body else []
        values = result[0]["values"] if result else []
        out.append({int(float(t)): round(float(v)) for t, v in values if round(float(v)) != 0})
    return out


def scalar(port, expr):
    body = get(port, "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    result = json.loads(body)["data"]["result"] if body else []
    return float(result[0]["value"][1]) if result else None


def start(cmd, log):
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), start_new_session=True)


def prometheus(binary, work, name, port, config, flags=()):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write(config)
    p = start([binary, f"--config.file={d}/prometheus.yml", f"--storage.tsdb.path={d}/data",
               f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1y", *flags],
              os.path.join(d, "log.txt"))
    until(f"{name} ready", lambda: (get(port, "/-/ready") or b"").find(b"Ready") >= 0)
    return p


def exporter(state, stats, args, *more):
    return [BIN, "--stats-dir", stats, "--state-dir", state, "--export-interval", "10s", *args, *more]


def history(cmd_base, fmt, check):
    """`history` as a user runs it: first with `--check` alone, then with the labels it names."""
    first = subprocess.run([*cmd_base, "history", "--format", fmt, "--check", check], capture_output=True)
    said = first.stderr.decode()
    found = re.search(r"carries \[([^\]]*)\]", said)
    if first.returncode == 0 or not found:
        sys.exit(f"--check without labels should name them: {said}")
    labels = found.group(1).split()
    done = subprocess.run([*cmd_base, "history", "--format", fmt, *labels, "--check", check], capture_output=True)
    if done.returncode != 0:
        sys.exit(f"history: {done.stderr.decode()}")
    return done.stdout, " ".join(labels[1::2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=45)
    ap.add_argument("--lines", type=int, default=40_000)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rx-history-days-")
    procs = []
    try:
        stats = os.path.join(work, "stats")
        first = time.strftime("%Y-%m-%d", time.gmtime(time.time() - (args.days + 1) * DAY))
        subprocess.run([GEN, stats, str(args.lines), str(args.days), "7", first], check=True)
        names = sorted(os.listdir(stats))
        shutil.copy(os.path.join(stats, names[3]), os.path.join(stats, names[3][:-6] + " (1).jsonl"))
        with open(os.path.join(stats, names[9]), "a") as f:
            f.write('{"ts":"2026-01-01T00:00:00Z","total":\n')
        oracle = Oracle()
        for name in sorted(os.listdir(stats)):
            for text in open(os.path.join(stats, name), encoding="utf-8").read().split("\n"):
                oracle.line(text)

        vm_port, p2_port, p3_port, metrics_port = free_port(), free_port(), free_port(), free_port()
        vm_dir = os.path.join(work, "vm")
        procs.append(start([os.path.join(TOOLS, "victoria-metrics"), f"-storageDataPath={vm_dir}",
                            f"-httpListenAddr=127.0.0.1:{vm_port}", "-opentelemetry.usePrometheusNaming",
                            f"-relabelConfig={ROOT}/deploy/victoriametrics/relabel.yml", "-retentionPeriod=1y"],
                           os.path.join(work, "vm.log")))
        until("VictoriaMetrics ready", lambda: get(vm_port, "/health") is not None)
        scrape = ("global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: reasonix\n"
                  f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n")
        procs.append(prometheus("/usr/bin/prometheus", work, "p2", p2_port, scrape))
        ooo = "global:\n  scrape_interval: 15s\nstorage:\n  tsdb:\n    out_of_order_time_window: 60d\n"
        procs.append(prometheus(os.path.join(TOOLS, "prometheus3"), work, "p3", p3_port, ooo,
                                ["--web.enable-otlp-receiver"]))

        a = exporter(os.path.join(work, "a"), stats, ["--otlp-protocol", "http/protobuf", "--otlp-endpoint",
                     f"http://127.0.0.1:{vm_port}/opentelemetry/v1/metrics"])
        b = exporter(os.path.join(work, "b"), stats, ["--prometheus", "off", "--otlp-protocol", "http/protobuf",
                     "--otlp-endpoint", f"http://127.0.0.1:{p3_port}/api/v1/otlp/v1/metrics"])
        procs.append(start([*a, "--prometheus", f"127.0.0.1:{metrics_port}", "run"], os.path.join(work, "a.log")))
        procs.append(start([*b, "run"], os.path.join(work, "b.log")))
        backends = {"VictoriaMetrics (OTLP; import)": vm_port, "Prometheus 2.42 (scrape; promtool)": p2_port,
                    "Prometheus 3 (OTLP; OTLP, out-of-order window)": p3_port}
        total = lambda: oracle.lifetime(5)
        for name, port in backends.items():
            until(f"{name}: the first export", lambda: scalar(port, "sum(reasonix_tokens_total)") == total())

        # Live lines: today's, and one dated two days back; counted when they come.
        today = time.strftime("%Y-%m-%d", time.gmtime())
        live = [f'{{"ts":"{time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - d))}","model":"deepseek-chat",'
                f'"source":"cli","prompt":{100 + d},"completion":7,"total":{107 + d},"requests":1}}' for d in (0, 1, 2 * DAY)]
        for text in live:
            day = json.loads(text)["ts"][:10]
            with open(os.path.join(stats, f"{day}.jsonl"), "a") as f:
                f.write(text + "\n")
            oracle.line(text, at=time.time())
        for name, port in backends.items():
            until(f"{name}: the live lines", lambda: scalar(port, "sum(reasonix_tokens_total)") == total())

        body, vm_labels = history(a, "victoriametrics", f"http://127.0.0.1:{vm_port}")
        for path in ["/api/v1/import", "/internal/resetRollupResultCache"]:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{vm_port}{path}", data=body or b""))
        om, p2_labels = history(a, "openmetrics", f"http://127.0.0.1:{p2_port}")
        with open(os.path.join(work, "history.om"), "wb") as f:
            f.write(om)
        subprocess.run(["/usr/bin/promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=486h",
                        os.path.join(work, "history.om"), os.path.join(work, "p2", "data")], check=True,
                       capture_output=True)
        os.killpg(procs[1].pid, signal.SIGTERM)
        procs[1].wait()
        procs[1] = prometheus("/usr/bin/prometheus", work, "p2", p2_port, scrape)
        sent = subprocess.run([*b, "history", "--format", "otlp"], capture_output=True)
        if sent.returncode != 0:
            sys.exit(f"history --format otlp: {sent.stderr.decode()}")

        now = int(time.time())
        span = (args.days + 3) * DAY
        print(f"\n{len(oracle.events):,} distinct counted lines over {args.days} days, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; labels --check named: "
              f"VictoriaMetrics [{vm_labels}], Prometheus 2 [{p2_labels}]\n")
        print("| backend | zone | rows compared | rows equal | resets | lifetime equal |")
        print("|---|---|---|---|---|---|")
        failed = False
        for name, port in backends.items():
            resets = sum(scalar(port, f"sum(resets({m}[{args.days + 3}d]))") or 0 for m in METRICS)
            lifetime = all(scalar(port, f"sum({m})") == oracle.lifetime(q) for q, m in enumerate(METRICS))
            for offset, zone in ZONES:
                align = lambda t: (t + offset) // DAY * DAY - offset
                want = oracle.rows(offset, align(now - span), align(now))
                # What was loaded becomes searchable in the backend's own time (VictoriaMetrics:
                # seconds): asked again until it answers the same twice, at most a minute.
                got, deadline = None, time.time() + 60
                while time.time() < deadline:
                    again = daily_table(port, offset, now - span, now)
                    if again == got and got == want:
                        break
                    got = again
                    time.sleep(1)
                compared = sum(len(w) for w in want)
                equal = sum(1 for q in range(8) for day, v in want[q].items() if got[q].get(day) == v)
                extra = sum(1 for q in range(8) for day in got[q] if day not in want[q])
                failed |= equal != compared or extra or resets or not lifetime
                print(f"| {name} | UTC{zone} | {compared} | {equal}{f' (+{extra} not in the ledger)' if extra else ''} "
                      f"| {resets:.0f} | {'yes' if lifetime else 'no'} |")
        sys.exit(1 if failed else 0)
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
