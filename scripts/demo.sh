#!/usr/bin/env bash
# The README's main job. With no argument: builds a small two-host demo site
# (scripts/demo_site.py), serves it on 127.0.0.1 with python3's http.server,
# crawls it with configs/default.toml and prints the summary and where the
# WARC files are. With a seeds file: crawls those seeds instead.
# Usage: bash scripts/demo.sh [SEEDS_FILE]   (after building into build/)
set -euo pipefail
cd "$(dirname "$0")/.."
crawler=build/crawler/crawler
[ -x "$crawler" ] || { echo "demo: build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 2; }

if [ $# -ge 1 ]; then
  exec "$crawler" crawl --seeds "$1" --config configs/default.toml --out crawl-out
fi

work=$(mktemp -d)
port_a=$((20000 + RANDOM % 20000)); port_b=$((port_a + 1))
python3 scripts/demo_site.py "$work/site" "$port_a" "$port_b" 120
python3 -m http.server "$port_a" --bind 127.0.0.1 --directory "$work/site/a" >"$work/a.log" 2>&1 &
pid_a=$!
python3 -m http.server "$port_b" --bind 127.0.0.1 --directory "$work/site/b" >"$work/b.log" 2>&1 &
pid_b=$!
trap 'kill $pid_a $pid_b 2>/dev/null; rm -rf "$work"' EXIT
for port in "$port_a" "$port_b"; do  # wait until both servers answer
  for _ in $(seq 50); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/index.html')" 2>/dev/null && break
    sleep 0.1
  done
done
echo "http://127.0.0.1:$port_a/index.html" > "$work/seeds.txt"
rm -rf crawl-demo
echo "demo: crawling the demo site on 127.0.0.1:$port_a and :$port_b (configs/default.toml," \
     "politeness 0.05 s for the demo)"
"$crawler" crawl --seeds "$work/seeds.txt" --config configs/default.toml --out crawl-demo \
  --set frontier.min_delay_s=0.05 \
  --set "crawl.scope_hosts=['http://127.0.0.1:$port_a','http://127.0.0.1:$port_b']"
echo "demo: WARC files:"; ls -l crawl-demo/warc/
echo "demo: first lines of crawl-demo/fetch-log.jsonl:"; head -n 3 crawl-demo/fetch-log.jsonl
