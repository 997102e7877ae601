// libFuzzer target: the checkpoint's other loaders: MANIFEST.json
// (DecodeManifest) and hosts.bin (HostTable::Decode). The first byte picks
// one: 0 the manifest as given (the seal check), 1 the manifest sealed with
// a correct checksum first (so the fuzzer reaches the JSON and the fields),
// 2 hosts.bin. Errors must name the file; nothing may crash.
#include <xxhash.h>

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "crawler/checkpoint.h"
#include "engine/host_table.h"

namespace {

void NamesFile(const crawler::Status& st, const char* name) {
  if (!st.ok() && st.message().rfind(std::string(name) + ": ", 0) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      NamesFile(crawler::checkpoint::DecodeManifest(text, "MANIFEST.json").status(),
                "MANIFEST.json");
      break;
    case 1: {
      // As EncodeManifest seals it: drop the closing brace, append the key and
      // the XXH3-64 of everything before the hex digits.
      if (!text.empty() && text.back() == '}') text.pop_back();
      text += ",\"manifest_xxh3\":\"";
      char hex[17];
      std::snprintf(hex, sizeof(hex), "%016" PRIx64,
                    XXH3_64bits(text.data(), text.size()));
      text += std::string(hex) + "\"}\n";
      NamesFile(crawler::checkpoint::DecodeManifest(text, "MANIFEST.json").status(),
                "MANIFEST.json");
      break;
    }
    default:
      NamesFile(crawler::engine::HostTable::Decode(text, "hosts.bin").status(),
                "hosts.bin");
  }
  return 0;
}
