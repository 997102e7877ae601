#!/usr/bin/env bash
# The payload-dedup benchmark (docs/benchmarks.md, "Payloads stored once").
# Prints numbers; asserts nothing. The testsite (PAGES pages on 4 hosts) whose
# pages load their stylesheet, two images and icon under a query of their own
# (`--assets --asset-query`: cache-busting URLs, one payload under many URLs),
# each requisite padded to ASSET_BYTES, is crawled twice with
# configs/archive.toml: dedup.payload off, then on. Printed for each: the
# WARC bytes, records by type; then the ratio (target <= 60%), and how many
# revisits name a response of the same payload digest (warcio index; target:
# all of them).
# NODES=N (N > 1): the dedup.payload=true crawl runs as an N-node cluster on a
# local redis-server (each node keeps the index of what it archived): the
# WARC bytes are summed over the nodes, and the payloads stored more than
# once (by more than one node) are counted: what per-node indexes miss.
# Also printed: the median gzipped record of a requisite's copy, CSS and PNG,
# stored whole (off) and as a revisit (on): the measure behind
# dedup.payload_min_bytes (MIN_BYTES=0 looks up payloads of any size; the
# default is the config's 512).
# Usage: bash scripts/bench-payload.sh [PAGES] [ASSET_BYTES]   (defaults 2000, 10000)
# Needs a Release build with the tests: cmake --preset release && cmake --build build -j2
set -euo pipefail
cd "$(dirname "$0")/.."
pages=${1:-2000}
asset_bytes=${2:-10000}
site=build/tests/testsite/crawler-testsite
[ -x build/crawler/crawler ] && [ -x "$site" ] ||
  { echo "bench: build first (cmake --preset release && cmake --build build -j2)" >&2; exit 2; }
command -v warcio >/dev/null || { echo "bench: needs warcio (scripts/install-deps.sh)" >&2; exit 2; }

work=${BENCH_DIR:-$(mktemp -d /tmp/payload-bench.XXXXXX)}
args="--pages $pages --hosts 4 --assets --asset-query --asset-bytes $asset_bytes"
"$site" $args --port 0 >"$work/site.out" 2>&1 &
site_pid=$!
trap 'kill $site_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$work/site.out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/listening/ {print $2}' "$work/site.out")
"$site" $args --port "$port" --seeds >"$work/seeds.txt"

nodes=${NODES:-1}
crawl=(build/crawler/crawler crawl --seeds "$work/seeds.txt" --config configs/archive.toml
       --set frontier.min_delay_s=0 --set frontier.min_delay_ip_s=0)
redis_port=$((port + 1000))
min=()
[ -n "${MIN_BYTES:-}" ] && min=(--set dedup.payload_min_bytes="$MIN_BYTES")
for payload in false true; do
  rm -rf "$work/out-$payload" "$work"/out-$payload-n*
  echo "bench: crawler, configs/archive.toml, dedup.payload=$payload, $pages pages, requisites of $asset_bytes B"
  start=$(date +%s.%N)
  if [ "$payload" = true ] && [ "$nodes" -gt 1 ]; then
    echo "bench: ... as a cluster of $nodes nodes"
    bash scripts/redis-local.sh start "$redis_port" "$work/redis"
    pids=()
    for i in $(seq "$nodes"); do
      "${crawl[@]}" --out "$work/out-$payload-n$i" --set dedup.payload=true "${min[@]}" \
        --set cluster.redis="redis://127.0.0.1:$redis_port" --set cluster.job=payload \
        --set cluster.node="n$i" --set cluster.min_nodes="$nodes" >"$work/crawl-n$i.out" 2>&1 &
      pids+=($!)
    done
    wait "${pids[@]}"
    bash scripts/redis-local.sh stop "$redis_port"
  else
    "${crawl[@]}" --out "$work/out-$payload" --set dedup.payload=$payload "${min[@]}" >"$work/crawl-$payload.out" 2>&1
  fi
  awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }' >"$work/time-$payload"
  warcio index "$work"/out-$payload*/warc/*.warc.gz \
    -f warc-type,warc-record-id,warc-payload-digest,warc-profile,warc-refers-to,warc-target-uri,warc-refers-to-target-uri,http:status,length \
    >"$work/index-$payload.jsonl"
done

python3 - "$work" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
size = {}
for payload in ("false", "true"):
    size[payload] = sum(p.stat().st_size for p in work.glob(f"out-{payload}*/warc/*.warc.gz"))
    records = [json.loads(l) for l in open(work / f"index-{payload}.jsonl")]
    types = {}
    for r in records:
        types[r["warc-type"]] = types.get(r["warc-type"], 0) + 1
    wall = float(open(work / f"time-{payload}").read().split()[0])
    print(f"dedup.payload={payload:5s}: WARC {size[payload]:,} B in {wall:.1f} s; records {types}")
    if payload == "true":
        responses = {r["warc-record-id"]: r for r in records if r["warc-type"] == "response"}
        revisits = [r for r in records if r["warc-type"] == "revisit"]
        good = sum(1 for r in revisits
                   if r["warc-refers-to"] in responses
                   and responses[r["warc-refers-to"]]["warc-payload-digest"] == r["warc-payload-digest"]
                   and responses[r["warc-refers-to"]]["warc-target-uri"] == r["warc-refers-to-target-uri"])
        other = sum(1 for r in revisits if r["warc-refers-to-target-uri"] != r["warc-target-uri"])
        print(f"revisits: {len(revisits):,}, {other:,} of them of another URL's capture; "
              f"{good:,} name a response of the same digest and URI ({len(revisits) - good} do not)")
        digests = {}
        for r in responses.values():
            if r.get("http:status") == 200:
                digests[r["warc-payload-digest"]] = digests.get(r["warc-payload-digest"], 0) + 1
        again = sum(n - 1 for n in digests.values() if n > 1)
        print(f"200 responses: {sum(digests.values()):,} of {len(digests):,} payloads: "
              f"{again:,} stored again (a payload under payload_min_bytes, two workers "
              f"at once, or another node)")
import statistics
def median_length(payload, kind, ext):
    v = [int(r["length"]) for r in (json.loads(l) for l in open(work / f"index-{payload}.jsonl"))
         if r["warc-type"] == kind and ext in r["warc-target-uri"] and "?v=" in r["warc-target-uri"]]
    return f"{statistics.median(v):,.0f} B" if v else "none"
print(f"a requisite's copy, median gzipped record: CSS {median_length('false', 'response', '.css')} "
      f"whole, {median_length('true', 'revisit', '.css')} as a revisit; PNG "
      f"{median_length('false', 'response', '.png')} whole, {median_length('true', 'revisit', '.png')} as a revisit")
print(f"WARC bytes with dedup.payload / without: {100 * size['true'] / size['false']:.1f}% (target <= 60%)")
PY
