// Admission (see worker.h): the budgets per registered domain
// (domain_budgets.h) and the trap guards on a URL's shape (url_guards.h),
// then the dedup filter and the frontier.
#include <spdlog/spdlog.h>

#include "engine/scope.h"
#include "engine/worker.h"

namespace crawler::engine {

void Worker::Guarded(const std::string& url, const char* reason) {
  p_.counters.Guarded(reason);
  const std::string host(frontier::HostKey(url));
  if (p_.counters.FirstSkip(host, reason)) {
    spdlog::info(
        "{}: a URL skipped by the {} guard: {} (later ones are counted, not logged)",
        host, reason, url);
  }
}

std::vector<std::string> Worker::ApplyBudgets(const Gate::Pass& pass,
                                              std::vector<frontier::UrlEntry>* entries) {
  // Revisits ([recrawl]) were counted when first admitted: not again.
  std::vector<frontier::UrlEntry> counted, revisits;
  for (frontier::UrlEntry& e : *entries)
    (e.revisit ? revisits : counted).push_back(std::move(e));
  std::vector<std::string> domains, from;
  domains.reserve(counted.size());
  from.reserve(counted.size());
  std::string last_referrer, last_from;  // a page's links share their referrer
  for (const frontier::UrlEntry& e : counted) {
    domains.push_back(SiteOfHostKey(frontier::HostKey(e.url)));
    if (!e.referrer.empty() && e.referrer != last_referrer) {
      last_referrer = e.referrer;
      last_from = SiteOfHostKey(frontier::HostKey(e.referrer));
    }
    from.push_back(e.referrer.empty() ? std::string() : last_from);
  }
  const std::vector<const char*> refused =
      p_.hosts.ReserveUrls(pass, counted, domains, from);
  entries->clear();
  std::vector<std::string> kept;
  for (size_t i = 0; i < counted.size(); ++i) {
    if (refused[i] != nullptr) {
      Guarded(counted[i].url, refused[i]);
      continue;
    }
    entries->push_back(std::move(counted[i]));
    kept.push_back(std::move(domains[i]));
  }
  for (frontier::UrlEntry& e : revisits) {
    entries->push_back(std::move(e));
    kept.emplace_back();  // not counted: nothing to give back
  }
  return kept;
}

Status Worker::Admit(const Gate::Pass& pass, std::vector<frontier::UrlEntry> entries) {
  if (entries.empty()) return Status::Ok();
  // Each entry's domain, while its URL budget counts it ("": not counted).
  std::vector<std::string> domains;
  if (p_.hosts.budgets_enabled()) {
    domains = ApplyBudgets(pass, &entries);
    if (entries.empty()) return Status::Ok();
  }
  // A cluster node with shared_dir records what it admits, by shard (seen_log.h).
  std::vector<output::SeenRecord> seen;
  std::vector<size_t> inserted;
  if (p_.seen != nullptr) {
    for (const frontier::UrlEntry& e : entries)
      seen.push_back(
          {p_.placement->ShardOf(frontier::HostKey(e.url)), dedup::HashKey(e.url)});
  }
  const bool want_inserted = p_.seen != nullptr || !domains.empty();
  auto admitted = p_.frontier.Admit(std::move(entries), p_.filter,
                                    want_inserted ? &inserted : nullptr);
  if (!admitted.ok()) return admitted.status();
  if (!domains.empty()) {
    // Duplicates (and those a full filter refused) are not queued.
    std::vector<bool> queued(domains.size(), false);
    for (size_t i : inserted) queued[i] = true;
    std::vector<std::string> back;
    for (size_t i = 0; i < domains.size(); ++i)
      if (!queued[i] && !domains[i].empty()) back.push_back(std::move(domains[i]));
    if (!back.empty()) p_.hosts.ReturnUrls(pass, back);
  }
  if (p_.seen != nullptr && !inserted.empty()) {
    std::vector<output::SeenRecord> keep;
    keep.reserve(inserted.size());
    for (size_t i : inserted) keep.push_back(seen[i]);
    Status st = p_.seen->Append(keep);
    if (!st.ok()) return st;
  }
  p_.counters.Add(&CrawlSummary::duplicates, admitted->duplicates);
  p_.counters.Add(&CrawlSummary::filter_full, admitted->refused_full);
  for (const std::string& host : admitted->new_hosts)
    StartRobots(pass, host, host + "/robots.txt", 0);
  return Status::Ok();
}

}  // namespace crawler::engine
