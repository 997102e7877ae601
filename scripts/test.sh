#!/usr/bin/env bash
# Builds everything (Release: the crawler, every test and benchmark) and runs
# every test with ctest, two at a time (the crawl tests mostly wait on their
# servers; each test case is its own ctest entry: tests/CMakeLists.txt).
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
# A fresh build has no timings of earlier runs, and ctest -j would then start
# the entries in the order they are defined: the longest crawls could start
# last and run alone, one core idle. Seeded with timings measured on a CI run
# (tests/cmake/ctest-costs-release.txt; ctest's own CTestCostData.txt format),
# it starts the longest first, and keeps its own timings from then on.
bash scripts/seed-test-costs.sh "$build" release
ctest --test-dir "$build" -j "${CTEST_PARALLEL_LEVEL:-2}" --output-on-failure --no-tests=error
