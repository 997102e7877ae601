#!/usr/bin/env bash
# Many sites on one address, as shared hosting and CDNs serve them: the
# testsite's HOSTS virtual hosts on 127.0.0.1 (fetch.resolve), each answer
# DELAY_MS late; the crawler with CONNECTIONS connections, one per host,
# PER_HOST_S between a host's requests, the per-address limits lifted
# (PER_IP connections, no gap). Prints the crawl's time and pages/s, and the
# most requests the address served at once (from the site's log). Asserts
# nothing.
#
#   bash scripts/bench-shared-address.sh [CRAWLER_BIN ...]   (default: build/crawler/crawler)
#   env: HOSTS=200 PAGES=4000 DELAY_MS=50 CONNECTIONS=8 PER_HOST_S=0.02 PER_IP=1000
#
# Several binaries are run one after the other on the same site (an A/B of
# two builds).
set -euo pipefail
cd "$(dirname "$0")/.."
site=build/tests/testsite/crawler-testsite
bins=("$@")
[ "${#bins[@]}" -gt 0 ] || bins=(build/crawler/crawler)
work=$(mktemp -d /tmp/bench-shared.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
args=(--pages "${PAGES:-4000}" --hosts "${HOSTS:-200}" --vhosts site.test
      --delay-ms "${DELAY_MS:-50}")
for bin in "${bins[@]}"; do
  rm -rf "$work/out" "$work/requests.log"
  "$site" "${args[@]}" --port 0 --log "$work/requests.log" > "$work/site.out" &
  site_pid=$!
  for _ in $(seq 100); do [ -s "$work/site.out" ] && break; sleep 0.1; done
  port=$(awk '{print $2}' "$work/site.out")
  "$site" "${args[@]}" --port "$port" --seeds > "$work/seeds.txt"
  resolve=$("$site" "${args[@]}" --port "$port" --resolve | sed 's/.*/"&"/' | paste -sd, -)
  printf '[fetch]\nresolve = [%s]\n' "$resolve" > "$work/resolve.toml"
  start=$(date +%s.%N)
  "$bin" crawl --seeds "$work/seeds.txt" --config "$work/resolve.toml" --out "$work/out" \
    --set crawl.max_connections="${CONNECTIONS:-8}" \
    --set frontier.max_connections_per_host=1 \
    --set frontier.min_delay_s="${PER_HOST_S:-0.02}" \
    --set frontier.max_connections_per_ip="${PER_IP:-1000}" \
    --set frontier.min_delay_ip_s=0 > "$work/crawl.out" 2>&1
  end=$(date +%s.%N)
  kill "$site_pid"
  wait "$site_pid" 2>/dev/null || true
  python3 - "$bin" "$start" "$end" "$work/requests.log" <<'EOF'
import sys
bin_, start, end, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
events = []
n = 0
for line in open(log):
    f = line.split()
    if len(f) < 3:
        continue
    n += 1
    events += [(int(f[0]), 1), (int(f[1]), -1)]  # arrival to the answer's first byte
events.sort()
peak = cur = 0
for _, d in events:
    cur += d
    peak = max(peak, cur)
s = end - start
print(f"{bin_}: {s:.1f} s, {n} requests, {n / s:.1f} requests/s, at most {peak} at once")
EOF
done
