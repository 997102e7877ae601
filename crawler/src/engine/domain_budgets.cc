// See domain_budgets.h.
#include "engine/domain_budgets.h"

#include <xxhash.h>

#include <algorithm>
#include <iterator>
#include <limits>

#include "base/heap_bytes.h"

namespace crawler::engine {

namespace {
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();
uint64_t Limit(uint64_t v) { return v == 0 ? kNoLimit : v; }
}  // namespace

void DomainBudgets::Link(Domain& to, std::string_view from) {
  if (!Budgeted(to) || o_.domain_budget_per_linker == 0) return;
  // Linkers past those that reach domain_budget_max change nothing: not kept.
  const uint64_t room =
      o_.domain_budget_max > o_.domain_budget
          ? (o_.domain_budget_max - o_.domain_budget + o_.domain_budget_per_linker - 1) /
                o_.domain_budget_per_linker
          : 0;
  if (to.linkers.size() >= room) return;
  const uint64_t h = XXH3_64bits(from.data(), from.size());
  auto it = std::lower_bound(to.linkers.begin(), to.linkers.end(), h);
  if (it == to.linkers.end() || *it != h) to.linkers.insert(it, h);
}

uint64_t DomainBudgets::PageBudget(const Domain& d) const {
  const uint64_t all = Limit(o_.max_pages_per_domain);
  if (!Budgeted(d)) return all;
  const uint64_t star =
      std::min(o_.domain_budget_max,
               o_.domain_budget + o_.domain_budget_per_linker * d.linkers.size());
  return std::min(all, star);
}

uint64_t DomainBudgets::UrlBudget(const Domain& d) const {
  const uint64_t all = Limit(o_.max_urls_per_domain);
  if (!Budgeted(d)) return all;
  return std::min(all, PageBudget(d));
}

std::vector<DomainSnapshot> DomainBudgets::Snapshot() const {
  std::vector<DomainSnapshot> out;
  out.reserve(domains_.size());
  for (const auto& [name, d] : domains_)
    out.push_back({name, d.seeded, d.queued, d.linkers});
  return out;
}

void DomainBudgets::Restore(std::vector<DomainSnapshot> domains) {
  for (DomainSnapshot& s : domains) {
    Domain& d = domains_[s.name];
    d.seeded = d.seeded || s.seeded;
    d.queued = std::max(d.queued, s.queued);
    std::sort(s.linkers.begin(), s.linkers.end());
    std::vector<uint64_t> merged;
    std::set_union(d.linkers.begin(), d.linkers.end(), s.linkers.begin(), s.linkers.end(),
                   std::back_inserter(merged));
    d.linkers = std::move(merged);
  }
}

void DomainBudgets::Count(uint64_t* all, uint64_t* at_budget) const {
  *all = domains_.size();
  *at_budget = 0;
  for (const auto& [name, d] : domains_) *at_budget += d.fetched >= PageBudget(d);
}

uint64_t DomainBudgets::HeapBytes() const {
  uint64_t n = heap_bytes::Nodes(domains_);
  for (const auto& [name, d] : domains_)
    n += heap_bytes::Of(name) + heap_bytes::Buffer(d.linkers);
  return n;
}

void DomainBudgets::ClearFetched() {
  for (auto& [name, d] : domains_) d.fetched = 0;
}

}  // namespace crawler::engine
