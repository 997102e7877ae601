// Heap bytes held by standard containers, counted from their state: what
// each part of the crawl reports as its memory (`crawler stats`, "memory";
// docs/stats.md). The counts follow libstdc++'s layouts (a string's buffer
// past its 15 inline characters, a hash node's next pointer and cached
// hash, a tree node's three links and colour, a deque's 512-byte blocks),
// each allocation rounded up as the allocator rounds it: jemalloc's size
// class (nallocx, when jemalloc is linked: a weak reference), else glibc's
// 16-byte chunks with their 8-byte header.
// tests/bench/memory_bench.cc sets these counts against jemalloc's.
// Pure functions; any thread (the caller holds the container's lock).
#ifndef CRAWLER_BASE_HEAP_BYTES_H_
#define CRAWLER_BASE_HEAP_BYTES_H_

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// jemalloc's size class of an allocation; null when jemalloc is not linked.
extern "C" size_t nallocx(size_t size, int flags) __attribute__((weak));

namespace crawler::heap_bytes {

// What an allocation of `n` bytes takes (0 for none).
inline size_t Alloc(size_t n) {
  if (n == 0) return 0;
  if (nallocx != nullptr) return nallocx(n, 0);
  constexpr size_t kHeader = 8, kChunk = 16, kMinChunk = 32;
  const size_t chunk = (n + kHeader + kChunk - 1) / kChunk * kChunk;
  return chunk < kMinChunk ? kMinChunk : chunk;
}

// A std::string's heap buffer (0 while it fits inline).
inline size_t Of(const std::string& s) {
  constexpr size_t kInline = 15;
  return s.capacity() > kInline ? Alloc(s.capacity() + 1) : 0;
}

// A vector's buffer (not its elements' own heap).
template <class T>
size_t Buffer(const std::vector<T>& v) {
  return Alloc(v.capacity() * sizeof(T));
}

// A deque's blocks (512 bytes, or one element when larger) and their map.
template <class T>
size_t Buffer(const std::deque<T>& d) {
  constexpr size_t kBlock = 512, kMinMap = 8;
  const size_t per_block = sizeof(T) < kBlock ? kBlock / sizeof(T) : 1;
  const size_t blocks = d.size() / per_block + 1;
  const size_t map = blocks + 2 > kMinMap ? blocks + 2 : kMinMap;
  return blocks * Alloc(per_block * sizeof(T)) + Alloc(map * sizeof(void*));
}

// A std::map's nodes (not their values' own heap).
template <class K, class V, class C, class A>
size_t Nodes(const std::map<K, V, C, A>& m) {
  constexpr size_t kLinks = 4 * sizeof(void*);  // colour (padded), parent, left, right
  return m.size() * Alloc(kLinks + sizeof(typename std::map<K, V, C, A>::value_type));
}

// A std::set's nodes (not their values' own heap).
template <class T, class C, class A>
size_t Nodes(const std::set<T, C, A>& s) {
  constexpr size_t kLinks = 4 * sizeof(void*);
  return s.size() * Alloc(kLinks + sizeof(T));
}

// A hash table's bucket array and its nodes of `value` bytes: each node
// holds its next pointer and, for keys that are not integers (libstdc++
// caches a hash that is not trivially cheap), its hash.
template <class Key>
size_t HashNodes(size_t buckets, size_t nodes, size_t value) {
  const size_t hash = std::is_integral_v<Key> ? 0 : sizeof(size_t);
  return (buckets > 1 ? Alloc(buckets * sizeof(void*)) : 0) +
         nodes * Alloc(sizeof(void*) + value + hash);
}

// An unordered_map's, or an unordered_set's (not their values' own heap).
template <class K, class V, class H, class E, class A>
size_t Nodes(const std::unordered_map<K, V, H, E, A>& m) {
  using Value = typename std::unordered_map<K, V, H, E, A>::value_type;
  return HashNodes<K>(m.bucket_count(), m.size(), sizeof(Value));
}
template <class K, class H, class E, class A>
size_t Nodes(const std::unordered_set<K, H, E, A>& s) {
  return HashNodes<K>(s.bucket_count(), s.size(), sizeof(K));
}

}  // namespace crawler::heap_bytes

#endif  // CRAWLER_BASE_HEAP_BYTES_H_
