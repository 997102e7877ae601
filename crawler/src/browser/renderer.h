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
#include <string>
#include <vector>

#include "base/status.h"
#include "browser/devtools.h"

namespace crawler::browser {

struct RenderOptions {
  int idle_ms = 500;           // network idle: no request in flight for this long
  double page_timeout_s = 30;  // the cap on one page, behaviors included
  int scroll_steps = 20;       // behaviors: at most this many scrolls of a window
  std::string user_agent;      // empty: Chromium's own
};

// A request the page made, as the Network domain reported it.
struct RenderedRequest {
  std::string url;
  std::string method;
  std::string type;       // Document, Script, XHR, Fetch, Image, ...
  std::string initiator;  // the URL of the script or document that asked, if known
  int status = 0;         // 0: no response (failed, or still pending at the end)
  bool failed = false;
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
  // it) or the browser died; the Renderer is then not alive().
  Result<RenderResult> Render(const std::string& url, const RenderOptions& options);

  bool alive() const { return devtools_->alive(); }
  pid_t pid() const { return devtools_->pid(); }

 private:
  explicit Renderer(std::unique_ptr<DevTools> d) : devtools_(std::move(d)) {}
  std::unique_ptr<DevTools> devtools_;
};

}  // namespace crawler::browser

#endif  // CRAWLER_BROWSER_RENDERER_H_
