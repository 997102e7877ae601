#!/usr/bin/env bash
# The recrawl benchmark (docs/benchmarks.md, "Revisits against nginx"). Prints numbers; asserts nothing.
# A static site of PAGES pages (scripts/bench_site.py) served by nginx, which
# sends ETag and Last-Modified for static files and answers conditional
# requests with 304, is crawled with [recrawl] on and a fixed interval
# INTERVAL_S, so that the first pass ends before any page is due again; the
# crawl runs until every page has been revisited once (the second pass) and
# is then stopped with Ctrl-C. Printed:
#   - the second pass: revisits, and the share answered 304 (target >= 95%);
#   - WARC bytes of each pass (the first revisit record's offset splits them,
#     warcio index) and their ratio (target <= 5%);
#   - the URL history's size on disk per URL (the last checkpoint's image;
#     target <= 200 bytes).
# Usage: bash scripts/bench-recrawl.sh [PAGES] [INTERVAL_S]   (defaults 10000, 60)
# Needs a Release build: cmake --preset release && cmake --build --preset release
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${1:-10000}
interval=${2:-60}
bash scripts/install-deps.sh --bench >/dev/null
[ -x build/crawler/crawler ] || { echo "bench: build first (cmake --preset release)" >&2; exit 2; }

work=${BENCH_DIR:-$(mktemp -d /tmp/recrawl-bench.XXXXXX)}
source scripts/bench_nginx.sh
bench_site_up "$work" "$pages"
crawler_pid=
cleanup() {
  [ -n "$crawler_pid" ] && kill "$crawler_pid" 2>/dev/null || true
  bench_site_down "$work"
}
trap cleanup EXIT
echo "http://127.0.0.1:$port/index.html" >"$work/seeds.txt"
out="$work/out"
rm -rf "$out"
echo "bench: crawler, [recrawl] on, fixed interval ${interval} s"
start=$(date +%s.%N)
build/crawler/crawler crawl --seeds "$work/seeds.txt" --out "$out" \
  --set frontier.min_delay_s=0 --set frontier.max_connections_per_host=16 \
  --set crawl.max_depth=100000 --set crawl.max_pages_per_host=$((pages * 2)) \
  --set dedup.capacity="$pages" --set recrawl.enabled=true --set recrawl.adapt=fixed \
  --set recrawl.interval_s="$interval" --set recrawl.min_interval_s=1 \
  >"$work/crawler.out" 2>&1 &
crawler_pid=$!
# Until every page fetched whole has been revisited (stats.json, every 2 s).
figure() {
  python3 - "$out/stats.json" "$1" <<'PY' 2>/dev/null || echo 0
import json, sys
c = json.load(open(sys.argv[1]))["crawl"]
print(eval(sys.argv[2], {}, c))
PY
}
first=0
while sleep 2; do
  kill -0 "$crawler_pid" 2>/dev/null || { echo "bench: the crawler ended early" >&2; cat "$work/crawler.out" >&2; exit 1; }
  fetched=$(figure "status_2xx - revisits_identical - revisits_changed")
  revisited=$(figure "revisits_not_modified + revisits_identical + revisits_changed")
  [ "$first" = 0 ] && [ "$revisited" -gt 0 ] && first=$(date +%s.%N)
  [ "$fetched" -gt 0 ] && [ "$revisited" -ge "$fetched" ] && break
  elapsed=$(python3 -c "print(int($(date +%s.%N) - $start))")
  [ "$elapsed" -gt $((interval * 4 + 300)) ] && { echo "bench: no full second pass after $elapsed s" >&2; break; }
done
kill -INT "$crawler_pid"
wait "$crawler_pid" || true
crawler_pid=
python3 - "$out" <<'PY'
import glob, json, os, subprocess, sys
out = sys.argv[1]
c = json.load(open(os.path.join(out, "stats.json")))["crawl"]
nm, ident, changed = c["revisits_not_modified"], c["revisits_identical"], c["revisits_changed"]
revisits = nm + ident + changed
first_bytes = second_bytes = 0
for path in sorted(glob.glob(os.path.join(out, "warc", "*.warc.gz"))):
    size = os.path.getsize(path)
    idx = subprocess.run(["warcio", "index", path, "-f", "warc-type,offset"],
                         capture_output=True, text=True, check=True).stdout
    split = None
    for line in idx.splitlines():
        r = json.loads(line)
        if r.get("warc-type") == "revisit":
            split = int(r["offset"])
            break
    if split is None:
        first_bytes += size
    else:
        first_bytes += split
        second_bytes += size - split
hist = os.path.join(out, "checkpoint", "history")
hist_bytes = sum(os.path.getsize(os.path.join(hist, f)) for f in os.listdir(hist))
urls = sum(1 for _ in open(os.path.join(out, "fetch-log.jsonl")))
distinct = len({json.loads(l)["url"] for l in open(os.path.join(out, "fetch-log.jsonl"))})
print(f"second pass: {revisits} revisits: {nm} not modified (304) = {100 * nm / max(revisits, 1):.1f}% "
      f"(target >= 95%), {ident} identical payload, {changed} changed; "
      f"{c['revisit_bytes_saved'] / 1e6:.1f} MB of payload not stored again")
print(f"WARC bytes: first pass {first_bytes / 1e6:.1f} MB, second pass {second_bytes / 1e6:.2f} MB "
      f"= {100 * second_bytes / max(first_bytes, 1):.2f}% (target <= 5%)")
print(f"URL history: {hist_bytes / 1e6:.2f} MB on disk for {distinct} URLs = "
      f"{hist_bytes / max(distinct, 1):.1f} bytes/URL (target <= 200); {urls} fetch-log lines")
PY
