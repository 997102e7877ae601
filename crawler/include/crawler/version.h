// The crawler's version, and the libraries it was built with (for
// `crawler --version`, as `curl -V` and `wget --version` print them, and
// for the WARC warcinfo record's `software` field).
#ifndef CRAWLER_VERSION_H_
#define CRAWLER_VERSION_H_

#include <string>

namespace crawler::report {

// "0.1.0" (CMake's project version).
const char* Version();
// "crawler/0.1.0": the WARC software field and the default User-Agent's product.
std::string Software();
// Several lines: version and build type, then libcurl (version, TLS library,
// features, protocols), gumbo, Boost, xxHash, zlib, spdlog, toml++.
std::string VersionReport();

}  // namespace crawler::report

#endif  // CRAWLER_VERSION_H_
