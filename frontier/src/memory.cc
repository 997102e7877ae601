// Frontier::Memory: the heap bytes the frontier holds, counted from its
// containers (base/heap_bytes.h), for the stats report's "memory".
#include "base/heap_bytes.h"
#include "frontier_impl.h"

namespace crawler::frontier {

namespace {

namespace hb = heap_bytes;

uint64_t EntryHeap(const UrlEntry& e) { return hb::Of(e.url) + hb::Of(e.referrer); }

template <class Container>
uint64_t EntriesHeap(const Container& entries) {
  uint64_t n = 0;
  for (const UrlEntry& e : entries) n += EntryHeap(e);
  return n;
}

}  // namespace

FrontierMemory Frontier::Memory() const {
  const Impl& m = *impl_;
  MutexLock lock(m.mu);
  FrontierMemory r;
  r.hosts = hb::Buffer(m.hosts);
  for (const Impl::Host& h : m.hosts) {
    r.hosts += hb::Of(h.key) + hb::Of(h.spill_path) + hb::Nodes(h.file_depths);
    r.urls += h.ram.HeapBytes() + hb::Buffer(h.write_buf) + EntriesHeap(h.write_buf);
  }
  r.hosts += hb::Nodes(m.host_index) + hb::Nodes(m.schedule) + hb::Nodes(m.lease_ip) +
             hb::Nodes(m.depth_counts) + hb::Buffer(m.drained);
  for (const std::string& path : m.drained) r.hosts += hb::Of(path);
  r.addresses = hb::Buffer(m.ips) + hb::Nodes(m.ip_index) + hb::Buffer(m.free_ips) +
                hb::Buffer(m.idle_ips);
  for (const Impl::Ip& ip : m.ips) {
    r.addresses += hb::Of(ip.address);
    if (ip.parked) r.addresses += hb::Alloc(sizeof(*ip.parked)) + hb::Buffer(*ip.parked);
  }
  r.urls += hb::Nodes(m.leased);
  for (const auto& [id, leased] : m.leased) r.urls += EntryHeap(leased.second);
  return r;
}

}  // namespace crawler::frontier
