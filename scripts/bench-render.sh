#!/usr/bin/env bash
# The rendering benchmark (docs/rendering.md, "The JavaScript test site").
# Prints numbers; asserts nothing. Serves crawler-testsite --js on
# 127.0.0.1 and crawls it once per MODE of browser.render (default: off auto
# always) with the defaults otherwise (politeness 0), then reads the WARC
# files back with warcio and prints, per mode: the truth's URLs archived,
# URLs archived twice, pages rendered (and at their cap), wall and CPU
# seconds (the crawler and its Chromium processes, reaped), and the peak RSS
# of the largest process of the run (a Chromium one's when pages render).
# Usage: bash scripts/bench-render.sh [MODE...]   (CRAWLER_SETS="--set k=v ...":
# more options for every run). Needs a Release build: cmake --build build -j2
set -euo pipefail
cd "$(dirname "$0")/.."
modes=("$@"); [ ${#modes[@]} -gt 0 ] || modes=(off auto always)
bin=build/crawler/crawler site=build/tests/testsite/crawler-testsite
[ -x "$bin" ] && [ -x "$site" ] || { echo "bench: build first: cmake --build build -j2" >&2; exit 2; }
command -v warcio >/dev/null || { echo "bench: warcio missing: bash scripts/install-deps.sh" >&2; exit 2; }
work=$(mktemp -d /tmp/render-bench.XXXXXX)
"$site" --js --port 0 >"$work/site.out" 2>&1 &
site_pid=$!
trap 'kill $site_pid 2>/dev/null; wait $site_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ -s "$work/site.out" ] && break; sleep 0.05; done
port=$(awk '{print $2}' "$work/site.out")
echo "http://127.0.0.1:$port/" >"$work/seeds.txt"
"$site" --js --port "$port" --truth >"$work/truth.txt"
printf '%-7s %9s %7s %9s %6s %7s %8s %8s\n' mode archived twice rendered at-cap wall_s cpu_s rss_mb
for mode in "${modes[@]}"; do
  out="$work/$mode"
  # shellcheck disable=SC2086  # CRAWLER_SETS is word-split on purpose
  /usr/bin/time -f "%e %U %S %M" -o "$work/$mode.time" "$bin" crawl --seeds "$work/seeds.txt" \
    --out "$out" --set frontier.min_delay_s=0 --set browser.render="$mode" \
    ${CRAWLER_SETS:-} >"$work/$mode.log" 2>&1 || echo "bench: $mode: crawl failed, see its log" >&2
  read -r wall user sys rss <"$work/$mode.time"
  warcio index "$out"/warc/*.gz >"$work/$mode.cdx" 2>/dev/null || true
  python3 - "$work/truth.txt" "$work/$mode.cdx" "$out/fetch-log.jsonl" "$mode" "$wall" \
    "$user" "$sys" "$rss" <<'PY'
import collections, json, sys
truth_path, cdx, log, mode, wall, user, sys_s, rss = sys.argv[1:]
truth = set(open(truth_path).read().split())
seen = collections.Counter()
for line in open(cdx):
    d = json.loads(line)
    if d.get("warc-type") == "response":
        seen[d["warc-target-uri"]] += 1
renders = collections.Counter()
for line in open(log):
    r = json.loads(line).get("render")
    if r:
        renders[r.split(":")[0]] += 1
rendered = renders["rendered"] + renders["rendered-cap"]
twice = sum(1 for n in seen.values() if n > 1)
print(f"{mode:<7} {len(truth & set(seen)):>4}/{len(truth):<4} {twice:>7} {rendered:>9} "
      f"{renders['rendered-cap']:>6} {float(wall):>7.1f} {float(user) + float(sys_s):>8.1f} "
      f"{int(rss) / 1024:>8.1f}")
PY
done
