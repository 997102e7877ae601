#!/usr/bin/env bash
# The crawl benchmark (docs/benchmarks.md, "Crawl"). Prints numbers; asserts
# nothing. Generates a static site of PAGES pages (~10 KB, 30-80 links each),
# serves it with nginx on 127.0.0.1, then crawls it with:
#   - crawler (configs/default.toml, politeness 0, 16 connections to the host)
#   - wget -r (one connection), and again writing a gzipped WARC (--warc-file)
#   - Scrapy (Debian's python3-scrapy, CrawlSpider following every link,
#     32 concurrent requests), stopped after SCRAPY_PAGES pages
# and times gumbo alone parsing the same files on one thread (the ceiling).
# For each: pages/s, CPU seconds per 1,000 pages, peak RSS.
#
# BENCH_CHECKPOINTS=1: only the crawler, without / with periodic checkpoints.
# BENCH_CRAWLER_ONLY=1: only the crawler run. CRAWLER_SETS="--set k=v ...":
# extra options for that run (scripts/bench-cluster.sh: one cluster node). CRAWLER_BIN=PATH: another
# crawler binary (e.g. an older build, for before/after numbers), CRAWLER_CONFIG=PATH
# its config (an older build refuses keys added since).
# Usage: bash scripts/bench-crawl.sh [PAGES] [SCRAPY_PAGES]   (defaults 50000, 10000)
# Needs a Release build with benchmarks: cmake -S . -B build -DCRAWLER_BUILD_BENCH=ON
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${1:-50000}
scrapy_pages=${2:-10000}
bash scripts/install-deps.sh --bench >/dev/null
[ -x build/crawler/crawler ] && [ -x build/tests/parsers_bench ] ||
  { echo "bench: build first: cmake -S . -B build -DCRAWLER_BUILD_BENCH=ON && cmake --build build -j2" >&2; exit 2; }

work=${BENCH_DIR:-$(mktemp -d /tmp/crawl-bench.XXXXXX)}
source scripts/bench_nginx.sh
bench_site_up "$work" "$pages"
trap 'bench_site_down "$work"' EXIT
root="http://127.0.0.1:$port/index.html"
echo "$root" >"$work/seeds.txt"

# measure NAME CMD...: wall seconds, CPU seconds, peak RSS; pages from nginx's log.
measure() {
  local name=$1; shift
  : >"$work/access.log"
  nginx -c "$work/nginx.conf" -s reopen; sleep 0.2
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >"$work/$name.out" 2>&1 || true
  sleep 0.3
  read -r wall user sys rss_kb <"$work/$name.time"
  local distinct total
  distinct=$(awk '$9 == 200 {print $7}' "$work/access.log" | sort -u | grep -c '\.html' || true)
  total=$(wc -l <"$work/access.log")
  python3 - "$name" "$wall" "$user" "$sys" "$rss_kb" "$distinct" "$total" <<'PY'
import sys
name, wall, user, sys_, rss, distinct, total = sys.argv[1:]
wall, cpu, rss, distinct = float(wall), float(user) + float(sys_), int(rss), int(distinct)
print(f"{name:8s} {distinct:7d} distinct pages ({int(total)} requests) in {wall:7.1f} s: "
      f"{distinct / wall:8.1f} pages/s, {1000 * cpu / max(distinct, 1):6.2f} CPU s / 1000 pages, "
      f"peak RSS {rss / 1024:6.1f} MB")
PY
  echo "$name $distinct $wall" >>"$work/rates"
}

: >"$work/rates"
echo "bench: crawler (workers = cores, 16 connections to the one host, no politeness delay)"
rm -rf "$work/crawl-out"
measure crawler "${CRAWLER_BIN:-build/crawler/crawler}" crawl --seeds "$work/seeds.txt" --config "${CRAWLER_CONFIG:-configs/default.toml}" \
  --out "$work/crawl-out" --set frontier.min_delay_s=0 --set frontier.max_connections_per_host=16 \
  --set crawl.max_depth=100000 --set crawl.max_pages_per_host=$((pages * 2)) --set dedup.capacity="$pages" \
  ${CRAWLER_SETS:-}

[ -n "${BENCH_CRAWLER_ONLY:-}" ] && exit 0

if [ -n "${BENCH_CHECKPOINTS:-}" ]; then
  # The cost of checkpoints: the same crawl with periodic checkpoints off,
  # every 60 s and every 5 s (a stress: ~8 in a 40 s crawl).
  # The crawl takes ~40 s here, so "every 60 s" takes no periodic checkpoint:
  # the 5 s runs are the ones that measure something. The "big" pair repeats
  # 0 / 5 s with a ~1 GB filter (capacity 800M), so each checkpoint forks a
  # 1 GB process and writes 1 GB while the crawl goes on.
  # BENCH_CHECKPOINT_RUNS overrides the list of INTERVAL:CAPACITY runs.
  for run in ${BENCH_CHECKPOINT_RUNS:-0:$pages 60:$pages 5:$pages 0:800000000 5:800000000}; do
    interval=${run%%:*} capacity=${run#*:}
    name="ckpt-$interval"; [ "$capacity" = "$pages" ] || name="ckpt-$interval-1GB"
    echo "bench: crawler, checkpoint.interval_s=$interval dedup.capacity=$capacity"
    rm -rf "$work/crawl-out"
    measure "$name" build/crawler/crawler crawl --seeds "$work/seeds.txt" --config configs/default.toml \
      --out "$work/crawl-out" --set frontier.min_delay_s=0 --set frontier.max_connections_per_host=16 \
      --set crawl.max_depth=100000 --set crawl.max_pages_per_host=$((pages * 2)) --set dedup.capacity="$capacity" --set checkpoint.interval_s=$interval
    echo "  $(grep -c "checkpoint.*written" "$work/crawl-out/crawler.log") checkpoints; last periodic:"
    grep -h "checkpoint.*written:" "$work/crawl-out/crawler.log" | tail -n 1 || true
  done
  python3 - "$work/rates" <<'PY'
import sys
rates = {}
for line in open(sys.argv[1]):
    name, pages, wall = line.split()
    rates[name] = int(pages) / float(wall)
for k, b in (("ckpt-60", "ckpt-0"), ("ckpt-5", "ckpt-0"), ("ckpt-60-1GB", "ckpt-0-1GB"), ("ckpt-5-1GB", "ckpt-0-1GB")):
    if k in rates and b in rates:
        print(f"{k}: {rates[k]:.1f} pages/s = {100 * rates[k] / rates[b]:.1f}% of {b} ({rates[b]:.1f}; target >= 90%)")
PY
  exit 0
fi

echo "bench: wget -r (one connection)"
rm -rf "$work/wget"
measure wget wget -r -l inf -nv -e robots=off --no-parent -P "$work/wget" "$root"

echo "bench: wget -r writing a WARC (gzipped, with digests, as the crawler's)"
rm -rf "$work/wget-warc"
mkdir -p "$work/wget-warc"
measure wget-warc wget -r -l inf -nv -e robots=off --no-parent -P "$work/wget-warc" \
  --warc-file="$work/wget-warc/crawl" --no-warc-keep-log "$root"

echo "bench: Scrapy CrawlSpider, 32 concurrent requests, first $scrapy_pages pages"
cat >"$work/spider.py" <<PY
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
class Bench(CrawlSpider):
    name = "bench"
    allowed_domains = ["127.0.0.1"]
    start_urls = ["$root"]
    rules = (Rule(LinkExtractor(), follow=True),)
    custom_settings = {"CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
                       "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "WARNING",
                       "CLOSESPIDER_PAGECOUNT": $scrapy_pages, "TELNETCONSOLE_ENABLED": False,
                       "DEPTH_PRIORITY": 1}
PY
measure scrapy scrapy runspider "$work/spider.py"

echo "bench: gumbo alone over the same files, one thread"
build/tests/parsers_bench --dir "$work/site/p" --rounds 1 | tee "$work/gumbo.out"
python3 - "$work/rates" "$work/gumbo.out" <<'PY'
import re, sys
rates = {}
for line in open(sys.argv[1]):
    name, pages, wall = line.split()
    rates[name] = int(pages) / float(wall)
gumbo = float(re.search(r"([\d.]+) pages/s", open(sys.argv[2]).read()).group(1))
c = rates.get("crawler", 0)
print(f"crawler / wget:   {c / rates['wget']:.2f}x  (target >= 2)")
print(f"crawler / wget writing a WARC: {c / rates['wget-warc']:.2f}x")
print(f"crawler / scrapy: {c / rates['scrapy']:.2f}x  (target >= 10)")
print(f"crawler / (2 x gumbo alone): {100 * c / (2 * gumbo):.0f}%  (aim >= 65%)")
PY
echo "bench: files in $work (remove when done)"
