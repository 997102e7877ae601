// Which pages [browser] render = "auto" sends to the browser
// (docs/rendering.md): a page whose static parse says a browser would find
// more, unless rendering its host's pages has given nothing; every HTML
// page of a host whose rendered pages gave much more. Any thread.
#ifndef CRAWLER_ENGINE_RENDER_CHOICE_H_
#define CRAWLER_ENGINE_RENDER_CHOICE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/mutex.h"
#include "parsers/links.h"

namespace crawler::engine {

// The static parse's signals: scripts run there, and the page is an empty
// application root, asks for JavaScript in a <noscript>, has media a
// script loads (data-src), or has almost no text of its own (under
// kFewChars non-space characters). On crawler-testsite --js these pick the
// six pages that need a browser and none of the 31 static ones; a page
// with no script is never rendered.
inline constexpr uint64_t kFewChars = 200;
inline bool SignalsWantBrowser(const parsers::ScriptSignals& s) {
  return s.scripts > 0 &&
         (s.app_root || s.noscript_js || s.lazy_media > 0 || s.text_chars < kFewChars);
}

class RenderLearning {
 public:
  enum class Verdict : uint8_t {
    kSignals,  // as the page's signals say
    kAlways,   // a rendered page of the host gave much more: all rendered
    kNever,    // kDullPages rendered pages of the host gave nothing more
  };
  // After this many rendered pages without one new link, a host's pages are
  // no longer rendered.
  static constexpr uint32_t kDullPages = 4;
  // A rendered page with at least this many links its static parse did not
  // have (and at least as many as it had) gave "much more".
  static constexpr size_t kMuchMore = 5;

  Verdict For(std::string_view host) const {
    MutexLock lock(mu_);
    auto it = hosts_.find(std::string(host));
    return it == hosts_.end() ? Verdict::kSignals : it->second.verdict;
  }

  // A page of `host` rendered by "auto": `static_links` from its static
  // parse, `new_links` more from its rendered DOM. Resources are not
  // weighed: a script's own requests are no sign that a page needs one.
  void Learn(std::string_view host, size_t static_links, size_t new_links) {
    MutexLock lock(mu_);
    Host& h = hosts_[std::string(host)];
    if (h.verdict != Verdict::kSignals) return;
    if (new_links >= kMuchMore && new_links >= static_links) {
      h.verdict = Verdict::kAlways;
    } else if (new_links > 0) {
      h.dull = 0;
    } else if (++h.dull >= kDullPages) {
      h.verdict = Verdict::kNever;
    }
  }

 private:
  struct Host {
    uint32_t dull = 0;  // rendered pages in a row that gave no new link
    Verdict verdict = Verdict::kSignals;
  };
  mutable Mutex mu_;
  // Hosts with a page rendered by "auto" (a few bytes each beside the name).
  std::unordered_map<std::string, Host> hosts_ GUARDED_BY(mu_);
};

}  // namespace crawler::engine

#endif  // CRAWLER_ENGINE_RENDER_CHOICE_H_
