// The scratch directories a test case made (TempDir, crawl_output.h): the
// shared main (tests/main.cc) removes them when the test case passes, and
// keeps them, named on stderr, when it fails. Before, every one stayed:
// 1,292 directories and 30 GB under /tmp on a machine that had run the
// suite a few dozen times. CRAWLER_KEEP_TEST_DIRS=1 keeps them all.
#ifndef TESTS_SUPPORT_TEMP_DIRS_H_
#define TESTS_SUPPORT_TEMP_DIRS_H_

#include <set>
#include <string>

namespace crawler::testing {

// The test thread's (TempDir is called from test bodies only).
inline std::set<std::string>& TempDirsMade() {
  static std::set<std::string> dirs;
  return dirs;
}

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_TEMP_DIRS_H_
