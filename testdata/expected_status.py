#!/usr/bin/env python3
"""The `status --json` a golden ledger must give, computed from docs/counting-rules.md alone.

An independent implementation of the counting rules (Python's json module, its own decimal
arithmetic, none of the exporter's code), so that the expected totals in testdata/ are not the
exporter's own output committed back.

    python3 testdata/expected_status.py testdata/cost-quotes/stats > testdata/cost-quotes/expected-status.json
    python3 testdata/expected_status.py --check   # every case in testdata/ agrees with its file
"""

import codecs
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

COUNTS = ["prompt", "completion", "reasoning", "cache_hit", "cache_miss", "total", "requests"]
QUANTITIES = COUNTS + ["turns"]
RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
AMOUNT = re.compile(r"^(0|[1-9][0-9]{0,17})(\.[0-9]{1,9})?$")
CURRENCY = re.compile(r"^[A-Z]{3}$")
BIDI = set("\u061c\u200e\u200f") | {chr(c) for c in range(0x202A, 0x202F)} | {
    chr(c) for c in range(0x2066, 0x206A)
}


def one_replacement_per_byte(error):
    # Go's decoder: one U+FFFD for every byte that does not start a valid sequence.
    return ("\ufffd", error.start + 1)


codecs.register_error("go", one_replacement_per_byte)


class Rejected(Exception):
    pass


def label(value):
    if len(value.encode()) > 256 or any(
        ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in BIDI for c in value
    ):
        return "invalid"
    return value


def no_constants(name):
    raise Rejected(name)


def text_field(obj, key, wrong):
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise Rejected(wrong)
    return value


def decode(line):
    text = line.decode("utf-8", errors="go")
    try:
        obj = json.loads(text, parse_constant=no_constants)
    except (ValueError, Rejected):
        raise Rejected("invalid_json")
    if not isinstance(obj, dict):
        raise Rejected("not_object")
    ts = obj.get("ts")
    if ts is not None and not (isinstance(ts, str) and RFC3339.match(ts)):
        raise Rejected("bad_ts")
    model = text_field(obj, "model", "bad_label")
    source = text_field(obj, "source", "bad_label")
    turn = obj.get("turn")
    if turn is not None and not isinstance(turn, bool):
        raise Rejected("bad_turn")
    counts = {}
    for key in COUNTS:
        value = obj.get(key)
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise Rejected("bad_count")
        counts[key] = value
    if counts["requests"] == 0 and counts["total"] > 0:
        counts["requests"] = 1
    return obj, model, source, bool(turn), counts


def quote(obj):
    """('priced', amount, currency, billing_mode) or ('unpriced', reason)."""
    kinds = {"cost_amount": str, "cost_currency": str, "cost_complete": bool,
             "billing_mode": str, "incomplete_reason": str}
    for key, kind in kinds.items():
        value = obj.get(key)
        if value is not None and not isinstance(value, kind):
            return ("unpriced", "bad_cost")
    complete = obj.get("cost_complete")
    if complete is None:
        return ("unpriced", "no_quote")
    if complete is False:
        return ("unpriced", label(obj.get("incomplete_reason") or "unknown"))
    amount, currency = obj.get("cost_amount"), obj.get("cost_currency")
    if amount is None or currency is None or not AMOUNT.match(amount) or not CURRENCY.match(currency):
        return ("unpriced", "bad_cost")
    return ("priced", Decimal(amount), currency, label(obj.get("billing_mode") or "unknown"))


def attributes(model, source):
    model = model or None
    if model is None:
        provider = "unknown"
    else:
        slash = model.find("/")
        provider = model[:slash] if slash > 0 else "default"
    return (label(model or "unknown"), label(provider), label(source or "unknown"))


def exact(amount):
    text = format(amount.normalize(), "f")
    return text


def status(stats):
    seen = set()
    lines = {"read": 0, "counted": 0, "duplicate": 0, "rejected": 0}
    series, cost, unpriced = {}, {}, {}
    files = sorted(
        p for p in Path(stats).iterdir()
        if p.is_file() and p.suffix == ".jsonl" and not p.name.startswith(".")
    )
    for path in files:
        for line in path.read_bytes().split(b"\n")[:-1]:
            if line.strip(b" \t\r") == b"":
                continue
            lines["read"] += 1
            identity = line[:-1] if line.endswith(b"\r") else line
            if identity in seen:
                lines["duplicate"] += 1
                continue
            seen.add(identity)
            try:
                obj, model, source, turn, counts = decode(line)
            except Rejected:
                lines["rejected"] += 1
                continue
            lines["counted"] += 1
            attrs = attributes(model, source)
            if turn:
                totals = series.setdefault(attrs, dict.fromkeys(QUANTITIES, 0))
                totals["turns"] += 1
                continue
            if obj.get("compaction") is not None:
                continue
            if any(counts.values()):
                totals = series.setdefault(attrs, dict.fromkeys(QUANTITIES, 0))
                for key in COUNTS:
                    totals[key] += counts[key]
            q = quote(obj)
            if q[0] == "priced":
                key = attrs + (q[2], q[3])
                cost[key] = cost.get(key, Decimal(0)) + q[1]
            else:
                key = attrs + (q[1],)
                unpriced[key] = unpriced.get(key, 0) + counts["requests"]
    names = ("model_ref", "provider", "source")
    return {
        "series": [dict(zip(names, k), **v) for k, v in sorted(series.items())],
        "lines": lines,
        "cost": [
            dict(zip(names + ("currency", "billing_mode"), k), amount=exact(v))
            for k, v in sorted(cost.items()) if v > 0
        ],
        "unpriced": [
            dict(zip(names + ("reason",), k), requests=v)
            for k, v in sorted(unpriced.items()) if v > 0
        ],
    }


def main():
    if sys.argv[1:] == ["--check"]:
        root = Path(__file__).parent
        wrong = 0
        for case in sorted(p for p in root.iterdir() if (p / "stats").is_dir()):
            want = json.loads((case / "expected-status.json").read_text())
            if status(case / "stats") != want:
                print(f"{case.name}: differs from expected-status.json")
                wrong += 1
        sys.exit(1 if wrong else 0)
    print(json.dumps(status(sys.argv[1]), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
