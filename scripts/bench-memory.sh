#!/usr/bin/env bash
# Memory of a crawl over many hosts: crawler-testsite --pages PAGES --hosts
# HOSTS --vhosts site.test (all on 127.0.0.1, fetch.resolve), politeness 0,
# 16 connections per host, /huge and /slow excluded (HUGE=1 keeps /huge:
# 12 MiB bodies cut at fetch.max_body_bytes), the rest of configs/default.toml.
# Samples the crawler's RSS every INTERVAL seconds and prints it with the
# fetch-log lines so far (robots.txt and retries included); at the end the peak RSS (VmHWM), pages/s and the
# crawl's summary line.
#
#   bash scripts/bench-memory.sh [SECONDS]    (0, the default: to the end)
#   env: PAGES=500000 HOSTS=1000 INTERVAL=10 HUGE=0 CRAWLER_BIN=build/crawler/crawler
#        MALLOC=jemalloc|mimalloc (LD_PRELOAD'd; default glibc)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-0}
pages=${PAGES:-500000}
hosts=${HOSTS:-1000}
interval=${INTERVAL:-10}
bin=${CRAWLER_BIN:-build/crawler/crawler}
site=build/tests/testsite/crawler-testsite
work=$(mktemp -d /tmp/bench-memory.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

source scripts/malloc-preload.sh

"$site" --pages "$pages" --hosts "$hosts" --vhosts site.test --port 0 > "$work/site.out" &
for _ in $(seq 100); do [ -s "$work/site.out" ] && break; sleep 0.1; done
port=$(awk '{print $2}' "$work/site.out")
"$site" --pages "$pages" --hosts "$hosts" --vhosts site.test --port "$port" --seeds > "$work/seeds.txt"
"$site" --pages "$pages" --hosts "$hosts" --vhosts site.test --port "$port" --resolve |
  sed 's/.*/"&",/' | tr -d '\n' | sed 's/^/resolve = [/; s/$/]\n/' > "$work/resolve.toml"
# The default config with its resolve line replaced by the hosts'.
awk -v file="$work/resolve.toml" '/^resolve = / { while ((getline l < file) > 0) print l; next } 1' \
  configs/default.toml > "$work/config.toml"
exclude='"/slow$"'
[ "${HUGE:-0}" = 1 ] || exclude='"/huge$", "/slow$"'
# The virtual hosts on 127.0.0.1 stand for as many servers: no politeness
# per address.
sets=(--set "crawl.exclude=[$exclude]" --set frontier.min_delay_s=0
      --set frontier.max_connections_per_host=16 --set "crawl.max_duration_s=$seconds"
      --set frontier.min_delay_ip_s=0 --set frontier.max_connections_per_ip=100000)

LD_PRELOAD=$preload "$bin" crawl --seeds "$work/seeds.txt" --config "$work/config.toml" \
  --out "$work/out" "${sets[@]}" > "$work/crawl.out" 2>&1 &
pid=$!
echo "pages=$pages hosts=$hosts huge=${HUGE:-0} malloc=${MALLOC:-linked} bin=$bin"
printf '%8s %10s %8s %8s %10s %12s %12s\n' seconds rss_mb anon_mb file_mb fetched queued_ram queued_disk
elapsed=0
hwm=-
while kill -0 "$pid" 2>/dev/null; do
  sleep "$interval"
  elapsed=$((elapsed + interval))
  rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo -)
  # Heap and stacks (anonymous) against mapped files (spooled bodies, libraries).
  anon=$(awk '/RssAnon/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo -)
  file=$(awk '/RssFile/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo -)
  hwm=$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo "$hwm")
  fetched=$(wc -l < "$work/out/fetch-log.jsonl" 2>/dev/null || echo 0)
  queued=$(python3 -c 'import json, sys
try: f = json.load(open(sys.argv[1]))["frontier"]; print(f["queued_memory"], f["queued_disk"])
except Exception: print("- -")' "$work/out/stats.json")
  [ "$rss" = - ] || printf '%8d %10s %8s %8s %10s %12s %12s\n' "$elapsed" "$rss" "$anon" "$file" \
    "$fetched" $queued
done
wait "$pid" || echo "crawler exited with status $?: $(tail -3 "$work/crawl.out")"
echo "peak RSS (VmHWM at the last sample): ${hwm:-?} MB"
summary=$(grep -m1 -E "crawl (done|stopped) in" "$work/crawl.out" || true)
echo "$summary"
# "crawl done in 80.1 s: 45072 fetched (...": fetches per second of the run.
echo "$summary" | awk '{ for (i = 1; i < NF; i++) if ($i == "in") { s = $(i + 1); n = $(i + 3); break } }
  s > 0 { printf "fetches/s: %.0f\n", n / s }'
