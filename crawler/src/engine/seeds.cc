#include "crawler/seeds.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <unordered_set>

namespace crawler::engine {

Result<Seeds> ReadSeeds(const std::string& path, const parsers::UrlOptions& options) {
  std::ifstream in(path);
  if (!in) {
    return Status::Error(Status::Code::kIoError,
                         path + ": cannot open: " + std::strerror(errno));
  }
  Seeds seeds;
  std::unordered_set<std::string> seen;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    parsers::UrlResult r = parsers::NormalizeUrl(line, options);
    if (!r.ok()) {
      seeds.problems.push_back(path + ":" + std::to_string(line_no) + ": " +
                               r.status().message());
      continue;
    }
    if (seen.insert(*r).second) seeds.urls.push_back(std::move(r).value());
  }
  if (in.bad()) {
    return Status::Error(Status::Code::kIoError,
                         path + ": read error: " + std::strerror(errno));
  }
  if (seeds.urls.empty()) {
    std::string why = seeds.problems.empty()
                          ? "no seed URL in the file"
                          : "no usable seed URL (" +
                                std::to_string(seeds.problems.size()) +
                                " bad lines, first: " + seeds.problems[0] + ")";
    return Status::Error(Status::Code::kInvalidArgument, path + ": " + why);
  }
  return seeds;
}

}  // namespace crawler::engine
