// See crawler/version.h.
#include "crawler/version.h"

#include <curl/curl.h>
#include <spdlog/version.h>
#include <toml++/toml.h>
#include <xxhash.h>
#include <zlib.h>

#include <boost/version.hpp>

namespace crawler::report {

const char* Version() { return CRAWLER_VERSION; }

std::string Software() { return std::string("crawler/") + Version(); }

std::string VersionReport() {
  const curl_version_info_data* c = curl_version_info(CURLVERSION_NOW);
  std::string out = Software() + " (" + CRAWLER_BUILD_TYPE + " build)\n";
  out += std::string("libcurl ") + c->version +
         (c->ssl_version ? std::string(" ") + c->ssl_version : "") +
         (c->libz_version ? std::string(" zlib/") + c->libz_version : "") +
         (c->nghttp2_version ? std::string(" nghttp2/") + c->nghttp2_version : "") + "\n";
  out += "  features:";
  const struct {
    int bit;
    const char* name;
  } features[] = {{CURL_VERSION_SSL, "SSL"},
                  {CURL_VERSION_HTTP2, "HTTP2"},
                  {CURL_VERSION_HTTP3, "HTTP3"},
                  {CURL_VERSION_IPV6, "IPv6"},
                  {CURL_VERSION_LIBZ, "libz"},
                  {CURL_VERSION_BROTLI, "brotli"},
                  {CURL_VERSION_ZSTD, "zstd"},
                  {CURL_VERSION_IDN, "IDN"},
                  {CURL_VERSION_ASYNCHDNS, "AsynchDNS"},
                  {CURL_VERSION_HTTPS_PROXY, "HTTPS-proxy"},
                  {CURL_VERSION_ALTSVC, "alt-svc"}};
  for (const auto& f : features) {
    if ((c->features & f.bit) != 0) out += std::string(" ") + f.name;
  }
  out += "\n  protocols:";
  for (const char* const* p = c->protocols; p != nullptr && *p != nullptr; ++p)
    out += std::string(" ") + *p;
  out += "\n";
  out += std::string("gumbo ") + CRAWLER_GUMBO_VERSION + "\n";
  out += std::string("Boost ") + std::to_string(BOOST_VERSION / 100000) + "." +
         std::to_string(BOOST_VERSION / 100 % 1000) + "." +
         std::to_string(BOOST_VERSION % 100) + " (URL, JSON)\n";
  unsigned xxh = XXH_versionNumber();
  out += "xxHash " + std::to_string(xxh / 10000) + "." + std::to_string(xxh / 100 % 100) +
         "." + std::to_string(xxh % 100) + "\n";
  out += std::string("zlib ") + zlibVersion() + "\n";
  out += "spdlog " + std::to_string(SPDLOG_VER_MAJOR) + "." +
         std::to_string(SPDLOG_VER_MINOR) + "." + std::to_string(SPDLOG_VER_PATCH) + "\n";
  out += "toml++ " + std::to_string(TOML_LIB_MAJOR) + "." +
         std::to_string(TOML_LIB_MINOR) + "." + std::to_string(TOML_LIB_PATCH) + "\n";
  return out;
}

}  // namespace crawler::report
