#!/usr/bin/env bash
# The README's main job. With no argument: starts crawler-testsite (a
# synthetic 4-host web on 127.0.0.1 with redirects, a calendar trap, robots.txt
# variants, gzip, slow, huge and broken pages), crawls it with
# configs/default.toml and prints the crawl summary, where the WARC files are
# and how the fetch log compares with the site's ground truth.
# With a seeds file: crawls those seeds instead (into crawl-out/).
# Builds what it runs first (the crawler and the testsite only: the release
# preset's build/, configured if new).
# Usage: bash scripts/demo.sh [SEEDS_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
crawler=build/crawler/crawler
testsite=build/tests/testsite/crawler-testsite
[ -f build/CMakeCache.txt ] || cmake --preset release >/dev/null
cmake --build build -j2 --target crawler crawler-testsite

if [ $# -ge 1 ]; then
  exec "$crawler" crawl --seeds "$1" --config configs/default.toml --out crawl-out
fi

work=$(mktemp -d)
site_args=(--pages 600 --hosts 4 --slow-ms 1000)
"$testsite" "${site_args[@]}" --port 0 --log "$work/requests.log" >"$work/ready" &
site_pid=$!
trap 'kill $site_pid 2>/dev/null; wait $site_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.05; done
read -r _ port hosts _ <"$work/ready"
"$testsite" "${site_args[@]}" --port "$port" --seeds >"$work/seeds.txt"
"$testsite" "${site_args[@]}" --port "$port" --truth >"$work/truth.txt"
rm -rf crawl-demo
echo "demo: crawling crawler-testsite ($hosts hosts on 127.0.0.1:$port-$((port + hosts - 1)))" \
     "with configs/default.toml; politeness lowered to 0.02 s for the demo"
"$crawler" crawl --seeds "$work/seeds.txt" --config configs/default.toml --out crawl-demo \
  --set frontier.min_delay_s=0.02
echo
echo "demo: WARC files:"; ls -l crawl-demo/warc/
echo "demo: first lines of crawl-demo/fetch-log.jsonl:"; head -n 3 crawl-demo/fetch-log.jsonl
# The fetch log against the site's ground truth (URLs a correct crawl fetches).
grep -v -e '"error":"robots"' -e '"error":"max_pages_per_host"' -e '"final":false' crawl-demo/fetch-log.jsonl |
  sed 's/^{"url":"\([^"]*\)".*/\1/' | sort >"$work/fetched.txt"
echo "demo: fetched $(wc -l <"$work/fetched.txt") URLs ($(sort -u "$work/fetched.txt" | wc -l) distinct);" \
     "the site's truth set has $(wc -l <"$work/truth.txt"); missing: $(comm -23 <(sort "$work/truth.txt") <(sort -u "$work/fetched.txt") | wc -l)," \
     "extra: $(comm -13 <(sort "$work/truth.txt") <(sort -u "$work/fetched.txt") | wc -l)"
echo "demo: requests served by the site: $(wc -l <"$work/requests.log")"
echo
echo "demo: the stats report (crawler stats crawl-demo; --json, --html FILE for charts):"
"$crawler" stats crawl-demo
