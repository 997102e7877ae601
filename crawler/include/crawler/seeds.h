// The seeds file: one URL per line; blank lines and lines starting with '#'
// are skipped. Each URL is normalized (parsers/url.h); a line that does not
// normalize is reported with its line number and skipped, never fatal. A file
// with no usable seed is an error. Pure function; any thread.
#ifndef CRAWLER_SEEDS_H_
#define CRAWLER_SEEDS_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "parsers/url.h"

namespace crawler::engine {

struct Seeds {
  std::vector<std::string> urls;      // normalized, in file order, duplicates removed
  std::vector<std::string> problems;  // "seeds.txt:3: no scheme"
};

Result<Seeds> ReadSeeds(const std::string& path, const parsers::UrlOptions& options);

}  // namespace crawler::engine

#endif  // CRAWLER_SEEDS_H_
