#!/usr/bin/env bash
# The cluster benchmarks (docs/benchmarks.md, "The multi-machine crawl"). Prints
# numbers; asserts nothing. Each part starts its own redis-server
# (scripts/redis-local.sh: AOF, appendfsync always) on 127.0.0.1.
#   1. exchange: build/tests/cluster_bench (URLs/s through Redis, Redis bytes
#      per in-flight URL, discovery -> owner latency p50/p99)
#   2. scaling: a latency-bound crawl (crawler-testsite --delay-ms 50, 200
#      hosts, crawl.max_connections=C per node): 1 node, then each of
#      BENCH_SCALE_NODES (3 6) with rendezvous hashing alone, placed by
#      seed hosts (cluster.place_by_seeds), and placed + work-aware
#      balancing (cluster.balance); pages/s, and x one node; each run's
#      CPU (the nodes, under GNU time, and the testsite's) and how long
#      each give took to land and to hand over (scripts/give_landings.py)
#   3. CPU per page: scripts/bench-crawl.sh's CPU-bound crawl, single machine
#      and one node in cluster mode (BENCH_CRAWLER_ONLY)
#   4. control: build/tests/cluster_control_bench, BENCH_NODES (64)
#      exchange-only nodes on BENCH_SHARDS (4096) shards, no URL traffic:
#      Redis CPU, lease renewal p50/p99, the time to detect the end
#   5. rebalance: BENCH_REBALANCE_NODES (3) nodes crawl the delayed site
#      with shared_dir; one more joins (the time until it holds the shards
#      the placement gives it: handoffs), then n2 leaves with SIGTERM (the
#      time until the others hold all of its shards: takeovers); from
#      `crawler cluster-stats`. BENCH_SHARDS, if set, is the job's shards
#      (else the config's, 256). 64 nodes: BENCH_REBALANCE_NODES=64
#      BENCH_SHARDS=4096 BENCH_DELAY_MS=1000 (the crawl lasts ~2 min);
#      BENCH_CHECKPOINT_S (2): each node's checkpoint.interval_s (a handoff
#      or a leave cuts its own checkpoint whatever it is).
#   6. turns: build/tests/address_turns_bench, politeness per address
#      across nodes (cluster.ip_politeness): a turn at an address taken and
#      given back, 1 and 4 threads sharing a node's connection: turns/s,
#      latency p50/p99, Redis CPU a turn
# Usage: bash scripts/bench-cluster.sh [exchange|scaling|cpu|control|rebalance|turns|all]
# (default all)
# Env: BENCH_URLS (1000000), BENCH_PAGES (scaling, 6000), BENCH_CONNECTIONS (8),
#      BENCH_SCALE_NODES ("3 6"), BENCH_SCALE_RUNS (1: sets per node count),
#      BENCH_SCALE_MODES ("hashed placed balanced"), BENCH_ONE_NODE_RATE
#      (pages/s: skips the one-node run, ~5 min at BENCH_DELAY_MS=150),
#      BENCH_DELAY_MS (scaling: each response's delay, 50; on 2 cores, 6 nodes
#      at 50 ms use all the CPU: 200 keeps the crawl latency-bound),
#      BENCH_IP_POLITENESS (scaling: false; true takes a turn per address
#      from Redis per request, as a job does by default),
#      BENCH_WAIT_REPLICAS (exchange: 0; N starts N replicas and runs with
#      cluster.wait_replicas = N), BENCH_CPU_PAGES (50000), BENCH_CRAWLER (scaling: the binary, default
#      build/crawler/crawler; to compare with another build's),
#      BENCH_HUGE_BYTES (scaling, rebalance: the body of each host's /huge page; the
#      site's default, 12 MiB, is cut at fetch.max_body_bytes, 10 MiB: 150
#      such bodies are 97% of the crawl's bytes, fetched in its first seconds),
#      BENCH_SITE_LOG (scaling: set, the testsite logs every request to
#      WORK/site.log; scripts/site_tail.py reads it),
#      BENCH_REDIS_DELAY_MS (scaling: the nodes reach Redis through
#      scripts/delay_proxy.py, every reply that much later: a slow Redis).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
[ -x build/crawler/crawler ] && [ -x build/tests/cluster_bench ] &&
  [ -x build/tests/cluster_control_bench ] ||
  { echo "bench: build first: cmake -S . -B build && cmake --build build -j2" >&2; exit 2; }
work=$(mktemp -d /tmp/cluster-bench.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis_url=redis://127.0.0.1:$port
replica_ports=()
cleanup() {
  bash scripts/redis-local.sh stop "$port"
  for p in "${replica_ports[@]}"; do bash scripts/redis-local.sh stop "$p"; done
  kill "${site_pid:-}" "${proxy_pid:-}" 2>/dev/null || true
}
trap cleanup EXIT
fresh_redis() {
  bash scripts/redis-local.sh stop "$port"
  rm -rf "$work/redis"
  bash scripts/redis-local.sh start "$port" "$work/redis"
}

if [ "$what" = exchange ] || [ "$what" = all ]; then
  echo "== exchange"
  fresh_redis
  wait_replicas=${BENCH_WAIT_REPLICAS:-0}
  if [ "$wait_replicas" -gt 0 ]; then  # that many replicas, each a redis-local.sh server
    for i in $(seq 1 "$wait_replicas"); do
      rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      bash scripts/redis-local.sh start "$rport" "$work/replica$i"
      redis-cli -p "$rport" REPLICAOF 127.0.0.1 "$port" >/dev/null
      replica_ports+=("$rport")
    done
    sleep 1
  fi
  for batch in 256 100 1; do
    n=${BENCH_URLS:-1000000}
    [ "$batch" = 1 ] && n=$((n / 50))   # one URL per entry: 50x fewer, same shape
    build/tests/cluster_bench --redis "$redis_url" --urls "$n" --batch-urls "$batch" \
      --rate 20000 --seconds 5 --wait-replicas "$wait_replicas"
  done
fi

site_pid=
# The user + system CPU seconds process PID has used so far.
proc_cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
# INFO field FIELD of the bench's Redis (a number).
redis_info() { redis-cli -p "$port" INFO all | tr -d '\r' | awk -F: -v f="$1" '$1 == f {print $2}'; }
crawl_nodes() {  # N NAME [FLAGS...]: N nodes crawl the delayed site; prints pages/s
  local nodes=$1 job=$2 start end total=0 pids=() bytes0 cpu0
  shift 2
  bytes0=$(redis_info total_net_input_bytes)
  cpu0=$(python3 -c "print($(redis_info used_cpu_user) + $(redis_info used_cpu_sys))")
  start=$(date +%s.%N)
  local site_cpu0 nodes_redis=$redis_url
  site_cpu0=$(proc_cpu "$site_pid")
  if [ -n "${BENCH_REDIS_DELAY_MS:-}" ]; then  # a slow Redis
    python3 scripts/delay_proxy.py --target "$port" --delay-ms "$BENCH_REDIS_DELAY_MS" \
      >"$work/$job-proxy.port" &
    proxy_pid=$!
    for _ in $(seq 1 100); do [ -s "$work/$job-proxy.port" ] && break; sleep 0.05; done
    nodes_redis=redis://127.0.0.1:$(cat "$work/$job-proxy.port")
  fi
  for i in $(seq 1 "$nodes"); do
    /usr/bin/time -f "%U %S" -o "$work/$job-n$i.time" \
    "${BENCH_CRAWLER:-build/crawler/crawler}" crawl --seeds "$work/seeds.txt" --out "$work/$job-n$i" \
      --set cluster.redis="$nodes_redis" --set cluster.job="$job" --set cluster.node="n$i" \
      --set cluster.min_nodes="$nodes" --set crawl.max_connections="${BENCH_CONNECTIONS:-8}" \
      --set crawl.max_depth=5 --set frontier.min_delay_s=0 \
      --set frontier.max_connections_per_host=1 \
      --set frontier.max_connections_per_ip=100000 `# 200 hosts on 127.0.0.1 stand for 200 servers` \
      --set cluster.ip_politeness="${BENCH_IP_POLITENESS:-false}" `# no turns per address: a round trip a request` \
      "$@" >"$work/$job-n$i.out" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  end=$(date +%s.%N)
  if [ -n "${proxy_pid:-}" ]; then kill "$proxy_pid"; proxy_pid=; fi
  for i in $(seq 1 "$nodes"); do
    total=$((total + $(grep -c '"status"' "$work/$job-n$i/fetch-log.jsonl" || true)))
  done
  # pages/s, and against the one-node run's (the first), x.
  python3 -c "
import sys, os
t = float(sys.argv[2]) - float(sys.argv[1]); rate = int(sys.argv[4]) / t
first = sys.argv[5] + '/one-node-rate'
if not os.path.exists(first):
    open(first, 'w').write(str(rate))
x = rate / float(open(first).read())
print(f'  {sys.argv[3]} node(s) {sys.argv[6]}: {sys.argv[4]} pages in {t:.1f} s = {rate:.1f} pages/s, {x:.2f}x one node')" \
    "$start" "$end" "$nodes" "$total" "$work" "$job"
  # Pages per node: the spread placement and balancing are for.
  for i in $(seq 1 "$nodes"); do grep -c '"status"' "$work/$job-n$i/fetch-log.jsonl" || true; done |
    paste -sd/ | awk '{print "    pages per node: " $0}'
  { grep -h "balance: giving" "$work"/"$job"-n*/crawler.log 2>/dev/null || true; } | wc -l |
    awk '$1 > 0 {print "    " $1 " gives of shards to less loaded nodes (work-aware placement)"}' 
  # Each give's landing: the giver's "balance: giving ... to node X" to X's
  # first "took over" after it.
  python3 scripts/give_landings.py "$work/$job"
  # The CPU the nodes and the testsite spent (Redis's: below).
  python3 -c "import sys; n=sum(float(x) for f in sys.argv[3:] for x in open(f).read().split()[:2]); print(f'    CPU: nodes {n:.1f} s ({1000*n/int(sys.argv[1]):.2f} ms a page), testsite {float(sys.argv[2]):.1f} s')" \
    "$total" "$(python3 -c "print($(proc_cpu "$site_pid") - $site_cpu0)")" "$work/$job"-n*.time
  # What the nodes sent Redis (URL batches and control traffic), and the CPU
  # Redis spent on it.
  python3 -c "import sys; b=int(sys.argv[2])-int(sys.argv[1]); c=float(sys.argv[4])-float(sys.argv[3]); print(f'    Redis: {b/1e6:.2f} MB received ({b/int(sys.argv[5]):.0f} B per page), {c:.2f} s CPU')" \
    "$bytes0" "$(redis_info total_net_input_bytes)" "$cpu0" \
    "$(python3 -c "print($(redis_info used_cpu_user) + $(redis_info used_cpu_sys))")" "$total"
}

if [ "$what" = scaling ] || [ "$what" = all ]; then
  echo "== scaling (every response delayed ${BENCH_DELAY_MS:-50} ms; ${BENCH_CONNECTIONS:-8} connections per node${BENCH_REDIS_DELAY_MS:+; Redis replies $BENCH_REDIS_DELAY_MS ms late})"
  fresh_redis
  build/tests/testsite/crawler-testsite --pages "${BENCH_PAGES:-6000}" --hosts 200 --port 0 \
    --slow-ms 10 --delay-ms "${BENCH_DELAY_MS:-50}" ${BENCH_HUGE_BYTES:+--huge-bytes "$BENCH_HUGE_BYTES"} \
    ${BENCH_SITE_LOG:+--log "$work/site.log"} >"$work/site.out" &
  site_pid=$!
  for _ in $(seq 1 100); do [ -s "$work/site.out" ] && break; sleep 0.05; done
  site_port=$(awk '{print $2}' "$work/site.out")
  build/tests/testsite/crawler-testsite --pages "${BENCH_PAGES:-6000}" --hosts 200 \
    --port "$site_port" --seeds >"$work/seeds.txt"
  if [ -n "${BENCH_ONE_NODE_RATE:-}" ]; then  # a re-run: the one-node figure known
    echo "$BENCH_ONE_NODE_RATE" >"$work/one-node-rate"
    echo "  1 node: $BENCH_ONE_NODE_RATE pages/s (BENCH_ONE_NODE_RATE, not run)"
  else
    crawl_nodes 1 one
  fi
  # Each node count three times, with cluster.shared_dir (handoffs need
  # it): rendezvous hashing alone, placed by seed hosts, then placed and
  # balanced. Each job draws its own seed (host -> shard), so one set of
  # runs also compares draws: BENCH_SCALE_RUNS sets (default 1).
  for n in ${BENCH_SCALE_NODES:-3 6}; do
    for r in $(seq 1 "${BENCH_SCALE_RUNS:-1}"); do
      for mode in ${BENCH_SCALE_MODES:-hashed placed balanced}; do
        case $mode in
          hashed) set -- --set cluster.balance=false --set cluster.place_by_seeds=false ;;
          placed) set -- --set cluster.balance=false ;;
          *) set -- ;;
        esac
        crawl_nodes "$n" "$mode$n-$r" --set cluster.shared_dir="$work" "$@"
      done
    done
  done
  kill "$site_pid"; site_pid=
fi

if [ "$what" = cpu ] || [ "$what" = all ]; then
  echo "== CPU per page: single machine, then one cluster node (same crawl)"
  fresh_redis
  BENCH_CRAWLER_ONLY=1 bash scripts/bench-crawl.sh "${BENCH_CPU_PAGES:-50000}" | grep -E "^ *crawler|pages/s"
  CRAWLER_SETS="--set cluster.redis=$redis_url --set cluster.job=cpu --set cluster.node=n1" \
    BENCH_CRAWLER_ONLY=1 bash scripts/bench-crawl.sh "${BENCH_CPU_PAGES:-50000}" | grep -E "^ *crawler|pages/s"
fi

# Seconds from now until `crawler cluster-stats --json` of job $1 satisfies
# the Python expression $2 over `s` (the report) and `node` (by name);
# "never" after $3 s.
seconds_until() {
  local t0 now
  t0=$(date +%s.%N)
  while :; do
    now=$(date +%s.%N)
    if build/crawler/crawler cluster-stats "$redis_url" --job "$1" --json 2>/dev/null |
      python3 -c "
import json, sys
try:
    s = json.load(sys.stdin)
except ValueError:  # no job yet
    sys.exit(1)
node = {n['node']: n for n in s['nodes']}
sys.exit(0 if ($2) else 1)"; then
      python3 -c "print(f'{float(\"$now\") - float(\"$t0\"):.1f}')"
      return
    fi
    if python3 -c "import sys; sys.exit(0 if float('$now') - float('$t0') > $3 else 1)"; then
      echo never
      return
    fi
    sleep 0.2
  done
}

if [ "$what" = rebalance ] || [ "$what" = all ]; then
  echo "== rebalance (shared_dir; every response delayed ${BENCH_DELAY_MS:-50} ms)"
  fresh_redis
  build/tests/testsite/crawler-testsite --pages "${BENCH_PAGES:-6000}" --hosts 200 --port 0 \
    --delay-ms "${BENCH_DELAY_MS:-50}" ${BENCH_HUGE_BYTES:+--huge-bytes "$BENCH_HUGE_BYTES"} \
    >"$work/site.out" &
  site_pid=$!
  for _ in $(seq 1 100); do [ -s "$work/site.out" ] && break; sleep 0.05; done
  site_port=$(awk '{print $2}' "$work/site.out")
  build/tests/testsite/crawler-testsite --pages "${BENCH_PAGES:-6000}" --hosts 200 \
    --port "$site_port" --seeds >"$work/seeds.txt"
  # No balancing: it times the join's and the leave's handoffs alone (gives
  # between busy nodes add handoffs of their own; docs/cluster.md).
  nodes=${BENCH_REBALANCE_NODES:-3} pids=()
  joiner=n$((nodes + 1))
  node() {  # NAME: a node of job "rebalance", in the background
    build/crawler/crawler crawl --seeds "$work/seeds.txt" --out "$work/rebalance-$1" \
      --set cluster.redis="$redis_url" --set cluster.job=rebalance --set cluster.node="$1" \
      --set cluster.min_nodes="$nodes" --set cluster.shared_dir="$work" \
      --set cluster.balance=false ${BENCH_SHARDS:+--set cluster.shards="$BENCH_SHARDS"} \
      --set crawl.max_connections="${BENCH_CONNECTIONS:-8}" --set crawl.max_depth=5 \
      --set frontier.min_delay_s=0 --set checkpoint.interval_s="${BENCH_CHECKPOINT_S:-2}" \
      --set frontier.max_connections_per_ip=100000 --set cluster.ip_politeness=false \
      >"$work/rebalance-$1.out" 2>&1 &
    pids+=($!)
  }
  for i in $(seq 1 "$nodes"); do node "n$i"; done
  p2=${pids[1]}
  echo "  $nodes nodes started: $(seconds_until rebalance "s['leases']['held'] == s['streams']['shards']" 120) s until every shard's lease is held"
  sleep 5
  node "$joiner"
  echo "  join: $joiner holds its rendezvous share of the shards $(seconds_until rebalance \
    "'$joiner' in node and node['$joiner']['leases'] >= node['$joiner']['shards'] > 0" 120) s after it was started (its join, the handoffs: drain, checkpoint, commit, take over)"
  kill -TERM "$p2"
  echo "  leave: the others hold all of n2's shards $(seconds_until rebalance \
    "node['n2']['leases'] == 0 and s['leases']['held'] == s['streams']['shards']" 120) s after its SIGTERM (its last commit, leases given up, takeovers)"
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  kill "$site_pid"; site_pid=
fi

if [ "$what" = control ] || [ "$what" = all ]; then
  echo "== control plane (no URL traffic)"
  fresh_redis
  build/tests/cluster_control_bench --redis "$redis_url" --nodes "${BENCH_NODES:-64}" \
    --shards "${BENCH_SHARDS:-4096}" --seconds 10
fi

if [ "$what" = turns ] || [ "$what" = all ]; then
  echo "== turns at addresses (politeness per address across nodes)"
  fresh_redis
  for t in 1 4; do
    build/tests/address_turns_bench --redis "$redis_url" --threads "$t" --seconds 5
  done
  # All at one address: each start finds the others' turns in progress and
  # checks each one's process against its node's liveness key.
  build/tests/address_turns_bench --redis "$redis_url" --threads 4 --addresses 1 --seconds 5
fi
