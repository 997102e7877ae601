// libFuzzer target: the frontier.bin decoder (frontier/image.h). It must
// return an image or an error naming the file, never crash; every URL of an
// image it accepts has a host key, and every spill file record ('F') a host
// key, a plain file name and depth counts that add up.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "frontier/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto image = crawler::frontier::DecodeFrontierImage(bytes, "frontier.bin");
  if (image.ok()) {
    for (const auto& [e, leased] : image->urls) {
      if (crawler::frontier::HostKey(e.url).empty()) std::abort();
    }
    for (const auto& s : image->spills) {
      const auto& r = s.range;
      if (crawler::frontier::HostKey(r.host) != r.host || r.path.empty() ||
          r.path.find('/') != std::string::npos || r.count == 0 || r.offset > r.end ||
          s.at > image->urls.size())
        std::abort();
      uint64_t sum = 0;
      for (const auto& [depth, n] : r.depths) sum += n;
      if (sum != r.count) std::abort();
    }
    (void)image->LeasedPerHost();
    (void)image->Urls();
  } else if (image.status().message().rfind("frontier.bin: ", 0) != 0) {
    std::abort();  // every error names the file
  }
  return 0;
}
