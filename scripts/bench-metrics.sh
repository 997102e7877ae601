#!/usr/bin/env bash
# The /metrics scrape cost (docs/benchmarks.md, "Metrics"; the bound:
# <= 1 ms of crawl-thread time per scrape). Prints numbers; asserts nothing.
# A crawl of a 1000-virtual-host site (a large host table: rendering reads
# every host) is scraped every 100 ms. The crawl's Run thread renders each
# scrape and counts what that cost (crawler_metrics_render_seconds_total /
# crawler_metrics_renders_total); this script also times each scrape from
# outside (wall time, render wait included).
# Usage: bash scripts/bench-metrics.sh   Env: BENCH_PAGES (20000), BENCH_SCRAPES (200)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/crawler/crawler ] ||
  { echo "bench: build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 2; }
work=$(mktemp -d /tmp/metrics-bench.XXXXXX)
pages=${BENCH_PAGES:-20000}
site=(build/tests/testsite/crawler-testsite --pages "$pages" --hosts 1000 --vhosts site.test
      --slow-ms 10)
"${site[@]}" --port 0 >"$work/site.out" &
site_pid=$!
crawl_pid=
cleanup() { kill "$site_pid" ${crawl_pid:+"$crawl_pid"} 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$work/site.out" ] && break; sleep 0.05; done
port=$(awk '{print $2}' "$work/site.out")
"${site[@]}" --port "$port" --seeds >"$work/seeds.txt"
{ echo "[fetch]"; echo "resolve = ["
  "${site[@]}" --port "$port" --resolve | sed 's/.*/  "&",/'; echo "]"; } >"$work/resolve.toml"
build/crawler/crawler crawl --seeds "$work/seeds.txt" --config "$work/resolve.toml" \
  --out "$work/out" --set metrics.listen=127.0.0.1:0 --set frontier.min_delay_s=0.05 \
  --set frontier.min_delay_ip_s=0 --set frontier.max_connections_per_ip=100000 \
  2>"$work/crawl.err" >/dev/null &
crawl_pid=$!
url=
for _ in $(seq 1 200); do
  url=$(grep -o 'http://[^ ]*/metrics' "$work/crawl.err" || true)
  [ -n "$url" ] && break; sleep 0.05
done
[ -n "$url" ] || { echo "bench: no metrics URL"; cat "$work/crawl.err"; exit 1; }
/usr/bin/python3 - "$url" "${BENCH_SCRAPES:-200}" <<'EOF'
import sys, time, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
def scrape():
    t = time.monotonic()
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return time.monotonic() - t, text
def value(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0
_, before = scrape()
walls = []
for _ in range(n):
    w, text = scrape()
    walls.append(w)
    time.sleep(0.1)
renders = value(text, "crawler_metrics_renders_total") - value(before, "crawler_metrics_renders_total")
render_s = value(text, "crawler_metrics_render_seconds_total") - value(before, "crawler_metrics_render_seconds_total")
walls.sort()
print(f"scrapes: {n}; hosts known at the end: {int(value(text, 'crawler_frontier_hosts'))}, "
      f"pages: {int(sum(float(l.split()[1]) for l in text.splitlines() if l.startswith('crawler_pages_total{')))}, "
      f"text: {len(text)} bytes")
print(f"crawl (Run thread) time per scrape: {1000 * render_s / max(1, renders):.3f} ms "
      f"(over {int(renders)} renders)")
print(f"scrape wall time seen by the scraper: p50 {1000 * walls[len(walls) // 2]:.1f} ms, "
      f"p99 {1000 * walls[int(len(walls) * 0.99)]:.1f} ms (includes waiting for the "
      f"Run thread's next 20 ms step)")
EOF
