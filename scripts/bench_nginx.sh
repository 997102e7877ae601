# Sourced by the benchmarks that crawl a static site served by nginx
# (bench-crawl.sh, bench-recrawl.sh, bench-dedup-from.sh): bench_site_up WORK
# PAGES generates the site (scripts/bench_site.py) into WORK/site unless it
# is there, then serves it as bench_root_up WORK ROOT serves any directory:
# WORK/nginx.conf for a random port on 127.0.0.1, nginx started; it sets
# `port`. bench_site_down WORK stops nginx.
bench_site_up() {
  local work=$1 pages=$2
  mkdir -p "$work"
  echo "bench: generating $pages pages into $work/site"
  [ -f "$work/site/p/$((pages - 1)).html" ] || python3 scripts/bench_site.py "$work/site" "$pages"
  bench_root_up "$work" "$work/site"
}

# bench_root_up WORK ROOT: nginx serving the directory ROOT (any site, with
# Debian's mime types) on a random port of 127.0.0.1; sets `port`.
bench_root_up() {
  local work=$1 root=$2
  mkdir -p "$work"
  chmod 755 "$work"  # nginx workers (www-data) read the site from it
  port=$((30000 + RANDOM % 20000))
  cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log $work/access.log;
  keepalive_requests 1000000;
  include /etc/nginx/mime.types;
  server {
    listen 127.0.0.1:$port;
    root $root;
  }
}
CONF
  : >"$work/access.log"
  nginx -c "$work/nginx.conf"
  sleep 0.5
}

bench_site_down() {
  nginx -c "$1/nginx.conf" -s stop >/dev/null 2>&1 || true
}
