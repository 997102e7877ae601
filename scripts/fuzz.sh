#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan; -Werror, so this clang
# build, with clang_check.py for what the fuzzers do not link, enforces
# -Wthread-safety on every source) and runs each for
# SECONDS (default 60) from the seed corpus in tests/fuzz/corpus/. New inputs
# go to a scratch directory, not into the repository. A crash leaves its input
# as crash-* in build-fuzz/: turn it into a test in tests/regressions/.
# Runs are reproducible: libFuzzer's seed is FUZZ_SEED (default 1); set
# another to explore elsewhere, e.g. FUZZ_SEED=$RANDOM bash scripts/fuzz.sh 600.
# Usage: bash scripts/fuzz.sh [SECONDS]
#        bash scripts/fuzz.sh --build-only   (what .ci/run builds ahead)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
seed="${FUZZ_SEED:-1}"
cmake --preset fuzz >/dev/null   # clang, ASan+UBSan, -Werror (CMakePresets.json)
targets=(url html robots sitemap css dedup_load frontier_image checkpoint)
cmake --build build-fuzz -j2 --target "${targets[@]/%/_fuzz}"
# With --build-only (CI's build), what the fuzzers do not link (the
# cluster, the crawler's main, the testsite) goes through clang's front end
# with the same flags: -Wthread-safety and clang's warnings over every
# source (scripts/clang_check.py). A run after it skips it (22 core-s).
if [ "$seconds" = "--build-only" ]; then
  python3 scripts/clang_check.py build-fuzz
  exit 0
fi
# Two targets at a time (each fuzzes on one core); each one's last lines are
# printed when it ends, and any failure (a crash: crash-* in build-fuzz/)
# fails the script.
run_one() {
  local target=$1 scratch
  scratch=$(mktemp -d)
  (cd build-fuzz && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "./tests/${target}_fuzz" -seed="$seed" -max_total_time="$seconds" -max_len=65536 \
      -print_final_stats=1 "$scratch" "../tests/fuzz/corpus/${target}" >"$scratch.log" 2>&1)
  local rc=$?
  echo "fuzz: ${target}_fuzz for ${seconds}s: exit $rc"
  tail -n 12 "$scratch.log"
  rm -rf "$scratch" "$scratch.log"
  return $rc
}
export -f run_one
export seconds seed
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c 'run_one {}'
