// libFuzzer target: the frontier.bin decoder (frontier/image.h). It must
// return an image or an error naming the file, never crash; every URL of an
// image it accepts has a host key.
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
    (void)image->LeasedPerHost();
  } else if (image.status().message().rfind("frontier.bin: ", 0) != 0) {
    std::abort();  // every error names the file
  }
  return 0;
}
