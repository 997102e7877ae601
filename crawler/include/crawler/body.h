// A response body: in RAM up to a threshold, past it in an unlinked
// temporary file (O_TMPFILE) that is mapped read-only once the transfer
// ends. So RAM per transfer is bounded whatever fetch.max_body_bytes is: a
// crawl with a 12 MiB body on each of 1,000 hosts peaked at 744 MB RSS with
// every body in RAM (64 transfers of up to 10 MiB, and as many results
// waiting); docs/benchmarks.md, "Memory over many hosts", has the figure with
// the spool. The mapped pages are the file's: the kernel reads them in as a
// reader touches them and may drop them again, and they go with the Body.
#ifndef CRAWLER_BODY_H_
#define CRAWLER_BODY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace crawler::engine {

class Body {
 public:
  Body() = default;
  explicit Body(std::string text) : ram_(std::move(text)) { Recount(); }
  Body(Body&& other) noexcept { *this = std::move(other); }
  Body& operator=(Body&& other) noexcept;
  // A copy is held in RAM (the tests' and small bodies' case).
  Body(const Body& other) : ram_(other.view()) { Recount(); }
  Body& operator=(const Body& other) {
    if (this != &other) *this = Body(std::string(other.view()));
    return *this;
  }
  ~Body();
  // The heap bytes held by every Body in RAM now (the fetches under way,
  // the results waiting to be parsed, the one being parsed): the stats
  // report's "memory" part "bodies". Spooled bodies are the files'.
  static uint64_t RamBytes();

  // Writing (the fetcher). Past `spool_bytes` in RAM the body moves to a
  // temporary file in `spool_dir` ("": never). False: the file could not be
  // made or written (error() says why); the body is then incomplete.
  void SpoolPast(uint64_t spool_bytes, std::string spool_dir) {
    spool_bytes_ = spool_bytes;
    spool_dir_ = std::move(spool_dir);
  }
  bool Append(const char* data, size_t n);
  // Done writing: a spooled body is mapped (false on failure, error() set).
  bool Finish();
  const std::string& error() const { return error_; }

  // Reading.
  std::string_view view() const {
    if (!spooled_) return ram_;
    return map_ != nullptr ? std::string_view(static_cast<const char*>(map_), size_)
                           : std::string_view();
  }
  operator std::string_view() const { return view(); }  // NOLINT: a body reads as text
  size_t size() const { return spooled_ ? size_ : ram_.size(); }
  bool empty() const { return size() == 0; }
  bool spooled() const { return spooled_; }
  friend bool operator==(const Body& a, std::string_view b) { return a.view() == b; }

 private:
  void Release();
  bool Spool();

 public:
  // A new unlinked file in `dir`, read-write: O_TMPFILE, or (`tmpfile`
  // false, or a file system without it) mkostemp then unlink. -1 with
  // errno set on failure.
  static int OpenSpool(const std::string& dir, bool tmpfile = true);
  // Removes the spool-* files a crash left in `dir` (where OpenSpool fell
  // back to mkostemp: between its create and unlink). Errors are ignored:
  // a leftover file costs disk, not correctness.
  static void ClearSpool(const std::string& dir);

 private:
  void Recount();  // the process-wide count follows ram_'s buffer

  size_t counted_ = 0;  // ram_'s buffer as last counted

  std::string ram_;
  uint64_t spool_bytes_ = 0;
  std::string spool_dir_;
  bool spooled_ = false;  // past spool_bytes_: the body is a file's
  int fd_ = -1;           // the spool file while it is written (Finish closes it)
  size_t size_ = 0;       // bytes in it
  void* map_ = nullptr;   // its mapping, after Finish (null for an empty file)
  std::string error_;
};

}  // namespace crawler::engine

#endif  // CRAWLER_BODY_H_
