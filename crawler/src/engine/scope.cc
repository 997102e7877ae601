// See scope.h.
#include "engine/scope.h"

#include <libpsl.h>

#include <algorithm>
#include <unordered_set>

#include "base/heap_bytes.h"
#include "frontier/frontier.h"

namespace crawler::engine {
namespace {

// "h" of "scheme://h:p" ("[v6]" kept whole).
std::string_view HostName(std::string_view host_key) {
  size_t sep = host_key.find("://");
  std::string_view rest =
      sep == std::string_view::npos ? host_key : host_key.substr(sep + 3);
  if (!rest.empty() && rest[0] == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

bool UnderDomain(std::string_view name, std::string_view domain) {
  return name == domain || (name.size() > domain.size() && name.ends_with(domain) &&
                            name[name.size() - domain.size() - 1] == '.');
}

}  // namespace

Result<Scope> Scope::From(const CrawlConfig& config,
                          const std::vector<std::string>& seeds) {
  std::vector<std::string> hosts = config.scope_hosts;
  if (config.scope_hosts.empty() && config.scope_domains.empty()) {
    // Each seed's host once, in the seeds' order (a set beside: a search
    // of the list per seed was quadratic, minutes at 10^6 seeds).
    std::unordered_set<std::string_view> seen;
    for (const std::string& s : seeds) {
      std::string_view key = frontier::HostKey(s);
      if (seen.insert(key).second) hosts.emplace_back(key);
    }
  }
  return FromHosts(config, std::move(hosts));
}

Result<Scope> Scope::FromHosts(const CrawlConfig& config,
                               std::vector<std::string> hosts) {
  Scope s;
  s.hosts_ = std::move(hosts);
  s.host_set_.insert(s.hosts_.begin(), s.hosts_.end());  // views of hosts_'s strings
  s.domains_ = config.scope_domains;
  s.requisites_ = config.requisites_scope;
  try {
    for (const std::string& re : config.include) s.include_.emplace_back(re);
    for (const std::string& re : config.exclude) s.exclude_.emplace_back(re);
  } catch (const std::regex_error& e) {
    return Status::Error(Status::Code::kInvalidArgument,
                         std::string("crawl.include/exclude: bad regex: ") + e.what());
  }
  return s;
}

std::string SiteOf(std::string_view host_name) {
  const std::string name(host_name);
  const bool ip = name.empty() || name[0] == '[' ||
                  name.find_first_not_of("0123456789.") == std::string::npos;
  if (ip) return name;
  // The list Debian's publicsuffix package keeps current, else the one
  // built into libpsl; read once, then read-only (any thread).
  static const psl_ctx_t* const psl = [] {
    const psl_ctx_t* p = psl_latest(nullptr);
    return p != nullptr ? p : psl_builtin();
  }();
  const char* site = psl != nullptr ? psl_registrable_domain(psl, name.c_str()) : nullptr;
  return site != nullptr ? std::string(site) : name;
}

std::string SiteOfHostKey(std::string_view host_key) {
  return SiteOf(HostName(host_key));
}

bool Scope::AllowsRequisite(std::string_view url, std::string_view from) const {
  if (Allows(url)) return true;
  if (requisites_ == "scope") return false;
  if (requisites_ == "site" && SiteOf(HostName(frontier::HostKey(url))) !=
                                   SiteOf(HostName(frontier::HostKey(from))))
    return false;
  return std::none_of(exclude_.begin(), exclude_.end(), [&](const std::regex& r) {
    return std::regex_search(url.begin(), url.end(), r);
  });
}

uint64_t Scope::HeapBytes() const {
  uint64_t n = heap_bytes::Buffer(hosts_) + heap_bytes::Nodes(host_set_);
  for (const std::string& h : hosts_) n += heap_bytes::Of(h);
  return n;
}

bool Scope::Allows(std::string_view url) const {
  std::string_view key = frontier::HostKey(url);
  std::string_view name = HostName(key);
  bool host_ok = host_set_.count(key) > 0 || host_set_.count(name) > 0 ||
                 std::any_of(domains_.begin(), domains_.end(),
                             [&](const std::string& d) { return UnderDomain(name, d); });
  if (!host_ok) return false;
  auto matches = [&](const std::regex& r) {
    return std::regex_search(url.begin(), url.end(), r);
  };
  if (!include_.empty() && std::none_of(include_.begin(), include_.end(), matches))
    return false;
  return std::none_of(exclude_.begin(), exclude_.end(), matches);
}

}  // namespace crawler::engine
