#!/usr/bin/python3
"""Scrapes a crawler's /metrics and parses it with prometheus_client (Debian's
python3-prometheus-client), an independent reader of the text format 0.0.4.

Usage: scrape_metrics.py URL
Prints one JSON object: {"content_type": ..., "types": {family: type},
"samples": {"name{label=value,...}": value}} (labels sorted). Exits 1, naming
the problem, when the answer is not 200 or does not parse, or when a family
breaks the format's rules that the parser lets through: a counter's samples
must end in _total, a histogram must have _bucket (with le="+Inf"), _sum and
_count, and no sample may appear twice.
"""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url = sys.argv[1]
    with urllib.request.urlopen(url, timeout=10) as r:
        if r.status != 200:
            sys.exit(f"{url}: HTTP {r.status}")
        content_type = r.headers.get("Content-Type", "")
        text = r.read().decode("utf-8")
    types, samples = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        names = set()
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            key = f"{s.name}{{{labels}}}"
            if key in samples:
                sys.exit(f"{url}: sample {key} appears twice")
            samples[key] = s.value
            names.add(s.name)
            if family.type == "counter" and not s.name.endswith("_total"):
                sys.exit(f"{url}: counter sample {s.name} does not end in _total")
        if family.type == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                if family.name + suffix not in names:
                    sys.exit(f"{url}: histogram {family.name} has no {suffix}")
            if f"{family.name}_bucket{{le=+Inf}}" not in samples:
                sys.exit(f"{url}: histogram {family.name} has no le=+Inf bucket")
    print(json.dumps({"content_type": content_type, "types": types, "samples": samples}))


if __name__ == "__main__":
    main()
