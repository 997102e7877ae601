// Reading a crawl's output in tests: a temp directory per test, the fetch log,
// and the response records an independent reader (warcio) finds in the WARC.
#ifndef TESTS_SUPPORT_CRAWL_OUTPUT_H_
#define TESTS_SUPPORT_CRAWL_OUTPUT_H_

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_command.h"
#include "temp_dirs.h"

namespace crawler::testing {

// A whole file ("" if it cannot be read).
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

#ifdef CRAWLER_BINARY
// The crawler binary under test (the build defines its path).
inline const std::string kCrawler = CRAWLER_BINARY;
#endif

// OUT/stats.json, parsed (throws, failing the test, if it is not an object).
inline boost::json::object ReadStats(const std::string& out) {
  return boost::json::parse(ReadText(out + "/stats.json")).as_object();
}

// TMP/crawler-NAME-PID, emptied; removed when the test case passes
// (temp_dirs.h).
inline std::string TempDir(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("crawler-" + name + "-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TempDirsMade().insert(dir);
  return dir;
}

struct LogLine {
  std::string url, error, location;
  int64_t status = 0;
  bool robots_txt = false, truncated = false;
  int64_t attempt = 1;
  bool final = true;  // false: a transient failure fetched again later
};

// How a fetch log is read. kLive: a crawler may be writing it, so text after
// the last newline is a line not yet whole and is left for the next read (a
// write(2) that spans a page reaches a reader in steps, and a resume cuts a
// line a kill -9 left half written only once it has started). kFinished:
// every line must parse; one that does not throws, naming the file and line.
enum class LogRead { kFinished, kLive };

inline std::vector<LogLine> ReadFetchLog(const std::string& path,
                                         LogRead mode = LogRead::kFinished) {
  std::string text = ReadText(path);
  if (mode == LogRead::kLive) text.resize(text.rfind('\n') + 1);  // npos + 1 == 0
  std::vector<LogLine> out;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    boost::json::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    if (ec || !v.is_object())
      throw std::runtime_error(path + " line " + std::to_string(number) +
                               " is not a JSON object: " + line);
    const boost::json::object& o = v.as_object();
    LogLine l;
    l.url = o.at("url").as_string().c_str();
    l.status = o.at("status").as_int64();
    if (o.contains("error")) l.error = o.at("error").as_string().c_str();
    if (o.contains("location")) l.location = o.at("location").as_string().c_str();
    l.robots_txt = o.contains("robots_txt");
    l.truncated = o.contains("truncated");
    if (o.contains("attempt")) l.attempt = o.at("attempt").as_int64();
    if (o.contains("final")) l.final = o.at("final").as_bool();
    out.push_back(l);
  }
  return out;
}

// URLs the crawl tried to fetch (not the robots / trap-guard skips).
// A URL retried after transient failures counts once: its final line.
inline bool Attempted(const LogLine& l) {
  return l.final && l.error != "robots" && l.error != "max_pages_per_host";
}

// The URLs the fetch log shows attempted, each as often as it was: the truth
// set exactly once means set(result) == truth and size() == truth.size().
// kLive: of a crawler still writing it (a line not yet whole is left out).
inline std::multiset<std::string> AttemptedUrls(const std::string& fetch_log,
                                                LogRead mode = LogRead::kFinished) {
  std::multiset<std::string> out;
  for (const LogLine& l : ReadFetchLog(fetch_log, mode)) {
    if (Attempted(l)) out.insert(l.url);
  }
  return out;
}

inline std::string Path(const std::string& url) {
  size_t at = url.find('/', url.find("://") + 3);
  return at == std::string::npos ? "/" : url.substr(at);
}

// Target URIs of the response records in OUT/warc/*.warc.gz, read by warcio
// (with `revisits`, of the revisit records too: every response archived).
inline std::multiset<std::string> WarcResponses(const std::string& out,
                                                bool revisits = false);

// URLs whose WARC response (or revisit) records are not as many as their
// fetch-log lines with a response (each attempt of a URL fetched again is
// archived).
inline std::vector<std::string> WarcNotAsLogged(const std::string& out) {
  std::map<std::string, size_t> logged;
  for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
    if (l.status != 0) ++logged[l.url];
  std::multiset<std::string> in_warc = WarcResponses(out, /*revisits=*/true);
  std::vector<std::string> wrong;
  for (const auto& [url, n] : logged)
    if (in_warc.count(url) != n) wrong.push_back(url);
  for (const std::string& url : in_warc)
    if (logged.count(url) == 0) wrong.push_back(url);
  return wrong;
}

inline std::multiset<std::string> WarcResponses(const std::string& out, bool revisits) {
  std::string index = out + "/warc-index.jsonl";
  CommandResult idx = RunCommand("warcio index " + out + "/warc/*.warc.gz > " + index);
  if (idx.exit_code != 0) throw std::runtime_error("warcio index failed: " + idx.output);
  std::multiset<std::string> in_warc;
  std::ifstream in(index);
  for (std::string line; std::getline(in, line);) {
    boost::json::object o = boost::json::parse(line).as_object();
    const auto& type = o.at("warc-type").as_string();
    if (type == "response" || (revisits && type == "revisit"))
      in_warc.insert(o.at("warc-target-uri").as_string().c_str());
  }
  return in_warc;
}

// One record of OUT/warc/*.warc.gz as warcio indexes it (absent fields "").
struct WarcRecord {
  std::string type, uri, id, date, digest, profile, refers_to, refers_to_uri,
      refers_to_date, status, etag, truncated;
};

inline std::vector<WarcRecord> WarcRecords(const std::string& out) {
  CommandResult idx = RunCommand(
      "warcio index " + out +
      "/warc/*.warc.gz -f warc-type,warc-target-uri,warc-record-id,warc-date,"
      "warc-payload-digest,warc-profile,warc-refers-to,warc-refers-to-target-uri,"
      "warc-refers-to-date,http:status,http:etag,warc-truncated");
  if (idx.exit_code != 0) throw std::runtime_error("warcio index failed: " + idx.output);
  std::vector<WarcRecord> records;
  std::istringstream in(idx.output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const boost::json::object o = boost::json::parse(line).as_object();
    auto field = [&](const char* name) -> std::string {
      const boost::json::value* v = o.if_contains(name);
      if (v == nullptr) return "";
      return v->is_string() ? std::string(v->as_string()) : boost::json::serialize(*v);
    };
    records.push_back({field("warc-type"), field("warc-target-uri"),
                       field("warc-record-id"), field("warc-date"),
                       field("warc-payload-digest"), field("warc-profile"),
                       field("warc-refers-to"), field("warc-refers-to-target-uri"),
                       field("warc-refers-to-date"), field("http:status"),
                       field("http:etag"), field("warc-truncated")});
  }
  return records;
}

// What is wrong with the revisit records among `records` ("" for nothing):
// each must carry a WARC/1.1 revisit profile, and refer (WARC-Refers-To) to
// a response record of the same files, of the same URI (or, `across_urls`
// (dedup.payload), of any URI for an identical-payload-digest one), whose
// payload digest and date are the revisit's WARC-Payload-Digest and
// WARC-Refers-To-Date and whose URI is its WARC-Refers-To-Target-URI.
inline std::string RevisitProblem(const std::vector<WarcRecord>& records,
                                  bool across_urls = false) {
  std::map<std::string, const WarcRecord*> responses;
  for (const WarcRecord& r : records)
    if (r.type == "response") responses[r.id] = &r;
  for (const WarcRecord& r : records) {
    if (r.type != "revisit") continue;
    const std::string which = r.uri + " (" + r.id + "): ";
    if (r.profile != "http://netpreserve.org/warc/1.1/revisit/server-not-modified" &&
        r.profile != "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
      return which + "profile " + r.profile;
    auto it = responses.find(r.refers_to);
    if (it == responses.end())
      return which + "refers to " + r.refers_to + ", not a response record here";
    const WarcRecord& to = *it->second;
    const bool other_uri_ok =
        across_urls &&
        r.profile == "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
    if ((to.uri != r.uri && !other_uri_ok) || r.refers_to_uri != to.uri)
      return which + "refers to a capture of " + to.uri + " as " + r.refers_to_uri;
    if (r.digest.empty() || r.digest != to.digest)
      return which + "payload digest " + r.digest + ", the capture's " + to.digest;
    if (r.refers_to_date.substr(0, 19) != to.date.substr(0, 19))
      return which + "refers-to-date " + r.refers_to_date + ", the capture's " + to.date;
  }
  return "";
}

// Each WARC file's CDXJ index in OUT/warc (crawl-NNNNN.cdxj) against what
// an independent indexer (`warcio cdx-index`, one run over all the files in
// that directory, so "filename" agrees) prints for the file, line for line
// once sorted. Returns what differs ("" for none): a file without its index,
// a scratch .cdxj.open left behind, or the first line that differs.
inline std::string CdxjNotAsWarcio(const std::string& out) {
  namespace fs = std::filesystem;
  const std::string dir = out + "/warc";
  std::vector<std::string> warcs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".cdxj.open")) return name + " left behind";
    if (name.ends_with(".warc.gz")) warcs.push_back(name);
  }
  if (warcs.empty()) return "no WARC file in " + dir;
  CommandResult cdx = RunCommand("cd '" + dir + "' && warcio cdx-index *.warc.gz");
  if (cdx.exit_code != 0) return "warcio cdx-index failed: " + cdx.output;
  std::map<std::string, std::vector<std::string>> theirs;  // by file name
  std::istringstream lines(cdx.output);
  for (std::string line; std::getline(lines, line);) {
    const std::string key = "\"filename\":\"";
    size_t at = line.rfind(key);
    if (at == std::string::npos)
      return "warcio printed a line without a filename: " + line;
    at += key.size();
    theirs[line.substr(at, line.find('"', at) - at)].push_back(line);
  }
  for (const std::string& name : warcs) {
    const std::string index =
        dir + "/" + name.substr(0, name.size() - std::string(".warc.gz").size()) +
        ".cdxj";
    if (!fs::exists(index)) return name + ": no index " + index;
    std::vector<std::string> ours;
    std::istringstream in(ReadText(index));
    for (std::string line; std::getline(in, line);) ours.push_back(line);
    if (!std::is_sorted(ours.begin(), ours.end())) return index + " is not sorted";
    std::vector<std::string>& t = theirs[name];
    std::sort(t.begin(), t.end());
    for (size_t i = 0; i < std::max(ours.size(), t.size()); ++i) {
      std::string a = i < ours.size() ? ours[i] : "(none)",
                  b = i < t.size() ? t[i] : "(none)";
      if (a != b) {
        return index + " line " + std::to_string(i + 1) + " of " +
               std::to_string(ours.size()) + ": ours " + a + "; warcio's (" +
               std::to_string(t.size()) + " lines) " + b;
      }
    }
  }
  return "";
}

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_CRAWL_OUTPUT_H_
