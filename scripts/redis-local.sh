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
# With REDIS_LOCAL_FOREGROUND=1, start and sentinel exec the server in the
# foreground instead (no daemon, no wait for PONG): the tests' way, so that
# the server is their child and dies with them.
set -euo pipefail
cmd=${1:-}; port=${2:-}
if [[ -z "$cmd" || -z "$port" ]]; then
  echo "usage: $0 start PORT DIR | stop PORT" >&2; exit 2
fi
# Exits 0 once the server on $port answers PONG (not LOADING: an AOF is
# read back), 1 after 5 s naming its log.
await_pong() {  # WHAT LOG
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && exit 0
    sleep 0.05
  done
  echo "$1 on 127.0.0.1:$port did not answer; see $2" >&2
  exit 1
}
case "$cmd" in
  start)
    dir=${3:?usage: $0 start PORT DIR}
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    server=(redis-server --port "$port" --bind 127.0.0.1 --dir "$dir"
      --appendonly yes --appendfsync always --save ""
      --pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log")
    if [ -n "${REDIS_LOCAL_FOREGROUND:-}" ]; then
      exec "${server[@]}" --daemonize no "${@:4}"
    fi
    "${server[@]}" --daemonize yes "${@:4}"
    await_pong redis-server "$dir/redis-$port.log" ;;
  sentinel)
    dir=$(mkdir -p "${3:?}" && cd "$3" && pwd); name=${4:?}; primary=${5:?}
    cat >"$dir/sentinel-$port.conf" <<EOF
port $port
bind 127.0.0.1
daemonize $([ -n "${REDIS_LOCAL_FOREGROUND:-}" ] && echo no || echo yes)
pidfile $dir/sentinel-$port.pid
logfile $dir/sentinel-$port.log
dir $dir
sentinel monitor $name 127.0.0.1 $primary 2
sentinel down-after-milliseconds $name 1000
sentinel failover-timeout $name 10000
EOF
    [ -z "${REDIS_LOCAL_FOREGROUND:-}" ] || exec redis-sentinel "$dir/sentinel-$port.conf"
    redis-sentinel "$dir/sentinel-$port.conf"
    await_pong redis-sentinel "$dir/sentinel-$port.log" ;;
  stop)
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true ;;
  *) echo "usage: $0 start PORT DIR | sentinel PORT DIR NAME PRIMARY_PORT | stop PORT" >&2; exit 2 ;;
esac
