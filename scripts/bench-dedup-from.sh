#!/usr/bin/env bash
# The across-crawls benchmark (docs/benchmarks.md, "Payloads stored once").
# Prints numbers; asserts nothing. Debian's Python documentation (python3-doc:
# 530 HTML pages with their stylesheets, scripts and images) served by nginx
# on 127.0.0.1 is crawled with configs/archive.toml, then crawled again, the
# site unchanged, with dedup.from = the first crawl (no [recrawl]: no
# conditional GET, every page downloaded again). Printed for each crawl: the
# URLs archived, the WARC bytes and bytes per URL; for the second the
# revisits of the first crawl's captures (target: <= 1,100 B per unchanged
# page; the first writes ~15 KB).
# Usage: bash scripts/bench-dedup-from.sh [ROOT]   (default: python3-doc's html)
# Needs a Release build: cmake --preset release && cmake --build build -j2
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(readlink -f "${1:-/usr/share/doc/python3-doc/html}")
bash scripts/install-deps.sh --bench >/dev/null
[ -x build/crawler/crawler ] || { echo "bench: build first (cmake --preset release)" >&2; exit 2; }
[ -f "$root/index.html" ] || { echo "bench: no $root/index.html" >&2; exit 2; }

work=${BENCH_DIR:-$(mktemp -d /tmp/dedup-from-bench.XXXXXX)}
source scripts/bench_nginx.sh
bench_root_up "$work" "$root"
trap 'bench_site_down "$work"' EXIT
echo "http://127.0.0.1:$port/index.html" >"$work/seeds.txt"

for run in first second; do
  extra=()
  [ "$run" = second ] && extra=(--set "dedup.from=[\"$work/first\"]")
  rm -rf "$work/$run"
  echo "bench: crawler, configs/archive.toml, the $run crawl ${extra[*]:-}"
  build/crawler/crawler crawl --seeds "$work/seeds.txt" --out "$work/$run" \
    --config configs/archive.toml --set frontier.min_delay_s=0 \
    --set frontier.max_connections_per_host=8 "${extra[@]}" >"$work/$run.out" 2>&1
  warcio index "$work/$run"/warc/*.warc.gz -f warc-type,warc-target-uri,warc-refers-to-target-uri,http:status,length \
    >"$work/$run.jsonl"
done

python3 - "$work" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
for run in ("first", "second"):
    records = [json.loads(l) for l in open(work / f"{run}.jsonl")]
    size = sum(p.stat().st_size for p in (work / run / "warc").glob("*.warc.gz"))
    fetched = [r for r in records if r["warc-type"] in ("response", "revisit")]
    pages = [r for r in fetched if r["warc-target-uri"].endswith(".html")]
    revisits = [r for r in fetched if r["warc-type"] == "revisit"]
    print(f"{run:6s}: {len(fetched):,} URLs archived ({len(pages):,} .html pages), "
          f"WARC {size:,} B = {size / len(fetched):,.0f} B per URL, "
          f"{size / max(len(pages), 1):,.0f} B per page; {len(revisits):,} revisits")
    if run == "second":
        # Each unchanged URL: its revisit and its request record (the
        # records' gzipped lengths, warcio's "length").
        by_uri = {}
        for r in records:
            if r["warc-type"] in ("revisit", "request"):
                by_uri.setdefault(r["warc-target-uri"], []).append(r)
        costs = [sum(int(x["length"]) for x in rs) for uri, rs in by_uri.items()
                 if any(x["warc-type"] == "revisit" for x in rs)]
        whole = [r for r in fetched if r["warc-type"] == "response"]
        print(f"second: per unchanged URL (revisit + request records): "
              f"mean {sum(costs) / max(len(costs), 1):,.0f} B (target <= 1,100); "
              f"{len(whole):,} URLs stored whole (under dedup.payload_min_bytes, "
              f"or a payload that changed)")
PY
