# Sourced by the memory benchmarks: sets `preload` to the allocator that
# MALLOC names (jemalloc, mimalloc; "" or glibc: none), for LD_PRELOAD.
# The crawler links jemalloc: glibc's malloc needs a build configured with
# -DCRAWLER_JEMALLOC=OFF (CRAWLER_BIN=that build's crawler).
case "${MALLOC:-}" in
  jemalloc) preload=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ;;
  mimalloc) preload=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 ;;
  "" | glibc) preload="" ;;
  *) echo "MALLOC: jemalloc, mimalloc or glibc" >&2; exit 2 ;;
esac
