#!/usr/bin/env bash
# The dedup loss benchmark: are the stats' `wrong "seen" (expected)` figures
# true? Crawls a generated crawler-testsite web (3 hosts, so every page is
# allowed by robots.txt; each page has 20-100 in-links, so a page the crawl
# never fetched was dropped by a false "seen", not missed) once per filter
# setting, with a filter started far too small, and prints per run: the pages
# of the site's truth set never fetched, the stats' expected figure, and their
# ratio. Prints numbers; asserts nothing (testsite_crawl_test "*lost pages agree*"
# is the test).
# Usage: bash scripts/bench-fpr.sh [PAGES] ["CAPACITY:ERROR[:GROWTH] ..."]
#   defaults: 20000 "100:0.01 200:0.01 400:0.01 1000:0.01 200:0.1"
#   GROWTH: dedup.compact_growth (default: the config's, 1.25; 0 = never
#   compact), e.g. "200:0.1:0 200:0.1:1.25" compares a grown chain with a
#   compacted filter.
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${1:-20000}
runs=${2:-"100:0.01 200:0.01 400:0.01 1000:0.01 200:0.1"}
crawler=build/crawler/crawler
testsite=build/tests/testsite/crawler-testsite
for bin in "$crawler" "$testsite"; do
  [ -x "$bin" ] || { echo "bench-fpr: build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 2; }
done
work=$(mktemp -d)
site_args=(--pages "$pages" --hosts 3)
"$testsite" "${site_args[@]}" --port 0 >"$work/ready" &
site_pid=$!
trap 'kill $site_pid 2>/dev/null; wait $site_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.05; done
read -r _ port _ _ <"$work/ready"
"$testsite" "${site_args[@]}" --port "$port" --seeds >"$work/seeds.txt"
"$testsite" "${site_args[@]}" --port "$port" --truth | sort >"$work/truth.txt"
echo "bench-fpr: $pages pages on 3 hosts, truth set $(wc -l <"$work/truth.txt") URLs"
printf "%-9s %-6s %-6s %7s %7s %9s %7s %6s\n" capacity error growth layers lost expected ratio items
for run in $runs; do
  IFS=: read -r capacity error growth <<<"$run"
  growth=${growth:-1.25}
  rm -rf "$work/out"
  "$crawler" crawl --seeds "$work/seeds.txt" --config configs/default.toml --out "$work/out" \
    --set frontier.min_delay_s=0 --set crawl.max_connections=16 \
    --set dedup.capacity="$capacity" --set dedup.error_rate="$error" \
    --set dedup.compact_growth="$growth" >"$work/crawl.log" 2>&1
  sed 's/^{"url":"\([^"]*\)".*/\1/' "$work/out/fetch-log.jsonl" | sort -u >"$work/attempted.txt"
  lost=$(comm -23 "$work/truth.txt" "$work/attempted.txt" | wc -l)
  python3 - "$work/out/stats.json" "$capacity" "$error" "$lost" "$growth" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["dedup"]
lost, expected = int(sys.argv[4]), d["expected_false_seen"]
ratio = f"{lost / expected:.2f}" if expected > 0 else "-"
print(f"{sys.argv[2]:9s} {sys.argv[3]:6s} {sys.argv[5]:6s} {d['layers_max']:7d} {lost:7d} {expected:9.2f} {ratio:>7s} {d['items']:6d}")
PY
done
