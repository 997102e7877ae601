// A page rendered in headless Chromium (browser/devtools.h): loaded, left to
// run until the network is idle, scrolled to its end in steps (each step
// waiting for the network again, so lazy content arrives), then its links
// read from the DOM as it stands. Every request the page made is listed
// with its answer and its initiator.
//
// One Renderer drives one Chromium, one page at a time, from one thread;
// each page gets a tab of its own, closed after it. A page that never
// becomes idle (a poll every 100 ms) ends at its cap and is read as it
// stands (RenderResult::idle false).
#ifndef CRAWLER_BROWSER_RENDERER_H_
#define CRAWLER_BROWSER_RENDERER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "browser/devtools.h"

namespace crawler::browser {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The page's own response as the crawl fetched it: the browser is answered
// with it (the Fetch domain's fulfillRequest) instead of asking the server
// a second time.
struct Document {
  int status = 200;
  Headers headers;   // Content-Encoding, -Length, Transfer-Encoding dropped
  std::string body;  // decoded
};

struct RenderOptions {
  int idle_ms = 500;                  // network idle: no request in flight for this long
  double page_timeout_s = 30;         // the cap on one page, behaviors included
  int scroll_steps = 20;              // behaviors: at most this many scrolls of a window
  std::string user_agent;             // empty: Chromium's own
  std::optional<Document> document;   // the page's own URL answered from this
  size_t max_body_bytes = 16u << 20;  // a captured body past this is not kept
};

// A request the page made, as the Network domain reported it, and its
// response as the browser received it (the Fetch domain, paused at the
// response: headers and body read, then let go on).
struct RenderedRequest {
  std::string url;
  std::string method;
  std::string type;       // Document, Script, XHR, Fetch, Image, ...
  std::string initiator;  // the URL of the script or document that asked, if known
  int status = 0;         // 0: no response (failed, or still pending at the end)
  bool failed = false;
  Headers request_headers;   // as sent
  Headers response_headers;  // as received
  std::string body;          // as received (decoded by the browser)
  bool captured = false;     // its response was paused and read
  bool body_cut = false;     // its body was past max_body_bytes: not kept
  bool from_crawl = false;   // the page's own document, from RenderOptions::document
};

struct RenderResult {
  std::string url;  // the document's URL after redirects and script navigation
  std::vector<std::string> links;  // a[href] and area[href], absolute, after behaviors
  std::vector<RenderedRequest> requests;
  std::string html;   // the DOM serialized after behaviors
  bool idle = false;  // the network became idle before the cap
  int scrolls = 0;    // scroll steps run
  double seconds = 0;
};

class Renderer {
 public:
  static Result<std::unique_ptr<Renderer>> Start(const LaunchOptions& options);

  // Renders url. An error when it could not be loaded (net::ERR_..., naming
  // it), when it hung (code kOutOfRange: no response, or a script of ours
  // unanswered, past its cap) or the browser died (then not alive()).
  Result<RenderResult> Render(const std::string& url, const RenderOptions& options);

  bool alive() const { return devtools_->alive(); }
  pid_t pid() const { return devtools_->pid(); }

 private:
  explicit Renderer(std::unique_ptr<DevTools> d) : devtools_(std::move(d)) {}
  std::unique_ptr<DevTools> devtools_;
};

}  // namespace crawler::browser

#endif  // CRAWLER_BROWSER_RENDERER_H_
