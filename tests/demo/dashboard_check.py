#!/usr/bin/env python3
"""Check that every metric a Grafana dashboard queries exists in an exposition.

usage: dashboard_check.py DASHBOARD.json METRICS.txt
       dashboard_check.py --self-test

Metric names are taken from the PromQL of every panel target (rows and
nested panels included) and from the template variables' queries. A name is
present when METRICS.txt (Prometheus text format) has a sample of that name,
or declares it as a family (# HELP/# TYPE), or declares the family it is a
series of (queue_wait_seconds_bucket of histogram queue_wait_seconds): a
daemon with no queue yet may print families without samples, and that still
proves the dashboard names the right thing.
Exit 0 when all are present, 1 listing the missing ones, 2 on bad input.
Standard library only, so it runs wherever python3 does.
"""
import json
import re
import sys

# Keywords and modifiers that look like identifiers but are not metrics.
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "start", "end"}
# Aggregations may put their by/without clause before the argument list:
# "sum by (le) (x)", so they are not always followed by "(".
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
# These take a parenthesised list of label names (group_* may take none).
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
# Series names a family of each type exposes, beyond its own name.
SUFFIXES = {
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("_sum", "_count", "_created"),
    "counter": ("_total", "_created"),
}

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<number>(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)(?:[a-zA-Z]+\d*)*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<punct>.)
""", re.X | re.S)

# Grafana variables: ${var}, ${var:fmt}, $var, [[var]]. Replaced by a
# duration so that "[$__rate_interval]" and "topk($n, ...)" stay PromQL.
GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$[a-zA-Z_]\w*|\[\[[^\]]*\]\]")


def tokens(expr):
    for m in TOKEN.finditer(GRAFANA_VAR.sub("1m", expr)):
        kind = m.lastgroup
        if kind not in ("space", "comment"):
            yield kind, m.group()


def skip_group(toks, i, close):
    """Index just past the bracket group that opens at toks[i]."""
    opening = toks[i][1]
    depth = 0
    while i < len(toks):
        kind, text = toks[i]
        if kind == "punct" and text == opening:
            depth += 1
        elif kind == "punct" and text == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def metric_names(expr):
    """Metric names in one PromQL expression."""
    toks = list(tokens(expr))
    names = set()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "punct" and text == "{":
            # Label matchers: only {__name__="x"} names a metric.
            end = skip_group(toks, i, "}")
            inner = toks[i + 1:end - 1]
            for j in range(len(inner) - 2):
                if (inner[j][1] == "__name__" and inner[j + 1][1] == "="
                        and inner[j + 2][0] == "string"):
                    names.add(inner[j + 2][1][1:-1])
            i = end
        elif kind == "punct" and text == "[":
            i = skip_group(toks, i, "]")  # range or subquery: durations only
        elif kind == "ident" and text in LABEL_LISTS:
            i = skip_group(toks, i + 1, ")") if nxt == "(" else i + 1
        elif kind == "ident" and (nxt == "(" or text in AGGREGATIONS):
            i += 1  # function or aggregation; its arguments are scanned on
        elif kind == "ident" and text.lower() not in KEYWORDS:
            names.add(text)
            i += 1
        else:
            i += 1
    return names


def variable_names(query):
    """Metric names in a template variable's query."""
    q = query.strip()
    m = re.fullmatch(r"label_values\((.*),\s*[a-zA-Z_]\w*\s*\)", q, re.S)
    if m:
        return metric_names(m.group(1))
    if re.fullmatch(r"label_values\(\s*[a-zA-Z_]\w*\s*\)", q):
        return set()  # label name only
    if re.match(r"(label_names|metrics)\(", q):
        return set()
    m = re.fullmatch(r"query_result\((.*)\)", q, re.S)
    return metric_names(m.group(1) if m else q)


def dashboard_names(dash):
    """{metric name: [where used]} for a dashboard dict."""
    if "dashboard" in dash and "panels" not in dash:
        dash = dash["dashboard"]  # an API export wraps the dashboard
    used = {}

    def add(names, where):
        for n in names:
            used.setdefault(n, []).append(where)

    def walk(panels):
        for p in panels or []:
            title = p.get("title") or "panel %s" % p.get("id")
            for t in p.get("targets") or []:
                if isinstance(t.get("expr"), str) and t["expr"].strip():
                    add(metric_names(t["expr"]), "%s/%s" % (title, t.get("refId", "?")))
            walk(p.get("panels"))

    walk(dash.get("panels"))
    for v in (dash.get("templating") or {}).get("list") or []:
        if v.get("type") != "query":
            continue
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if isinstance(q, str) and q.strip():
            add(variable_names(q), "variable $%s" % v.get("name"))
    return used


def exposition(text):
    """(sample names, {family: type}) of a Prometheus text exposition."""
    samples, families = set(), {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                kind = parts[3].strip().lower() if parts[1] == "TYPE" and len(parts) > 3 else None
                if kind or parts[2] not in families:
                    families[parts[2]] = kind
            continue
        m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
        if m:
            samples.add(m.group())
    return samples, families


def present(name, samples, families):
    if name in samples or name in families:
        return True
    for fam, kind in families.items():
        for suf in SUFFIXES.get(kind, ()):
            if name == fam + suf:
                return True
    return False


def check(dash, text, out=sys.stdout):
    used = dashboard_names(dash)
    samples, families = exposition(text)
    missing = sorted(n for n in used if not present(n, samples, families))
    if missing:
        print("missing from the exposition (%d of %d):" % (len(missing), len(used)), file=out)
        for n in missing:
            print("  %s  (used by %s)" % (n, ", ".join(sorted(set(used[n])))), file=out)
        return 1
    print("ok: %d metric names checked, all in the exposition" % len(used), file=out)
    return 0


SAMPLE_DASH = {
    "panels": [
        {"type": "row", "title": "r", "panels": [
            {"title": "nested", "targets": [{"refId": "A", "expr": 'sum(queue_size{queue=~"$queue"}) by (queue)'}]}]},
        {"title": "p99", "targets": [{"refId": "A", "expr":
            'histogram_quantile(0.99, sum by (le) (rate(queue_wait_seconds_bucket{queue=~"$queue", le!="+Inf"}[$__rate_interval])))'}]},
        {"title": "mix", "targets": [
            {"refId": "A", "expr": 'rate(queue_in_total[5m] offset 1h) / on(queue) group_left(dir) '
                                   'irate(queue_leak_total{dir="rear"}[${__interval}]) > bool 0'},
            {"refId": "B", "expr": '{__name__="queue_capacity"} # comment names_nothing\n'},
            {"refId": "C", "expr": 'label_replace(max_over_time(queue_subq_size[1m:10s]), "x", "$1", "subq", "(.*)")'},
            {"refId": "D", "expr": ""}]},
    ],
    "templating": {"list": [
        {"name": "queue", "type": "query", "query": {"query": "label_values(queue_capacity, queue)"}},
        {"name": "lbl", "type": "query", "query": "label_values(subq)"},
        {"name": "iv", "type": "interval", "query": "1m,5m"}]},
}
SAMPLE_METRICS = """\
# HELP queue_size Items waiting.
# TYPE queue_size gauge
queue_size{queue="demo"} 3
# TYPE queue_capacity gauge
queue_capacity{queue="demo"} 100
# TYPE queue_in_total counter
queue_in_total{queue="demo"} 1e3
# HELP queue_leak_total Leaks.
# TYPE queue_leak_total counter
# HELP queue_wait_seconds Wait time.
# TYPE queue_wait_seconds histogram
# TYPE queue_subq_size gauge
queue_subq_size{queue="demo",subq="egress"} 0
"""


def self_test():
    import io
    expected = {"queue_size", "queue_wait_seconds_bucket", "queue_in_total",
                "queue_leak_total", "queue_capacity", "queue_subq_size"}
    got = set(dashboard_names(SAMPLE_DASH))
    assert got == expected, "extracted %s, expected %s" % (sorted(got), sorted(expected))
    out = io.StringIO()
    assert check(SAMPLE_DASH, SAMPLE_METRICS, out) == 0, out.getvalue()
    # Drop one family: it must be reported, and only it.
    cut = "\n".join(l for l in SAMPLE_METRICS.splitlines() if "queue_wait_seconds" not in l)
    out = io.StringIO()
    assert check(SAMPLE_DASH, cut, out) == 1, out.getvalue()
    assert "queue_wait_seconds_bucket" in out.getvalue() and "queue_size " not in out.getvalue(), out.getvalue()
    # A suffix only counts for a family of a type that has it.
    assert not present("queue_size_bucket", *exposition(SAMPLE_METRICS))
    assert present("queue_wait_seconds_count", *exposition(SAMPLE_METRICS))
    print("self-test ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3 or argv[1].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            dash = json.load(f)
        with open(argv[2], encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError) as e:
        print("dashboard_check: %s" % e, file=sys.stderr)
        return 2
    return check(dash, text)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
