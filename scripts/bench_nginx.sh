# Sourced by the benchmarks that crawl a static site served by nginx
# (bench-crawl.sh, bench-recrawl.sh): bench_site_up WORK PAGES generates the
# site (scripts/bench_site.py) into WORK/site unless it is there, writes
# WORK/nginx.conf for a random port on 127.0.0.1 and starts nginx; it sets
# `port`. bench_site_down stops nginx.
bench_site_up() {
  local work=$1 pages=$2
  mkdir -p "$work"
  chmod 755 "$work"  # nginx workers (www-data) read the site from it
  port=$((30000 + RANDOM % 20000))
  echo "bench: generating $pages pages into $work/site"
  [ -f "$work/site/p/$((pages - 1)).html" ] || python3 scripts/bench_site.py "$work/site" "$pages"
  cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log $work/access.log;
  keepalive_requests 1000000;
  types { text/html html; }
  server {
    listen 127.0.0.1:$port;
    root $work/site;
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
