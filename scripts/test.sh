#!/usr/bin/env bash
# Builds everything (Release) and runs every test with ctest.
# Usage: bash scripts/test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCRAWLER_WERROR=ON
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure --no-tests=error
