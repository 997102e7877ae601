// Helpers shared by the checkpoint tests (checkpoint_test.cc and
// checkpoint_torture_test.cc): the binary, the exact-dedup settings, and
// readers of checkpoints and fetch logs.
#ifndef TESTS_SUPPORT_CHECKPOINT_HELPERS_H_
#define TESTS_SUPPORT_CHECKPOINT_HELPERS_H_

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crawl_output.h"
#include "run_command.h"

namespace crawler::engine::checkpoint_testing {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::Attempted;
using testing::LogLine;
using testing::ReadText;

using testing::kCrawler;
// See testsite_crawl_test.cc: exact truth-set equality needs a tiny FPR bound.
inline const std::string kExactDedup =
    " --set dedup.capacity=500 --set dedup.error_rate=1e-7";

inline json::object Manifest(const std::string& dir) {
  return json::parse(ReadText(dir + "/MANIFEST.json")).as_object();
}

// Fetch-log lines after `bytes` that were page fetches (what a resume from a
// checkpoint with that log length fetches again).
inline uint64_t PageLinesAfter(const std::string& log_path, uint64_t bytes) {
  std::string text = ReadText(log_path);
  if (bytes >= text.size()) return 0;
  std::istringstream in(text.substr(bytes));
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"robots_txt\":true") == std::string::npos &&
        line.find("\"error\":\"robots\"") == std::string::npos &&
        line.find("\"error\":\"max_pages_per_host\"") == std::string::npos) {
      ++n;
    }
  }
  return n;
}

// The manifest of the checkpoint a resume will use (empty: none yet).
inline json::object ResumeManifest(const std::string& out) {
  for (const char* dir : {"/checkpoint", "/checkpoint.prev"}) {
    if (fs::exists(out + dir + "/MANIFEST.json")) return Manifest(out + dir);
  }
  return {};
}

// The fetch-log length recorded by the checkpoint a resume will use.
inline uint64_t CheckpointLogBytes(const std::string& out) {
  json::object m = ResumeManifest(out);
  return m.empty() ? 0 : m.at("fetch_log").as_object().at("bytes").to_number<uint64_t>();
}

// Dedup compactions over the crawl, as that checkpoint recorded them.
inline uint64_t CheckpointCompactions(const std::string& out) {
  json::object m = ResumeManifest(out);
  return m.empty() ? 0
                   : m.at("counters").as_object().at("compactions").to_number<uint64_t>();
}

// What is wrong with checkpoint directory DIR, as far as its manifest tells
// without the crawler's code ("": nothing): the manifest sealed (its last
// member), every file it lists present and long enough.
inline std::string CheckpointProblem(const std::string& dir) {
  const std::string text = ReadText(dir + "/MANIFEST.json");
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object() || !v.as_object().contains("manifest_xxh3"))
    return dir + "/MANIFEST.json: not a sealed manifest";
  for (const auto& [name, entry] : v.at("files").as_object()) {
    const std::string path = dir + "/" + std::string(name);
    const json::object& e = entry.as_object();
    const uint64_t end = e.at("bytes").to_number<uint64_t>() +
                         (e.contains("from") ? e.at("from").to_number<uint64_t>() : 0);
    std::error_code fe;
    if (!fs::exists(path, fe) || fs::file_size(path, fe) < end)
      return path + ": missing or short";
  }
  return "";
}

inline std::set<std::string> Distinct(const std::vector<LogLine>& log, bool* twice) {
  std::multiset<std::string> attempted;
  for (const LogLine& l : log) {
    if (Attempted(l)) attempted.insert(l.url);
  }
  std::set<std::string> distinct(attempted.begin(), attempted.end());
  *twice = attempted.size() != distinct.size();
  return distinct;
}

inline void FlipByte(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  auto size = static_cast<std::streamoff>(f.tellg());
  std::streamoff at = size / 2;
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x20));
}

inline void Truncate(const std::string& path) {
  fs::resize_file(path, fs::file_size(path) / 2);
}

inline void Restore(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

}  // namespace crawler::engine::checkpoint_testing

#endif  // TESTS_SUPPORT_CHECKPOINT_HELPERS_H_
