// crawler-url: why did these two URLs (not) dedup?
//
//   crawler-url [--base URL] [--sort-query] [--strip-tracking] [--strip-session-ids]
//               [--strip-www] [URL ...]
//
// Prints one line per input URL (arguments, or stdin lines when there are
// none): the normalized URL, i.e. the crawler's dedup key, or
// "error: <reason>". With --base, inputs are hrefs resolved against it as a
// browser would. Exit code: 0 if every input normalized, 1 if any did not,
// 2 on bad usage.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "parsers/url.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "crawler-url: %s\nusage: crawler-url [--base URL] [--sort-query] "
               "[--strip-tracking] [--strip-session-ids] [--strip-www] [URL ...]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  crawler::parsers::UrlOptions options;
  std::string base;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--base") {
      if (++i >= argc) return Usage("--base needs a URL");
      auto b = crawler::parsers::NormalizeUrl(argv[i]);
      if (!b.ok()) return Usage(("bad --base: " + b.error).c_str());
      base = b.url;
    } else if (a == "--sort-query") {
      options.sort_query = true;
    } else if (a == "--strip-tracking") {
      options.strip_tracking = true;
    } else if (a == "--strip-session-ids") {
      options.strip_session_ids = true;
    } else if (a == "--strip-www") {
      options.strip_www = true;
    } else if (a == "--help" || a == "-h") {
      Usage("prints the normalized URL (the dedup key) of each input");
      return 0;
    } else if (a.rfind("--", 0) == 0) {
      return Usage(("unknown option " + a).c_str());
    } else {
      inputs.push_back(a);
    }
  }
  bool from_stdin = inputs.empty();
  std::string line;
  size_t next = 0;
  int failed = 0;
  while (true) {
    if (from_stdin) {
      if (!std::getline(std::cin, line)) break;
    } else {
      if (next == inputs.size()) break;
      line = inputs[next++];
    }
    auto r = base.empty() ? crawler::parsers::NormalizeUrl(line, options)
                          : crawler::parsers::ResolveHref(base, line, options);
    if (r.ok()) {
      std::printf("%s\n", r.url.c_str());
    } else {
      std::printf("error: %s\n", r.error.c_str());
      failed = 1;
    }
  }
  return failed;
}
