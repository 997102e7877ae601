#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian 12's packages.
# Idempotent: does nothing (no apt-get update, no network) when all are present.
# Usage: sudo bash scripts/install-deps.sh [--bench]   (root on a fresh Debian 12)
#   --bench: also what scripts/bench-crawl.sh compares against (wget,
#            Scrapy) and measures with (GNU time), and the allocators
#            scripts/bench-memory.sh and bench-web.sh compare (MALLOC=)
#            beside jemalloc, the crawler's own.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcurl4-openssl-dev libgumbo-dev libidn2-dev libxml2-dev
  libboost1.81-dev libboost-url1.81-dev libboost-json1.81-dev
  libxxhash-dev libspdlog-dev libfmt-dev catch2 libtomlplusplus-dev libcli11-dev libssl-dev
  zlib1g-dev libdeflate-dev libhiredis-dev redis-server
  redis-sentinel  # the cluster tests' failover (cluster.sentinels)
  libpsl-dev  # the public suffix list: which hosts are one site (page requisites)
  libzip-dev  # WACZ packages (crawler wacz)
  librocksdb-dev  # the URL history of a crawl that revisits (crawler/src/output/history.h)
  libjemalloc-dev  # the crawler's allocator (crawler/CMakeLists.txt says why)
  libc-ares-dev  # the crawler's own DNS (crawler/resolver.h says why)
  libbrotli-dev libzstd-dev  # Content-Encoding br, zstd (crawler/src/engine/decoder.h says why)
  clang libclang-rt-14-dev clang-format clang-tidy
  python3 python3-prometheus-client chromium
  nginx tinyproxy microsocks stunnel4 openssl
  procps  # pgrep: .ci/run stops its background builds on the way out
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(wget python3-scrapy time libisal-dev libmimalloc2.0
             python3-doc)  # the site scripts/bench-dedup-from.sh crawls
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node.js and npm (Debian's, unless a node >= 18 is already there) for the
# independent WARC reader.
if ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1 && ! dpkg-query -W -f='${Status}' nodejs 2>/dev/null | grep -q nodesource; then
  missing+=(npm)
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # redis-server, nginx, tinyproxy, microsocks and stunnel are only run by
  # the tests, on free ports: keep their packages from starting system
  # services on install (nginx's would fail the install if port 80 were
  # taken).
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod +x "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# warcio (npm): the independent WARC reader the tests check our files with.
WARCIO_VERSION=2.4.11
if ! command -v warcio >/dev/null 2>&1; then
  echo "install-deps: installing warcio@${WARCIO_VERSION} from npm"
  $SUDO npm install -g --no-fund --no-audit "warcio@${WARCIO_VERSION}"
else
  echo "install-deps: warcio present"
fi

# The replay test (tests/archive/replay_test.cc): ReplayWeb.page's prebuilt
# ui.js and sw.js from the npm package (its tarball only: they need none of
# its build dependencies), checked against the registry's pinned integrity;
# and puppeteer-core, which drives Debian's chromium (it downloads no browser).
RWP_VERSION=2.5.3
RWP_INTEGRITY="sha512-nCj2PSON3BxeSJKE8AsYPyULv0XPZKJWfy4l9PyQre9SqwLZ+WKZVs/sfLqPOQ4GrH+0YkjbwOhr8cSTH08gsQ=="
RWP_DIR=/usr/local/share/crawler-tests/replaywebpage-${RWP_VERSION}
if [ ! -f "$RWP_DIR/sw.js" ]; then
  echo "install-deps: fetching replaywebpage@${RWP_VERSION} (ui.js, sw.js) from npm"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "replaywebpage@${RWP_VERSION}" >/dev/null)
  got="sha512-$(openssl dgst -sha512 -binary "$tmp/replaywebpage-${RWP_VERSION}.tgz" | base64 -w0)"
  if [ "$got" != "$RWP_INTEGRITY" ]; then
    echo "install-deps: replaywebpage-${RWP_VERSION}.tgz is not the pinned one ($got)" >&2
    exit 1
  fi
  tar -xzf "$tmp/replaywebpage-${RWP_VERSION}.tgz" -C "$tmp" package/ui.js package/sw.js
  $SUDO mkdir -p "$RWP_DIR"
  $SUDO cp "$tmp/package/ui.js" "$tmp/package/sw.js" "$RWP_DIR/"
  rm -rf "$tmp"
else
  echo "install-deps: replaywebpage present"
fi
PUPPETEER_VERSION=24.8.2  # 25 wants node >= 22.12; this machine has 20
if ! npm ls -g --depth=0 "puppeteer-core@${PUPPETEER_VERSION}" >/dev/null 2>&1; then
  echo "install-deps: installing puppeteer-core@${PUPPETEER_VERSION} from npm"
  $SUDO npm install -g --no-fund --no-audit "puppeteer-core@${PUPPETEER_VERSION}"
else
  echo "install-deps: puppeteer-core present"
fi
