#!/usr/bin/env bash
# Rewrites tests/cmake/ctest-costs-KIND.txt from the timings ctest measured in
# BUILD_DIR (Testing/Temporary/CTestCostData.txt, its lines up to "---":
# NAME RUNS SECONDS), sorted. Run it after a whole ctest of that build when
# tests change much; the test_entries_check entry fails on a line that names no
# entry. tests/cmake/test_costs.cmake says what the costs give each entry.
# Usage: bash scripts/update-test-costs.sh BUILD_DIR [KIND]   (KIND: asan)
set -euo pipefail
cd "$(dirname "$0")/.."
data="$1/Testing/Temporary/CTestCostData.txt"
[ -f "$data" ] || { echo "update-test-costs: no $data (run ctest there first)" >&2; exit 2; }
out="tests/cmake/ctest-costs-${2:-asan}.txt"
sed '/^---$/,$d' "$data" | LC_ALL=C sort >"$out"
echo "update-test-costs: $(wc -l <"$out") entries' costs in $out"
