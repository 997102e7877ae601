// The one Catch2 main shared by every test binary, and its listener that
// removes a passing test case's scratch directories (support/temp_dirs.h).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "support/temp_dirs.h"

namespace {

class TempDirCleaner : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    std::set<std::string>& dirs = crawler::testing::TempDirsMade();
    const char* keep = std::getenv("CRAWLER_KEEP_TEST_DIRS");
    const bool passed = stats.totals.assertions.allOk() && !stats.aborting;
    for (const std::string& dir : dirs) {
      if (passed && (keep == nullptr || std::string(keep) != "1")) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      } else if (!passed) {
        std::cerr << "kept for a look: " << dir << "\n";
      }
    }
    dirs.clear();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(TempDirCleaner)
