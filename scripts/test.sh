#!/usr/bin/env bash
# Builds everything (Release: the crawler, every test and benchmark) and runs
# every test with ctest, two at a time (the crawl tests mostly wait on their
# servers; each test case is its own ctest entry: tests/CMakeLists.txt); then
# checks that no process a test started is left running.
# Usage: bash scripts/test.sh [BUILD_DIR]   (default: build, the release preset)
#   CTEST_PARALLEL_LEVEL=N overrides the 2.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ "$build" = build ]; then
  [ -f build/CMakeCache.txt ] || cmake --preset release
  cmake --build build -j2
else
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCRAWLER_WERROR=ON
  cmake --build "$build" -j2
fi
# (Not seeded with earlier timings, unlike CI's ASan step: in CI the ASan
# build and clang-tidy run beside these tests, niced, and the longest crawls
# first starved them: step 3 then waited 362 s for the ASan build.)
# Every process a test starts must end with it: a redis-server, nginx,
# testsite or crawler still running afterwards fails the run (and is killed:
# scripts/leftovers.py), whether the tests passed or not.
before=$(mktemp)
trap 'rm -f "$before"' EXIT
python3 scripts/leftovers.py snapshot "$before"
status=0
ctest --test-dir "$build" -j "${CTEST_PARALLEL_LEVEL:-2}" --output-on-failure --no-tests=error ||
  status=$?
python3 scripts/leftovers.py check "$before" || status=1
exit "$status"
