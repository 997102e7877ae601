#!/usr/bin/env bash
# A crawl of the synthetic internet (crawler-testsite --web, tests/testsite/
# web.h): HOSTS hosts on ADDRESSES addresses, sites of Pareto size, ~30 KB
# pages. Prints, per tenth of the crawl's time (scripts/bench_web.py): pages/s,
# RSS, URLs queued in RAM and on disk, hosts known and with work queued, the
# most requests at once and the shortest gap between two requests that any
# one address saw (from the server's log), the share of requests in traps
# and the spam farm; then coverage of the truth and the run's figures.
#
#   bash scripts/bench-web.sh [SECONDS]     (0, the default: to the end)
#   env: HOSTS=100000 ADDRESSES=5000 ZIPF=1.1 XMIN=4 ALPHA=1.25 PAGE_BYTES=30000
#        PER_HOST=4 DELAY=0 INTERVAL=10 CRAWLER_BIN=build/crawler/crawler
#        DNS_DELAY=0 (ms the site's DNS waits before each answer)
#        DNS=0 (no lookups: every host given by fetch.resolve instead)
#        SETS="--set frontier.max_connections_per_ip=2 ..." (more crawler settings)
#        MALLOC=jemalloc|mimalloc (LD_PRELOAD'd; scripts/malloc-preload.sh)
#        KEEP=1 (keep the work directory: OUT, the request log, the samples)
#        WRAP="heaptrack -o /tmp/crawl" (runs the crawler under it; the RSS
#        samples are then the wrapper's process, not the crawler's)
#        TRAPS=1 (crawl.scope_domains = ["test"]: the traps, the spam farm and
#        the dead hosts in scope, ended by the trap guards and the budgets
#        per registered domain at their defaults)
#        FAULTS="--dns-outage-at-s 5 --dns-outage-s 30 --dead-first 10" (the
#        site's fault switches, tests/testsite/web.h: a DNS outage from the
#        DNS's first query (or --dns-outage-after Q queries; SERVFAIL with
#        --dns-outage-servfail), hosts answering a dead address first,
#        --dead-first-silent, --page-fault-every N --page-fault reset|short|gzip|header|silent|trickle)
#
# Every name is looked up in the site's DNS (fetch.dns_servers). The
# default scope (the seeds' hosts: every normal root) keeps the traps, the
# farm and the dead hosts out; TRAPS=1 lets them in. Politeness per host:
# DELAY s, PER_HOST connections; per address: the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-0}
interval=${INTERVAL:-10}
bin=${CRAWLER_BIN:-build/crawler/crawler}
site=build/tests/testsite/crawler-testsite
shape=(--web --hosts "${HOSTS:-100000}" --addresses "${ADDRESSES:-5000}"
       --address-zipf "${ZIPF:-1.1}" --site-xmin "${XMIN:-4}" --site-alpha "${ALPHA:-1.25}"
       --page-bytes "${PAGE_BYTES:-30000}")
work=$(mktemp -d /tmp/bench-web.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

source scripts/malloc-preload.sh

"$site" "${shape[@]}" --describe
# shellcheck disable=SC2086  # FAULTS is a list of switches
"$site" "${shape[@]}" --port 0 --log "$work/requests.log" \
  --dns-delay-ms "${DNS_DELAY:-0}" ${FAULTS:-} > "$work/site.out" &
for _ in $(seq 3000); do [ -s "$work/site.out" ] && break; sleep 0.1; done  # 10^6 hosts: ~1 min
port=$(awk '{print $2}' "$work/site.out")
"$site" "${shape[@]}" --port "$port" --seeds > "$work/seeds.txt"
"$site" "${shape[@]}" --port "$port" --truth > "$work/truth.txt"
if [ "${DNS:-1}" = 0 ]; then
  key=resolve
  "$site" "${shape[@]}" --port "$port" --resolve |
    sed 's/.*/"&",/' | tr -d '\n' | sed 's/^/resolve = [/; s/$/]\n/' > "$work/resolve.toml"
else
  key=dns_servers
  dns=$(awk '{print $4}' "$work/site.out" | sed 's/^web://')
  echo "dns_servers = [\"127.0.0.1:$dns\"]" > "$work/resolve.toml"
fi
awk -v file="$work/resolve.toml" -v key="$key" \
  '$1 == key && $2 == "=" { while ((getline l < file) > 0) print l; next } 1' \
  configs/default.toml > "$work/config.toml"

LD_PRELOAD=$preload ${WRAP:-} "$bin" crawl --seeds "$work/seeds.txt" --config "$work/config.toml" \
  --out "$work/out" --set "frontier.min_delay_s=${DELAY:-0}" \
  --set "frontier.max_connections_per_host=${PER_HOST:-4}" \
  --set "crawl.max_duration_s=$seconds" \
  $([ "${TRAPS:-0}" = 1 ] && echo '--set crawl.scope_domains=["test"]') \
  ${SETS:-} > "$work/crawl.out" 2>&1 &
pid=$!
echo "crawling: $(wc -l < "$work/seeds.txt") seeds, $(wc -l < "$work/truth.txt") pages in the truth," \
  "malloc=${MALLOC:-linked}, per host: ${PER_HOST:-4} connections, ${DELAY:-0} s apart," \
  "DNS: $([ "${DNS:-1}" = 0 ] && echo "none (fetch.resolve)" || echo "the site's, ${DNS_DELAY:-0} ms")"
start=$(date +%s.%N)
while kill -0 "$pid" 2>/dev/null; do
  sleep "$interval"
  rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] || break
  python3 - "$work/out/stats.json" "$rss" "$start" >> "$work/samples.jsonl" <<'EOF'
import json, sys, time
try:
    stats = json.load(open(sys.argv[1]))
    f, d = stats["frontier"], stats.get("dns", {})
except Exception:
    f, d = {}, {}
active = sum(f.get(k, 0) for k in ("hosts_ready", "hosts_waiting_politeness",
                                   "hosts_waiting_robots", "hosts_backing_off"))
print(json.dumps({"t": time.time() - float(sys.argv[3]), "rss_mb": int(sys.argv[2]),
                  "queued_memory": f.get("queued_memory", 0),
                  "queued_disk": f.get("queued_disk", 0),
                  "hosts": f.get("hosts", 0), "hosts_active": active,
                  "dns_queries": d.get("queries", 0), "dns_hit_ratio": d.get("hit_ratio", 0),
                  "dns_p99_ms": d.get("latency_p99_ms", 0),
                  "memory": stats.get("memory", {}) if f else {}}))
EOF
done
wait "$pid" || true
grep -m1 -E "crawl (done|stopped) in" "$work/crawl.out" || tail -5 "$work/crawl.out"
grep -m1 "^  given up:" "$work/crawl.out" || true
kill "$(jobs -p)" 2>/dev/null || true
wait 2>/dev/null || true
python3 scripts/bench_web.py "$work/samples.jsonl" "$work/requests.log" "$work/truth.txt"
