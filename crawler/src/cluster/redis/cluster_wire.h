// The cluster's wire formats: the stream entry's payload (zlib'd lines
// "url \t depth \t redirects \t referrer"), the outbox file, stream IDs.
// Replies are read through redis.h's ReplyView. The Lua scripts are files
// beside the part that runs each (redis.h, "Scripts").
#ifndef CRAWLER_CLUSTER_WIRE_H_
#define CRAWLER_CLUSTER_WIRE_H_

#include <fmt/core.h>
#include <xxhash.h>
#include <zlib.h>

#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"
#include "frontier/frontier.h"

namespace crawler::cluster::cluster_wire {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;

// OUT/handoff/SEQ/: a handoff's checkpoint, kept for the shards' new owners.
inline constexpr const char* kHandoffDir = "handoff";

inline constexpr const char* kOutboxHeader = "crawler-outbox 1\n";

inline std::string Hex64(uint64_t v) { return fmt::format("{:016x}", v); }

// "a.b = 1" lines of the job's config as one JSON object, and its hash.
// crawl.max_duration_s is each node's own run (a node may --resume with
// another), not the job's.
inline std::string JobConfigJson(const engine::Config& config) {
  json::object o;
  for (const auto& [key, value] :
       ConfigEntries(config, {"crawl", "url", "dedup", "recrawl"}))
    if (key != "crawl.max_duration_s") o[key] = value;
  return json::serialize(o);
}

inline std::string DifferingKeys(const std::string& ours, const std::string& theirs) {
  boost::system::error_code ec;
  json::value a = json::parse(ours, ec), b = json::parse(theirs, ec);
  if (ec || !a.is_object() || !b.is_object()) return "(the job's config is unreadable)";
  std::string out;
  auto add = [&](std::string_view key, const json::value* mine, const json::value* job) {
    out += (out.empty() ? "" : ", ") + std::string(key) +
           " (job: " + (job ? json::serialize(*job) : "unset") +
           ", here: " + (mine ? json::serialize(*mine) : "unset") + ")";
  };
  for (const auto& [k, v] : a.as_object()) {
    const json::value* other = b.as_object().if_contains(k);
    if (other == nullptr || *other != v) add(k, &v, other);
  }
  for (const auto& [k, v] : b.as_object()) {
    if (!a.as_object().contains(k)) add(k, nullptr, &v);
  }
  return out;
}

inline Status Refused(const std::string& job, const std::string& why) {
  return Status::Error(Status::Code::kInvalidArgument,
                       "cluster job '" + job + "': refused: " + why);
}

inline std::string Compress(const std::string& raw) {
  uLongf size = compressBound(raw.size());
  std::string out(size, '\0');
  compress2(reinterpret_cast<Bytef*>(out.data()), &size,
            reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 1);
  out.resize(size);
  return out;
}

inline bool Uncompress(std::string_view z, size_t raw_len, std::string* out) {
  if (raw_len > (64u << 20)) return false;
  out->assign(raw_len, '\0');
  uLongf size = raw_len;
  return uncompress(reinterpret_cast<Bytef*>(out->data()), &size,
                    reinterpret_cast<const Bytef*>(z.data()), z.size()) == Z_OK &&
         size == raw_len;
}

// One URL as a wire line: "url \t depth \t redirects \t referrer [\t s] \n"
// ("s": a sitemap), what ParseLines reads.
inline void AppendLine(const frontier::UrlEntry& e, std::string* lines) {
  *lines += e.url;
  *lines += '\t';
  *lines += std::to_string(e.depth);
  *lines += '\t';
  *lines += std::to_string(e.redirects);
  *lines += '\t';
  *lines += e.referrer;
  if (e.kind == frontier::UrlEntry::Kind::kSitemap) *lines += "\ts";
  *lines += '\n';
}

// "url \t depth \t redirects \t referrer [\t s] \n" lines -> entries ("s": a
// sitemap). False: malformed.
inline bool ParseLines(std::string_view text, std::vector<frontier::UrlEntry>* out) {
  std::vector<frontier::UrlEntry> got;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return false;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[4];
    for (int i = 0; i < 3; ++i) {
      size_t tab = line.find('\t');
      if (tab == std::string_view::npos) return false;
      f[i] = line.substr(0, tab);
      line.remove_prefix(tab + 1);
    }
    f[3] = line;
    // An optional fifth field: "s" for a sitemap (Kind::kSitemap).
    bool sitemap = false;
    if (size_t tab = f[3].find('\t'); tab != std::string_view::npos) {
      sitemap = f[3].substr(tab + 1) == "s";
      if (!sitemap) return false;
      f[3] = f[3].substr(0, tab);
    }
    frontier::UrlEntry e;
    if (sitemap) e.kind = frontier::UrlEntry::Kind::kSitemap;
    e.url = std::string(f[0]);
    auto d = std::from_chars(f[1].data(), f[1].data() + f[1].size(), e.depth);
    auto r = std::from_chars(f[2].data(), f[2].data() + f[2].size(), e.redirects);
    if (e.url.empty() || d.ec != std::errc() || r.ec != std::errc()) return false;
    e.referrer = std::string(f[3]);
    got.push_back(std::move(e));
  }
  for (auto& e : got) out->push_back(std::move(e));
  return true;
}

using StreamId = std::pair<uint64_t, uint64_t>;  // "ms-seq"

inline StreamId ParseStreamId(std::string_view id) {
  StreamId out{0, 0};
  size_t dash = id.find('-');
  std::from_chars(id.data(), id.data() + std::min(dash, id.size()), out.first);
  if (dash != std::string_view::npos)
    std::from_chars(id.data() + dash + 1, id.data() + id.size(), out.second);
  return out;
}

}  // namespace crawler::cluster::cluster_wire

#endif  // CRAWLER_CLUSTER_WIRE_H_
