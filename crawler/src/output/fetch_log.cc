// See fetch_log.h.
#include "output/fetch_log.h"

#include <boost/json.hpp>

namespace crawler::output {

namespace json = boost::json;

Result<std::unique_ptr<FetchLog>> FetchLog::Open(const std::string& path) {
  auto file = AppendLog::Open(path);
  if (!file.ok()) return file.status();
  return std::unique_ptr<FetchLog>(new FetchLog(std::move(file).value()));
}

std::string FetchLog::Line(const FetchLogEntry& e) {
  json::object o;
  o["url"] = e.url;
  o["status"] = e.status;
  if (const FetchLogResponse* r = e.response) {
    o["content_type"] = r->content_type;
    o["bytes"] = r->bytes;
    o["fetch_ms"] = static_cast<int64_t>(r->seconds * 1000);
    if (r->truncated) o["truncated"] = true;
    if (!r->location.empty()) o["location"] = r->location;
    if (!r->ip.empty()) o["ip"] = r->ip;
  }
  o["depth"] = e.depth;
  o["referrer"] = e.referrer;
  if (!e.error.empty()) o["error"] = e.error;
  if (e.robots_txt) o["robots_txt"] = true;
  if (e.response != nullptr) {  // a fetch (not a skip): a page or robots.txt
    o["attempt"] = e.attempt;
    o["final"] = e.final;
  }
  if (!e.render.empty()) {
    o["render"] = e.render;
    o["resources"] = e.resources;
  }
  return json::serialize(o);
}

Status FetchLog::Append(const FetchLogEntry& e) {
  std::string line = Line(e);
  line += '\n';
  return file_->Append(line);
}

}  // namespace crawler::output
