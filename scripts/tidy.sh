#!/usr/bin/env bash
# clang-tidy with the checks .clang-tidy keeps green (bugprone, performance,
# no function over 80 lines) over every C++ source of the project in a
# build's compile database; fails on any finding.
# Usage: bash scripts/tidy.sh [BUILD_DIR] [JOBS]   (default: build, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
jobs="${2:-2}"
[ -f "$build/compile_commands.json" ] || { echo "tidy: no $build/compile_commands.json: configure first" >&2; exit 2; }
run-clang-tidy -p "$build" -quiet -j "$jobs" "^$(pwd)/(base|dedup|parsers|frontier|crawler|tests)/.*\.cc$"
