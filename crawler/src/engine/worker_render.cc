// Worker: pages rendered in headless Chromium ([browser] render, the
// browser room's pool). A page the crawl fetched with a 200 and HTML goes to
// the pool before it is recorded; it comes back through the result queue
// (busy all along, so the crawl is not over while it renders) with the page
// as rendered, or why not, and is then recorded as any page, with
//   - its links: the static parse's and the rendered DOM's, together;
//   - the browser's responses archived beside it (a request and a response
//     record each), but for the URLs the crawl holds already (the URL-seen
//     filter is asked, in the gate, so a checkpoint's filter and WARC
//     agree: a resource is stored once per crawl, and a link to it later
//     is a duplicate).
// A page that could not be rendered is recorded as fetched, the reason in
// its fetch-log line. A page in the pool at a crash is in the checkpoint
// as in flight (its lease), fetched and rendered again after --resume.
#include <boost/json.hpp>
#include <boost/url.hpp>
#include <cctype>
#include <chrono>
#include <memory>
#include <set>
#include <utility>

#include "browser/pool.h"
#include "engine/worker.h"
#include "output/http_head.h"

namespace crawler::engine {
namespace {

bool IsHtml(const FetchResult& r) {
  return r.content_type == "text/html" || r.content_type == "application/xhtml+xml";
}

// "Name: value" lines of an HTTP head (its status line skipped).
browser::Headers HeadersOf(const std::string& head) {
  browser::Headers out;
  output::ForEachHeader(head, true, [&](std::string_view name, std::string_view value) {
    out.emplace_back(std::string(name), std::string(value));
  });
  return out;
}

// The request as the browser sent it, as an HTTP/1.1 head (DevTools gives
// its headers without Host; the target and Host come from the URL).
// A rendered page's resource names its page and what it is, as Browsertrix
// Crawler does (browsertrix-crawler#451, iipc/warc-specifications#96):
// WARC-Page-ID, the page's response record's UUID; WARC-Resource-Type, the
// browser's type of the request in lower case ("script", "fetch", "image",
// ...); WARC-JSON-Metadata, {"initiator": the URL of the script, stylesheet
// or document that asked}, when the browser said.
std::string ResourceHeaders(const browser::RenderedRequest& q,
                            const std::string& page_record_id) {
  std::string h;
  // "<urn:uuid:UUID>" -> "UUID".
  const size_t colon = page_record_id.rfind(':');
  if (colon != std::string::npos && page_record_id.size() > colon + 2)
    h += "WARC-Page-ID: " +
         page_record_id.substr(colon + 1, page_record_id.size() - colon - 2) + "\r\n";
  std::string type = q.type;
  for (char& ch : type)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!type.empty() && type.find_first_of("\r\n") == std::string::npos)
    h += "WARC-Resource-Type: " + type + "\r\n";
  if (!q.initiator.empty()) {
    // Serialized JSON has no raw CR or LF (they are escaped).
    h += "WARC-JSON-Metadata: " +
         boost::json::serialize(boost::json::object{{"initiator", q.initiator}}) + "\r\n";
  }
  return h;
}

std::string RequestHead(const browser::RenderedRequest& q) {
  const auto u = boost::urls::parse_uri(q.url);
  std::string target = "/", host;
  if (u) {
    target = std::string(u->encoded_path().empty() ? "/" : u->encoded_path());
    if (u->has_query()) target += "?" + std::string(u->encoded_query());
    host = std::string(u->encoded_host_and_port());
  }
  std::string head =
      (q.method.empty() ? "GET" : q.method) + " " + target + " HTTP/1.1\r\n";
  if (!host.empty()) head += "Host: " + host + "\r\n";
  for (const auto& [name, value] : q.request_headers)
    head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

std::string ResponseHead(const browser::RenderedRequest& q) {
  std::string head =
      "HTTP/1.1 " + std::to_string(q.status) + (q.status == 200 ? " OK" : " ");
  head += "\r\n";
  for (const auto& [name, value] : q.response_headers)
    head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

}  // namespace

browser::PoolOptions BrowserPoolOptions(const Config& config, const std::string& out) {
  browser::PoolOptions po;
  po.launch.chromium = config.browser.chromium;
  po.launch.user_data_dir = out + "/browser";
  po.launch.log_path = out + "/browser/chromium.log";
  po.processes = static_cast<int>(config.browser.processes);
  po.restart_pages = static_cast<int>(config.browser.restart_pages);
  return po;
}

void Worker::CompileRenderRules() {
  // Checked when the config was read (config_keys.cc): valid regexes.
  for (const std::string& r : p_.config.browser.include) render_include_.emplace_back(r);
  for (const std::string& r : p_.config.browser.exclude) render_exclude_.emplace_back(r);
}

bool Worker::WantsRender(const Completed& c) const {
  if (p_.browser == nullptr || c.robots || c.render_sent) return false;
  if (c.lease.entry.kind != frontier::UrlEntry::Kind::kPage) return false;
  const FetchResult& r = c.result;
  if (r.status != 200 || r.error != FetchError::kNone || r.truncated || !IsHtml(r))
    return false;
  const std::string& url = c.lease.entry.url;
  auto match = [&](const std::regex& re) { return std::regex_search(url, re); };
  if (!render_include_.empty() &&
      std::none_of(render_include_.begin(), render_include_.end(), match))
    return false;
  return std::none_of(render_exclude_.begin(), render_exclude_.end(), match);
}

bool Worker::AutoRenders(const Completed& c, const parsers::ScriptSignals& s) const {
  switch (render_learning_->For(c.lease.host)) {
    case RenderLearning::Verdict::kAlways:
      return true;
    case RenderLearning::Verdict::kNever:
      return false;
    case RenderLearning::Verdict::kSignals:
      break;
  }
  return SignalsWantBrowser(s);
}

bool Worker::ToBrowser(Completed& c, const Prepared* prepared) {
  if ((render_learning_ == nullptr) != (prepared == nullptr) || !WantsRender(c))
    return false;
  if (prepared != nullptr && !AutoRenders(c, prepared->links.signals)) return false;
  SendToBrowser(std::move(c));
  return true;
}

void Worker::SendToBrowser(Completed c) {
  const BrowserConfig& b = p_.config.browser;
  browser::RenderJob job;
  job.url = c.result.url;
  job.options.idle_ms = static_cast<int>(b.idle_ms);
  job.options.page_timeout_s = b.page_timeout_s;
  job.options.scroll_steps = static_cast<int>(b.scroll_steps);
  job.options.user_agent = p_.config.crawl.user_agent;
  job.options.document = browser::Document{200, HeadersOf(c.result.response_head),
                                           std::string(c.result.body.view())};
  c.render_sent = true;
  auto page = std::make_shared<Completed>(std::move(c));
  p_.state.rendering.fetch_add(1);
  job.done = [page, results = &p_.results, state = &p_.state](
                 Result<browser::RenderResult> r, browser::Outcome outcome) {
    if (outcome == browser::Outcome::kRendered) {
      page->rendered =
          std::make_shared<const browser::RenderResult>(std::move(r).value());
    } else {
      page->render_error = outcome == browser::Outcome::kStopped
                               ? std::string("the browser pool stopped")
                               : r.status().message();
    }
    std::vector<Completed> back;
    back.push_back(std::move(*page));
    results->Push(&back);
    state->rendering.fetch_sub(1);
  };
  p_.browser->Submit(std::move(job));
}

void Worker::PrepareRendered(const Completed& c, Prepared& p) const {
  const browser::RenderResult& rendered = *c.rendered;
  parsers::ExtractOptions eo;
  eo.include_assets = p_.config.crawl.include_assets;
  eo.url = p_.config.url;
  parsers::ExtractResult more =
      parsers::ExtractLinks(rendered.html, c.lease.entry.url, "utf-8", eo);
  std::set<std::string> have;
  for (const parsers::Link& l : p.links.links) have.insert(l.url);
  const size_t static_links = have.size();
  for (parsers::Link& l : more.links) {
    if (have.insert(l.url).second) p.links.links.push_back(std::move(l));
  }
  if (render_learning_ != nullptr)
    render_learning_->Learn(c.lease.host, static_links, have.size() - static_links);
  for (const browser::RenderedRequest& q : rendered.requests) {
    if (!q.captured || q.from_crawl || q.status <= 0) continue;
    auto url = parsers::NormalizeUrl(q.url, p_.config.url);
    if (!url.ok()) continue;  // not http(s), or too long: not archived
    const std::string request = RequestHead(q);
    const std::string head = output::HeadForStoredBody(ResponseHead(q), q.body.size());
    output::Exchange ex{.url = q.url,
                        .ip = "",
                        .date = p.date,
                        .request = request,
                        .response_head = head,
                        .body = q.body,
                        .truncated = q.body_cut ? "length" : "",
                        .revisit = std::nullopt,
                        .payload_digest = {},
                        .more_headers = ResourceHeaders(q, p.warc.response_id)};
    p.resources.push_back({std::move(url).value(), p_.warc.Prepare(ex)});
  }
}

Status Worker::StoreResources(const Gate::Pass&, const Prepared& p, uint32_t* stored) {
  for (const Prepared::Resource& res : p.resources) {
    if (!p_.filter.Insert(res.url)) continue;  // the crawl holds it already
    Status st = p_.warc.Write(res.warc);
    if (!st.ok()) return st;
    ++*stored;
  }
  p_.counters.Add(&CrawlSummary::render_resources, *stored);
  return Status::Ok();
}

}  // namespace crawler::engine
