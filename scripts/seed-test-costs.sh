#!/usr/bin/env bash
# Gives a build directory that has run no test yet the test timings measured
# on a CI run (tests/cmake/ctest-costs-KIND.txt, in the format of ctest's own
# Testing/Temporary/CTestCostData.txt), so that `ctest -j` starts the longest
# entries first instead of in the order they are defined. A build that has
# timings of its own keeps them. Entries not listed run after the listed ones.
# ctest keys the file by each name's first word: only names without spaces
# (the torture, chaos and concurrency entries: the longest) are ordered.
# Usage: bash scripts/seed-test-costs.sh BUILD_DIR asan   (CI's ASan step)
set -euo pipefail
cd "$(dirname "$0")/.."
costs="$1/Testing/Temporary/CTestCostData.txt"
[ -f "$costs" ] && exit 0
mkdir -p "$(dirname "$costs")"
cp "tests/cmake/ctest-costs-$2.txt" "$costs"
