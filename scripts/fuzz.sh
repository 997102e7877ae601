#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan; -Werror, so this clang
# build also enforces -Wthread-safety on every library) and runs each for
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
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCRAWLER_BUILD_FUZZ=ON -DCRAWLER_BUILD_TESTS=OFF -DCRAWLER_BUILD_BENCH=OFF \
  -DCRAWLER_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DCRAWLER_WERROR=ON
targets=(url html robots sitemap dedup_load frontier_image checkpoint)
cmake --build build-fuzz -j2 --target "${targets[@]/%/_fuzz}"
[ "$seconds" = "--build-only" ] && exit 0
for target in "${targets[@]}"; do
  scratch=$(mktemp -d)
  echo "fuzz: ${target}_fuzz for ${seconds}s"
  (cd build-fuzz && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "./tests/${target}_fuzz" -seed="$seed" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 \
      "$scratch" "../tests/fuzz/corpus/${target}" 2>&1 | tail -n 12)
  rm -rf "$scratch"
done
