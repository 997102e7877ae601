// WACZ packaging; see crawler/wacz.h.
#include "crawler/wacz.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "archive/index_line.h"
#include "base/file_util.h"
#include "crawler/checkpoint.h"
#include "crawler/warc.h"
#include "output/cdxj.h"

namespace crawler::archive {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
  }
  void Update(std::string_view s) { EVP_DigestUpdate(ctx_.get(), s.data(), s.size()); }
  std::string Final() {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_.get(), d, &n);
    static const char* const kHex = "0123456789abcdef";
    std::string out = "sha256:";
    for (unsigned i = 0; i < n; ++i) {
      out += kHex[d[i] >> 4];
      out += kHex[d[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

struct Resource {
  std::string name, path, hash;
  uint64_t bytes = 0;
};

// A file's resource entry, its hash read as a stream.
Result<Resource> Describe(const std::string& file, const std::string& zip_path,
                          uint64_t limit = UINT64_MAX) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError(file, "open");
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  uint64_t bytes = 0;
  while (in && bytes < limit) {
    in.read(buf.data(),
            static_cast<std::streamsize>(std::min<uint64_t>(buf.size(), limit - bytes)));
    auto n = static_cast<size_t>(in.gcount());
    sha.Update(std::string_view(buf.data(), n));
    bytes += n;
  }
  if (in.bad()) return IoError(file, "read");
  return Resource{fs::path(zip_path).filename().string(), zip_path, sha.Final(), bytes};
}

// OUT/.lock held: a crawler is running there.
Result<bool> Running(const std::string& out) {
  const std::string path = out + "/.lock";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return IoError(path, "open");
  }
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

// A WARC file to package: how much of it, and its sorted index.
struct Part {
  std::string warc;
  uint64_t bytes = UINT64_MAX;  // all of it
  std::string index;
  // Its name under archive/ (its index lines' "filename" rewritten to it):
  // an earlier crawl's files are prefixed, as every crawl names its first
  // file crawl-00000.warc.gz.
  std::string name;
};

// The parts of OUT: every WARC file whole, each with its index (made if it
// has none); or, for a crawl that is running or did not end cleanly (a
// .cdxj.open is left), the files as its last checkpoint has them: those
// before its file whole, its file cut at the checkpoint's length (indexed
// from the file into `cut_index`), none after it. Sets *checkpoint to the
// checkpoint's sequence then (0 otherwise).
Result<std::vector<Part>> Parts(const std::string& out, const std::string& cut_index,
                                uint64_t* checkpoint) {
  const std::string dir = out + "/warc";
  if (!fs::is_directory(dir))
    return Status::Invalid(out + ": no warc/ here: not a crawl output directory");
  auto running = Running(out);
  if (!running.ok()) return running.status();
  bool unclean = false;
  std::vector<std::string> warcs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    unclean = unclean || p.ends_with(".cdxj.open");
    if (p.ends_with(".warc.gz")) warcs.push_back(p);
  }
  if (ec) return Status::Error(Status::Code::kIoError, dir + ": " + ec.message());
  std::sort(warcs.begin(), warcs.end());
  std::optional<checkpoint::CheckpointInfo> cut;
  if (*running || unclean) {
    const std::string manifest =
        out + "/" + checkpoint::kCheckpointDir + "/MANIFEST.json";
    std::ifstream in(manifest, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (!in && !in.eof()) return IoError(manifest, "read");
    auto m = checkpoint::DecodeManifest(text, manifest);
    if (!m.ok()) {
      return Status::Invalid(
          out + ": the crawl is " + (*running ? "running" : "not ended cleanly") +
          " and has no usable checkpoint to package (" + m.status().message() + ")");
    }
    cut = m->info;
    *checkpoint = cut->sequence;
  }
  std::vector<Part> parts;
  for (const std::string& w : warcs) {
    const std::string name = fs::path(w).filename().string();
    if (cut && name > cut->warc_file) continue;  // written after the checkpoint
    if (cut && name == cut->warc_file) {
      if (fs::file_size(w, ec) < cut->warc_bytes || ec)
        return Status::Invalid(w + " is shorter than its checkpoint recorded");
      auto lines = output::cdxj::IndexFile(w, cut->warc_bytes);
      if (!lines.ok()) return lines.status();
      Status st = output::cdxj::WriteSorted(cut_index, std::move(lines).value());
      if (!st.ok()) return st;
      parts.push_back(Part{w, cut->warc_bytes, cut_index, name});
      continue;
    }
    if (!fs::exists(output::cdxj::PathFor(w))) {
      auto n = output::IndexWarc(w);
      if (!n.ok()) return n.status();
    }
    parts.push_back(Part{w, UINT64_MAX, output::cdxj::PathFor(w), name});
  }
  if (parts.empty()) return Status::Invalid(dir + ": no WARC file to package");
  return parts;
}

// "20261127015205" -> "2026-11-27T01:52:05Z"
std::string Rfc3339(std::string_view ts) {
  if (ts.size() != 14) return std::string(ts);
  return std::string(ts.substr(0, 4)) + "-" + std::string(ts.substr(4, 2)) + "-" +
         std::string(ts.substr(6, 2)) + "T" + std::string(ts.substr(8, 2)) + ":" +
         std::string(ts.substr(10, 2)) + ":" + std::string(ts.substr(12, 2)) + "Z";
}

// A pages.jsonl line for an index line of an HTML page fetched with 200, or "".
std::string PageLine(const IndexLine& l) {
  if (!l.ok || l.mime != "text/html" || l.status != "200") return {};
  json::object page;
  page["url"] = l.url;
  page["ts"] = Rfc3339(l.ts);
  return json::serialize(page) + "\n";
}

// A server-not-modified revisit (a 304 written as a revisit record that
// refers to the URL's last full capture) is indexed by warcio, and by each
// WARC's own CDXJ, with its own status: 304. ReplayWeb.page (wabac.js,
// `loadPayload`) replays a revisit whose status is 3xx as that response
// itself, an empty 304, and never follows it to the capture it refers to;
// one with the status of that capture it follows (WARC-Refers-To-Target-URI
// and -Date) and replays the capture's payload. So the WACZ's own index, and
// only it, gives each 304 revisit the status of the same URL's last full
// capture before it: the lines come in byte order, a URL's captures one
// after another by time (docs/formats.md, "The WACZ's index").
class ReplayStatus {
 public:
  // `line` (parsed: `l`) as the WACZ's index holds it; true if its status
  // was changed.
  bool Fix(const IndexLine& l, std::string* line) {
    if (l.key != key_) {
      key_ = std::string(l.key);
      status_.clear();  // a URL's captures share its key
    }
    if (!l.ok) return false;
    if (l.mime != "warc/revisit") {
      status_[l.url] = l.status;
      return false;
    }
    auto capture = status_.find(l.url);
    if (l.status != "304" || capture == status_.end()) return false;
    return SetIndexField(line, "status", capture->second);
  }

 private:
  std::string key_;
  std::map<std::string, std::string> status_;  // url -> its last full capture's
};

// Merges the sorted per-file indexes into `index_path` (byte order) and
// writes pages.jsonl beside it; counts into `summary`.
Status MergeIndexes(const std::vector<Part>& parts, const std::string& index_path,
                    const std::string& pages_path, WaczSummary* summary) {
  std::vector<std::unique_ptr<std::ifstream>> in;
  using Head = std::pair<std::string, size_t>;  // a file's next line, the file
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  // A part's next line, its "filename" the part's name in the package.
  auto next = [&](size_t i) {
    std::string line;
    if (!std::getline(*in[i], line)) return;
    if (parts[i].name != fs::path(parts[i].warc).filename().string())
      SetIndexField(&line, "filename", parts[i].name);
    heads.emplace(std::move(line), i);
  };
  for (const Part& part : parts) {
    in.push_back(std::make_unique<std::ifstream>(part.index, std::ios::binary));
    if (!*in.back()) return IoError(part.index, "open");
    next(in.size() - 1);
  }
  std::ofstream index(index_path, std::ios::binary | std::ios::trunc);
  std::ofstream pages(pages_path, std::ios::binary | std::ios::trunc);
  if (!index) return IoError(index_path, "create");
  if (!pages) return IoError(pages_path, "create");
  pages << R"({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"})"
        << "\n";
  ReplayStatus replay;
  while (!heads.empty()) {
    auto [line, i] = heads.top();
    heads.pop();
    const IndexLine parsed = ParseIndexLine(line);
    // The page line first: `parsed` views `line`, which Fix may change.
    std::string page = PageLine(parsed);
    summary->not_modified_resolved += replay.Fix(parsed, &line);
    index << line << "\n";
    ++summary->records;
    if (!page.empty()) {
      pages << page;
      ++summary->pages;
    }
    next(i);
  }
  index.close();
  pages.close();
  if (!index) return IoError(index_path, "write");
  if (!pages) return IoError(pages_path, "write");
  return Status::Ok();
}

// The ZIP itself: libzip reads the sources when it closes the archive.
class Zip {
 public:
  static Result<Zip> Create(const std::string& path) {
    int err = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
    if (z == nullptr) {
      zip_error_t e;
      zip_error_init_with_code(&e, err);
      std::string why = zip_error_strerror(&e);
      zip_error_fini(&e);
      return Status::Error(Status::Code::kIoError, path + ": cannot create: " + why);
    }
    return Zip(z, path);
  }
  Zip(Zip&& o) noexcept
      : z_(o.z_), path_(std::move(o.path_)), buffers_(std::move(o.buffers_)) {
    o.z_ = nullptr;
  }
  Zip& operator=(Zip&&) = delete;
  ~Zip() {
    if (z_ != nullptr) zip_discard(z_);
  }

  Status AddFile(const std::string& file, const std::string& name, bool store,
                 uint64_t length = UINT64_MAX) {
    zip_source_t* s =
        zip_source_file(z_, file.c_str(), 0,
                        length == UINT64_MAX ? -1 : static_cast<zip_int64_t>(length));
    if (s == nullptr) return Error(file);
    return Add(s, name, store);
  }
  Status AddText(std::string text, const std::string& name) {
    buffers_.push_back(std::make_unique<std::string>(std::move(text)));
    zip_source_t* s =
        zip_source_buffer(z_, buffers_.back()->data(), buffers_.back()->size(), 0);
    if (s == nullptr) return Error(name);
    return Add(s, name, false);
  }
  Status Close() {
    if (zip_close(z_) != 0) return Error("close");
    z_ = nullptr;
    return Status::Ok();
  }

 private:
  Zip(zip_t* z, std::string path) : z_(z), path_(std::move(path)) {}
  Status Add(zip_source_t* s, const std::string& name, bool store) {
    zip_int64_t i = zip_file_add(z_, name.c_str(), s, ZIP_FL_ENC_UTF_8);
    if (i < 0) {
      zip_source_free(s);
      return Error(name);
    }
    if (store &&
        zip_set_file_compression(z_, static_cast<zip_uint64_t>(i), ZIP_CM_STORE, 0) != 0)
      return Error(name);
    return Status::Ok();
  }
  Status Error(const std::string& what) {
    return Status::Error(
        Status::Code::kIoError,
        path_ + ": " + what + ": " + zip_error_strerror(zip_get_error(z_)));
  }

  zip_t* z_;
  std::string path_;
  std::vector<std::unique_ptr<std::string>> buffers_;  // alive until Close
};

std::string NowRfc3339() { return output::WarcDate(std::chrono::system_clock::now()); }

}  // namespace

Result<WaczSummary> WriteWacz(const std::string& out_dir, const std::string& wacz_path,
                              const std::string& software,
                              const std::vector<std::string>& earlier) {
  if (fs::exists(wacz_path))
    return Status::Invalid(wacz_path + ": exists (remove it or choose another -o)");
  const std::string index_tmp = wacz_path + ".index.tmp",
                    pages_tmp = wacz_path + ".pages.tmp",
                    cut_tmp = wacz_path + ".cut.tmp";
  struct Cleanup {
    std::vector<std::string> paths;
    ~Cleanup() {
      std::error_code ec;
      for (const std::string& p : paths) fs::remove(p, ec);
    }
  } cleanup{{index_tmp, pages_tmp, cut_tmp}};
  WaczSummary summary;
  auto parts = Parts(out_dir, cut_tmp, &summary.checkpoint);
  if (!parts.ok()) return parts.status();
  // The earlier crawls this one's revisits may refer to (dedup.from), whole
  // or as their last checkpoints have them, their files prefixed.
  for (size_t k = 0; k < earlier.size(); ++k) {
    const std::string cut = cut_tmp + "." + std::to_string(k + 1);
    cleanup.paths.push_back(cut);
    uint64_t ignored = 0;
    auto more = Parts(earlier[k], cut, &ignored);
    if (!more.ok()) return more.status().WithContext("--with " + earlier[k]);
    for (Part& p : *more) {
      p.name = "earlier-" + std::to_string(k + 1) + "-" + p.name;
      parts->push_back(std::move(p));
    }
  }
  summary.warcs = parts->size();
  Status st = MergeIndexes(*parts, index_tmp, pages_tmp, &summary);
  if (!st.ok()) return st;
  auto zip = Zip::Create(wacz_path);
  if (!zip.ok()) return zip.status();
  json::array resources;
  auto add = [&](const std::string& file, const std::string& zip_name, bool store,
                 uint64_t limit) -> Status {
    auto r = Describe(file, zip_name, limit);
    if (!r.ok()) return r.status();
    resources.push_back(json::object{
        {"name", r->name}, {"path", r->path}, {"hash", r->hash}, {"bytes", r->bytes}});
    return zip->AddFile(file, zip_name, store, limit);
  };
  st = add(pages_tmp, "pages/pages.jsonl", false, UINT64_MAX);
  for (size_t i = 0; st.ok() && i < parts->size(); ++i) {
    const Part& part = (*parts)[i];
    st = add(part.warc, "archive/" + part.name, true, part.bytes);
  }
  if (st.ok()) st = add(index_tmp, "indexes/index.cdx", false, UINT64_MAX);
  if (!st.ok()) return st;
  json::object package{
      {"profile", "data-package"}, {"resources", resources},
      {"wacz_version", "1.1.1"},   {"software", software},
      {"created", NowRfc3339()},   {"title", fs::path(out_dir).filename().string()}};
  std::string datapackage = json::serialize(package);
  Sha256 sha;
  sha.Update(datapackage);
  json::object digest{{"path", "datapackage.json"}, {"hash", sha.Final()}};
  st = zip->AddText(std::move(datapackage), "datapackage.json");
  if (st.ok()) st = zip->AddText(json::serialize(digest), "datapackage-digest.json");
  if (st.ok()) st = zip->Close();
  if (!st.ok()) return st;
  std::error_code ec;
  summary.bytes = fs::file_size(wacz_path, ec);
  return summary;
}

}  // namespace crawler::archive
