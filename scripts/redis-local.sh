#!/usr/bin/env bash
# Starts or stops Debian's redis-server for tests, benchmarks and the README's
# cluster example: bound to 127.0.0.1, AOF on with appendfsync always (every
# acknowledged XADD is on disk), no RDB snapshots.
#   scripts/redis-local.sh start PORT DIR [ARG...]  (DIR holds the AOF and the
#       log; ARGs go to redis-server, as --requirepass PW; redis-cli then
#       needs REDISCLI_AUTH in the environment)
#   scripts/redis-local.sh sentinel PORT DIR NAME PRIMARY_PORT  (Debian's
#       redis-sentinel watching the primary 127.0.0.1:PRIMARY_PORT as NAME:
#       quorum 2, down after 1 s; its config, which it rewrites, in DIR)
#   scripts/redis-local.sh stop PORT
set -euo pipefail
cmd=${1:-}; port=${2:-}
if [[ -z "$cmd" || -z "$port" ]]; then
  echo "usage: $0 start PORT DIR | stop PORT" >&2; exit 2
fi
case "$cmd" in
  start)
    dir=${3:?usage: $0 start PORT DIR}
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$(cd "$dir" && pwd)" \
      --appendonly yes --appendfsync always --save "" \
      --daemonize yes --pidfile "$(cd "$dir" && pwd)/redis-$port.pid" \
      --logfile "$(cd "$dir" && pwd)/redis-$port.log" "${@:4}"
    for _ in $(seq 1 100); do
      # PONG, not LOADING: the AOF is read back.
      [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && exit 0
      sleep 0.05
    done
    echo "redis-server on 127.0.0.1:$port did not answer; see $dir/redis-$port.log" >&2
    exit 1 ;;
  sentinel)
    dir=$(mkdir -p "${3:?}" && cd "$3" && pwd); name=${4:?}; primary=${5:?}
    cat >"$dir/sentinel-$port.conf" <<EOF
port $port
bind 127.0.0.1
daemonize yes
pidfile $dir/sentinel-$port.pid
logfile $dir/sentinel-$port.log
dir $dir
sentinel monitor $name 127.0.0.1 $primary 2
sentinel down-after-milliseconds $name 1000
sentinel failover-timeout $name 10000
EOF
    redis-sentinel "$dir/sentinel-$port.conf"
    for _ in $(seq 1 100); do
      [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && exit 0
      sleep 0.05
    done
    echo "redis-sentinel on 127.0.0.1:$port did not answer; see $dir/sentinel-$port.log" >&2
    exit 1 ;;
  stop)
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true ;;
  *) echo "usage: $0 start PORT DIR | sentinel PORT DIR NAME PRIMARY_PORT | stop PORT" >&2; exit 2 ;;
esac
