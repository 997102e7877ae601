#include "browser/renderer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "browser/capture.h"

namespace crawler::browser {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::object& Obj(const json::object& o, std::string_view key) {
  static const json::object kEmpty;
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? v->get_object() : kEmpty;
}

int Int(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? static_cast<int>(v->to_number<double>()) : 0;
}

// Who asked for a request: the initiator's URL, else the first frame of the
// script stack that made it.
std::string InitiatorOf(const json::object& initiator) {
  std::string url = Str(initiator, "url");
  if (!url.empty()) return url;
  const json::value* frames = Obj(initiator, "stack").if_contains("callFrames");
  if (frames != nullptr && frames->is_array() && !frames->get_array().empty() &&
      frames->get_array()[0].is_object()) {
    return Str(frames->get_array()[0].get_object(), "url");
  }
  return "";
}

// Pending timers: setTimeout wrapped before any script of the page runs,
// each timer of at most 5 s counted until it fires or is cleared.
// A page that shows a spinner for 1.5 s (no request meanwhile) and then
// fetches its content was read as the spinner: idle after 500 ms.
constexpr int kTimerPollMs = 100;
constexpr const char* kTimersScript =
    "(() => { const st = window.setTimeout.bind(window),"
    " ct = window.clearTimeout.bind(window), live = new Set();"
    " window.setTimeout = function (f, ms, ...a) { const d = Number(ms) || 0;"
    " if (typeof f !== 'function' || d > 5000) return st(f, ms, ...a);"
    " const id = st(() => { live.delete(id); f(...a); }, d); live.add(id); return id; };"
    " window.clearTimeout = function (id) { live.delete(id); return ct(id); };"
    " Object.defineProperty(window, '__crawlerTimers', { get: () => live.size }); })()";
constexpr const char* kTimersPending = "window.__crawlerTimers || 0";
// After a scroll, what it set off begins within a frame or two (a scroll
// handler, an IntersectionObserver): at most this long is waited for a
// request to start, then for the network to be idle as after the load.
constexpr int kScrollQuietMs = 200;

// One tab's page: its session's events filed into the requests it made and
// what is in flight, and waits for its network to be idle.
class Page {
 public:
  Page(DevTools& d, std::string session, Clock::time_point deadline, std::string url,
       const RenderOptions& o)
      : d_(d),
        session_(std::move(session)),
        deadline_(deadline),
        last_(Clock::now()),
        url_(std::move(url)),
        o_(o) {}

  // Reads events until no request has been in flight for idle_ms (after the
  // load event, when need_load), or the deadline; quiet counted from the
  // last event or this call, whichever is later, so what the page does
  // after a scroll has idle_ms to begin. True: it became idle.
  Result<bool> WaitIdle(int idle_ms, bool need_load) {
    last_ = std::max(last_, Clock::now());
    for (;;) {
      const auto now = Clock::now();
      if (now >= deadline_) return false;
      const auto quiet = std::chrono::duration_cast<milliseconds>(now - last_).count();
      const bool settled = (loaded_ || !need_load) && inflight_.empty();
      if (settled && quiet >= idle_ms) {
        // A short timer still pending (a loader's spinner) is work to come:
        // asked again kTimerPollMs later.
        auto timers = Evaluate(kTimersPending);
        if (!timers.ok()) return timers.status();
        if (!timers->is_number() || timers->to_number<double>() <= 0) return true;
        last_ = now - milliseconds(std::max(idle_ms - kTimerPollMs, 0));
        continue;
      }
      long wait = settled ? idle_ms - quiet : idle_ms;
      wait = std::min<long>(
          wait, std::chrono::duration_cast<milliseconds>(deadline_ - now).count() + 1);
      auto e = d_.NextEvent(static_cast<int>(std::max<long>(wait, 1)));
      if (!e.ok()) return e.status();
      if (e->has_value() && (*e)->session == session_) On(**e);
    }
  }

  // Navigates to the page's URL; its reply comes once the document's
  // response has (so the pauses are answered meanwhile). The reply, or an
  // error at the deadline.
  Result<json::object> Navigate() {
    auto id = d_.Post("Page.navigate", {{"url", url_}}, session_);
    if (!id.ok()) return id.status();
    for (;;) {
      if (auto reply = d_.Reply(*id, "Page.navigate")) return std::move(*reply);
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) {
        return Status::Error(Status::Code::kOutOfRange,
                             "browser: " + url_ + ": no response before the page's cap");
      }
      auto e = d_.NextEvent(static_cast<int>(std::min<long>(left, 100)));
      if (!e.ok()) return e.status();
      if (e->has_value() && (*e)->session == session_) On(**e);
    }
  }

  // A script's value (returnByValue; a promise awaited). Given at least 2 s
  // even past the deadline: a page at its cap is still read as it stands.
  Result<json::value> Evaluate(const std::string& expression) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now()).count();
    const int timeout = static_cast<int>(std::clamp<long>(left, 2000, 10000));
    auto r = d_.Call(
        "Runtime.evaluate",
        {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}},
        session_, timeout);
    if (!r.ok()) return r.status();
    if (r->contains("exceptionDetails")) {
      return Status::Error(Status::Code::kIoError,
                           "browser: a script of ours failed: " +
                               json::serialize(r->at("exceptionDetails")));
    }
    const json::value* v = Obj(*r, "result").if_contains("value");
    return v != nullptr ? *v : json::value();
  }

  std::vector<RenderedRequest> requests;

 private:
  void On(const Event& e) {
    const json::object& p = e.params;
    last_ = Clock::now();
    if (e.method == "Network.requestWillBeSent") {
      const std::string id = Str(p, "requestId");
      auto known = by_id_.find(id);
      const bool redirect = p.contains("redirectResponse");
      if (known != by_id_.end() && redirect) {
        requests[known->second].status = Int(Obj(p, "redirectResponse"), "status");
      }
      const json::object& req = Obj(p, "request");
      if (known == by_id_.end() || redirect) {
        requests.emplace_back();
        by_id_[id] = requests.size() - 1;
      }
      RenderedRequest& r = requests[by_id_[id]];  // new, or one a pause made first
      r.url = Str(req, "url");
      r.method = Str(req, "method");
      r.type = Str(p, "type");
      r.initiator = InitiatorOf(Obj(p, "initiator"));
      inflight_.insert(id);
    } else if (e.method == "Network.responseReceived") {
      if (auto it = by_id_.find(Str(p, "requestId")); it != by_id_.end()) {
        requests[it->second].status = Int(Obj(p, "response"), "status");
      }
    } else if (e.method == "Network.loadingFinished") {
      inflight_.erase(Str(p, "requestId"));
    } else if (e.method == "Network.loadingFailed") {
      const std::string id = Str(p, "requestId");
      if (auto it = by_id_.find(id); it != by_id_.end())
        requests[it->second].failed = true;
      inflight_.erase(id);
    } else if (e.method == "Fetch.requestPaused") {
      Paused(p);
    } else if (e.method == "Page.loadEventFired") {
      loaded_ = true;
    } else if (e.method == "Page.javascriptDialogOpening") {
      // alert() and confirm() would stop the page: answered at once.
      (void)d_.Call("Page.handleJavaScriptDialog", {{"accept", true}}, session_, 2000);
    }
  }

  // A request paused by the Fetch domain (PausePatterns). At the request (a
  // document): the page's own URL is answered from the crawl's fetch, any
  // other goes on. At the response: its headers and body are read, then it
  // goes on to the page.
  void Paused(const json::object& p) {
    const std::string fetch_id = Str(p, "requestId");
    const json::object& req = Obj(p, "request");
    RenderedRequest& r = Entry(Str(p, "networkId"), req, Str(p, "resourceType"));
    r.request_headers = HeadersOfObject(Obj(req, "headers"));
    const bool response =
        p.contains("responseStatusCode") || p.contains("responseErrorReason");
    if (!response && o_.document && !answered_ && r.url == url_) {
      answered_ = true;
      r.from_crawl = true;
      r.status = o_.document->status;
      (void)d_.Call("Fetch.fulfillRequest", FulfillParams(fetch_id, *o_.document),
                    session_, 10000);
      return;
    }
    if (response && p.contains("responseStatusCode")) {
      r.status = Int(p, "responseStatusCode");
      r.response_headers = HeadersOfEntries(
          p.contains("responseHeaders") ? p.at("responseHeaders") : json::value());
      r.captured = true;
      if (!(r.status >= 300 && r.status < 400) && r.status != 204) ReadBody(fetch_id, r);
    }
    (void)d_.Call("Fetch.continueRequest", {{"requestId", fetch_id}}, session_, 10000);
  }

  void ReadBody(const std::string& fetch_id, RenderedRequest& r) {
    auto b = d_.Call("Fetch.getResponseBody", {{"requestId", fetch_id}}, session_, 10000);
    if (!b.ok()) return;  // no body (e.g. a HEAD): left empty
    const std::string text = Str(*b, "body");
    const json::value* encoded = b->if_contains("base64Encoded");
    std::optional<std::string> bytes =
        encoded && encoded->is_bool() && encoded->get_bool() ? FromBase64(text) : text;
    if (!bytes) return;
    if (bytes->size() > o_.max_body_bytes) {
      r.body_cut = true;
    } else {
      r.body = std::move(*bytes);
    }
  }

  // The entry of Network request id: the one its events made, or a new one
  // when the pause comes first (its events then fill it in).
  RenderedRequest& Entry(const std::string& id, const json::object& req,
                         const std::string& type) {
    auto it = by_id_.find(id);
    if (it == by_id_.end() || id.empty()) {
      requests.emplace_back();
      requests.back().url = Str(req, "url");
      requests.back().method = Str(req, "method");
      requests.back().type = type;
      if (id.empty()) return requests.back();
      it = by_id_.emplace(id, requests.size() - 1).first;
    }
    return requests[it->second];
  }

  DevTools& d_;
  const std::string session_;
  const Clock::time_point deadline_;
  Clock::time_point last_;  // the last event of this page, or the last wait's start
  bool loaded_ = false;
  std::map<std::string, size_t> by_id_;  // requestId -> its latest entry in requests
  std::set<std::string> inflight_;
  const std::string url_;  // the page's own
  const RenderOptions& o_;
  bool answered_ = false;  // the page's own document given from the crawl
};

constexpr const char* kScroll =
    "(() => { const s = document.scrollingElement || document.body;"
    " if (!s) return false; const before = s.scrollTop;"
    " window.scrollBy(0, window.innerHeight); return s.scrollTop > before; })()";
constexpr const char* kLinks =
    "Array.from(document.querySelectorAll('a[href], area[href]'), e => e.href)"
    ".filter(h => typeof h === 'string' && h.length > 0)";
constexpr const char* kHtml =
    "document.documentElement ? document.documentElement.outerHTML : ''";

// Behaviors, then the page read as it stands: links, DOM, URL.
Status RunAndRead(Page& page, const RenderOptions& o, Clock::time_point deadline,
                  RenderResult& out) {
  while (out.scrolls < o.scroll_steps && Clock::now() < deadline) {
    auto moved = page.Evaluate(kScroll);
    if (!moved.ok()) return moved.status();
    if (!moved->is_bool() || !moved->get_bool()) break;  // at the end
    ++out.scrolls;
    auto idle = page.WaitIdle(std::min(o.idle_ms, kScrollQuietMs), false);
    if (!idle.ok()) return idle.status();
    out.idle = out.idle && *idle;
  }
  auto links = page.Evaluate(kLinks);
  if (!links.ok()) return links.status();
  if (links->is_array()) {
    for (const json::value& l : links->get_array()) {
      if (l.is_string()) out.links.emplace_back(l.get_string());
    }
  }
  auto html = page.Evaluate(kHtml);
  if (!html.ok()) return html.status();
  if (html->is_string()) out.html = std::string(html->get_string());
  auto href = page.Evaluate("location.href");
  if (!href.ok()) return href.status();
  if (href->is_string()) out.url = std::string(href->get_string());
  return Status();
}

}  // namespace

Result<std::unique_ptr<Renderer>> Renderer::Start(const LaunchOptions& options) {
  auto d = DevTools::Launch(options);
  if (!d.ok()) return d.status();
  return std::unique_ptr<Renderer>(new Renderer(std::move(d).value()));
}

Result<RenderResult> Renderer::Render(const std::string& url, const RenderOptions& o) {
  const auto start = Clock::now();
  const auto deadline = start + milliseconds(static_cast<long>(o.page_timeout_s * 1000));
  DevTools& d = *devtools_;
  auto target = d.Call("Target.createTarget", {{"url", "about:blank"}}, "", 10000);
  if (!target.ok()) return target.status();
  const std::string target_id = Str(*target, "targetId");
  RenderResult out;
  Status st = [&]() -> Status {
    auto attached = d.Call("Target.attachToTarget",
                           {{"targetId", target_id}, {"flatten", true}}, "", 10000);
    if (!attached.ok()) return attached.status();
    const std::string session = Str(*attached, "sessionId");
    for (const char* m : {"Network.enable", "Page.enable"}) {
      if (auto r = d.Call(m, {}, session, 10000); !r.ok()) return r.status();
    }
    if (auto r = d.Call("Page.addScriptToEvaluateOnNewDocument",
                        {{"source", kTimersScript}}, session, 10000);
        !r.ok()) {
      return r.status();
    }
    if (auto r = d.Call("Fetch.enable", {{"patterns", PausePatterns()}}, session, 10000);
        !r.ok()) {
      return r.status();
    }
    if (!o.user_agent.empty()) {
      auto r = d.Call("Network.setUserAgentOverride", {{"userAgent", o.user_agent}},
                      session, 10000);
      if (!r.ok()) return r.status();
    }
    Page page(d, session, deadline, url, o);
    auto nav = page.Navigate();
    if (!nav.ok()) return nav.status();
    if (std::string error = Str(*nav, "errorText"); !error.empty()) {
      return Status::Error(Status::Code::kIoError, "browser: " + url + ": " + error);
    }
    auto idle = page.WaitIdle(o.idle_ms, true);
    if (!idle.ok()) return idle.status();
    out.idle = *idle;
    Status read = RunAndRead(page, o, deadline, out);
    out.requests = std::move(page.requests);
    return read;
  }();
  if (d.alive()) (void)d.Call("Target.closeTarget", {{"targetId", target_id}}, "", 5000);
  if (!st.ok()) return st;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace crawler::browser
