// Helpers shared by the dedup tests: variant tags for TEMPLATE_TEST_CASE, the
// benchmark's URL-like keys, and a scratch directory that cleans up after itself.
#ifndef TESTS_DEDUP_TEST_UTIL_H_
#define TESTS_DEDUP_TEST_UTIL_H_

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "dedup/filter.h"

namespace crawler::dedup::testing {

struct Bloom {
  static constexpr FilterType kType = FilterType::kBloom;
};
struct Cuckoo {
  static constexpr FilterType kType = FilterType::kCuckoo;
};
struct Counting {
  static constexpr FilterType kType = FilterType::kCounting;
};

// Key i of the benchmark's URL-like key space (distinct for distinct i).
inline std::string UrlKey(uint64_t i) {
  return "https://host" + std::to_string(i % 5000) + ".example.org/section/" +
         std::to_string(i / 7) + "/page-" + std::to_string(i) +
         ".html?id=" + std::to_string(i);
}

inline std::unique_ptr<Filter> MakeFilter(FilterOptions o) {
  auto f = Filter::Create(o);
  if (!f.ok()) throw std::runtime_error(f.status().ToString());
  return std::move(f).value();
}

// Binomial tolerance: the largest count of successes out of n trials with
// probability p that is within `sigmas` standard deviations of the mean.
inline double UpperTolerance(double p, double n, double sigmas) {
  return p * n + sigmas * std::sqrt(n * p * (1 - p));
}

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "dedup-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : throw std::runtime_error("mkdtemp failed");
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace crawler::dedup::testing

#endif  // TESTS_DEDUP_TEST_UTIL_H_
