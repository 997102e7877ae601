// Which URLs a crawl may fetch: its hosts (crawl.scope_hosts as host keys or
// bare names; when both scope lists are empty, the seeds' host keys), any
// host under crawl.scope_domains, then the include / exclude regexes (an
// include list, if given, must match; no exclude may). Seeds, links and
// redirect targets all pass the same check.
//
// Immutable after construction: any thread may call Allows.
#ifndef CRAWLER_SCOPE_H_
#define CRAWLER_SCOPE_H_

#include <regex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"

namespace crawler::engine {

class Scope {
 public:
  // A new crawl. Errors: a regex that does not compile (kInvalidArgument).
  static Result<Scope> From(const CrawlConfig& config,
                            const std::vector<std::string>& seeds);
  // A resumed crawl: the host list its manifest recorded.
  static Result<Scope> FromHosts(const CrawlConfig& config,
                                 std::vector<std::string> hosts);

  // True iff `url` (normalized) is in scope.
  bool Allows(std::string_view url) const;
  // A page requisite (an image, stylesheet, font... that `from` loads:
  // parsers::IsRequisite) is fetched if it is in scope, or, by
  // crawl.requisites_scope: "site": its host is of the same site as
  // `from`'s (the registrable domain by the public suffix list, libpsl:
  // static.example.org for www.example.org, not example.net; an IP address
  // is a site of its own); "any": any host (a CDN); "scope": no more.
  // Outside scope, the exclude regexes still apply, the include ones do not
  // (they choose pages).
  bool AllowsRequisite(std::string_view url, std::string_view from) const;
  // The host list (for the checkpoint manifest).
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Heap bytes of the host list and its index (base/heap_bytes.h).
  uint64_t HeapBytes() const;

  // Moves only: the index holds views of the list's strings (a move keeps
  // them where they are; a copy would not).
  Scope(Scope&&) = default;
  Scope& operator=(Scope&&) = default;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Scope() = default;
  std::vector<std::string> hosts_;
  std::unordered_set<std::string_view> host_set_;
  std::vector<std::string> domains_;
  std::vector<std::regex> include_, exclude_;
  std::string requisites_ = "site";
};

// The site (registrable domain) of a host name: "example.org" for
// "static.example.org", "example.co.uk" for "www.example.co.uk"; the name
// itself for an IP address or a public suffix. Exposed for tests.
std::string SiteOf(std::string_view host_name);
// The same for a host key ("http://static.example.org:8080": "example.org").
std::string SiteOfHostKey(std::string_view host_key);

}  // namespace crawler::engine

#endif  // CRAWLER_SCOPE_H_
