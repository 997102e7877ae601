// Budgets per registered domain (the site by the public suffix list,
// scope.h's SiteOf), as IRLbot's STAR (Lee et al., 2008) has them: a
// domain a seed is on may use up to max_pages_per_domain; any other starts
// with domain_budget pages and gains domain_budget_per_linker for each
// other registered domain whose pages link to it, up to domain_budget_max.
// A spam farm whose domains link only each other stays small; a site the
// web links to from many places grows. Each domain's URLs queued over the
// crawl are bounded too: by max_urls_per_domain, and for a domain on a
// budget by that budget, where a URL of a new host counts twice (its
// robots.txt fetch and the page): its fetches, robots.txt included, stay
// within the budget, however many hosts a farm makes up.
//
// Plain data: HostTable holds it under its mutex and writes it into
// hosts.bin (host_table.h: 'D' records).
#ifndef CRAWLER_DOMAIN_BUDGETS_H_
#define CRAWLER_DOMAIN_BUDGETS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "crawler/config.h"

namespace crawler::engine {

struct DomainBudgetOptions {
  uint64_t max_pages_per_domain = 0;  // every domain; 0: no limit
  uint64_t max_urls_per_domain = 0;   // every domain; 0: no limit
  // A domain no seed is on: pages with no other domain linking to it, what
  // each linking domain adds, and the most it reaches. domain_budget 0:
  // no such budget (every domain gets max_pages_per_domain).
  uint64_t domain_budget = 100;
  uint64_t domain_budget_per_linker = 100;
  uint64_t domain_budget_max = 10'000;
};

// The [crawl] keys' budgets.
inline DomainBudgetOptions BudgetsOf(const CrawlConfig& c) {
  return {c.max_pages_per_domain, c.max_urls_per_domain, c.domain_budget,
          c.domain_budget_per_linker, c.domain_budget_max};
}

// One domain as a checkpoint stores it (its pages are rebuilt from the
// hosts' counts).
struct DomainSnapshot {
  std::string name;
  bool seeded = false;
  uint64_t queued = 0;
  std::vector<uint64_t> linkers;  // hashes of linking domains' names
};

class DomainBudgets {
 public:
  struct Domain {
    bool seeded = false;            // a seed is on it: no STAR budget
    uint64_t fetched = 0;           // pages started
    uint64_t queued = 0;            // URLs admitted over the crawl
    std::vector<uint64_t> linkers;  // sorted; at most what reaches the max
  };

  explicit DomainBudgets(DomainBudgetOptions o = {}) : o_(o) {}
  const DomainBudgetOptions& options() const { return o_; }
  // True if any budget applies (else callers skip the domain lookups).
  bool enabled() const {
    return o_.max_pages_per_domain != 0 || o_.max_urls_per_domain != 0 ||
           o_.domain_budget != 0;
  }

  Domain& Get(const std::string& name) { return domains_[name]; }
  // A page of domain `from` links to `to` (`from` != `to`'s name).
  void Link(Domain& to, std::string_view from);
  // True if `d` is on a STAR budget (no seed on it, domain_budget set).
  bool Budgeted(const Domain& d) const { return !d.seeded && o_.domain_budget != 0; }
  // The pages `d` may fetch, and the URLs it may queue, over the crawl.
  uint64_t PageBudget(const Domain& d) const;
  uint64_t UrlBudget(const Domain& d) const;

  size_t size() const { return domains_.size(); }
  // Domains, and those whose page budget is spent.
  void Count(uint64_t* all, uint64_t* at_budget) const;
  uint64_t HeapBytes() const;  // base/heap_bytes.h
  std::vector<DomainSnapshot> Snapshot() const;
  void Restore(std::vector<DomainSnapshot> domains);
  // Pages started are rebuilt from the hosts' counts (HostTable::Restore).
  void ClearFetched();

 private:
  DomainBudgetOptions o_;
  std::unordered_map<std::string, Domain> domains_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_DOMAIN_BUDGETS_H_
