// libFuzzer target: robots.txt parsing and matching. /robots.txt must always
// be allowed, whatever the file says.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parsers/robots.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  crawler::parsers::Robots r = crawler::parsers::Robots::Parse(body, "crawler");
  if (!r.Allowed("/robots.txt")) std::abort();
  for (const char* path : {"/", "/a/b.html", "/%7Ex?y=1", "/index.php$", "/x*y"}) {
    (void)r.Allowed(path);
  }
  // Rules from the file used as paths: exercises the matcher on its own input.
  for (const auto& rule : r.rules()) (void)r.Allowed(rule.pattern);
  return 0;
}
