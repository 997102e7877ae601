#!/usr/bin/env bash
# clang-tidy with the checks .clang-tidy keeps green (bugprone, performance,
# no function over 80 lines) over every library and tool source (crawler/,
# base/, dedup/, parsers/, frontier/, the testsite) in a compile database
# of one file at a time: the tidy preset's (build-tidy/, configured here if
# need be, never built: nothing it reads is generated). The builds are unity
# builds, so this is also where each of those files compiles on its own (a
# missing include is a compiler error here). Fails on any finding. Tests are
# left out: each file costs ~5 s of parsing, and the rule is for library code.
# Usage: bash scripts/tidy.sh [BUILD_DIR] [JOBS]   (default: build-tidy, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-tidy}"
jobs="${2:-2}"
if [ "$build" = build-tidy ] && [ ! -f build-tidy/compile_commands.json ]; then
  cmake --preset tidy >/dev/null
fi
[ -f "$build/compile_commands.json" ] || { echo "tidy: no $build/compile_commands.json: configure first" >&2; exit 2; }
run-clang-tidy -p "$build" -quiet -j "$jobs" "^$(pwd)/(base|dedup|parsers|frontier|crawler|tests/testsite)/.*\.cc$"
