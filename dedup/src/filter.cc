// Filter: options, creation and files. The implementation is StripedFilter
// (striped_filter.h), instantiated for the three layer types.
#include "dedup/filter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "base/file_util.h"
#include "bloom_impl.h"
#include "cuckoo_impl.h"
#include "format.h"
#include "striped_filter.h"

namespace crawler::dedup {

KeyHash HashKey(std::string_view key) {
  XXH128_hash_t h = XXH3_128bits_withSeed(key.data(), key.size(), kHashSeed);
  return KeyHash{h.low64, h.high64};
}

const char* FilterTypeName(FilterType type) {
  switch (type) {
    case FilterType::kBloom:
      return "bloom";
    case FilterType::kCuckoo:
      return "cuckoo";
    case FilterType::kCounting:
      return "counting";
  }
  return "unknown";
}

Result<FilterType> ParseFilterType(std::string_view name) {
  if (name == "bloom") return FilterType::kBloom;
  if (name == "cuckoo") return FilterType::kCuckoo;
  if (name == "counting") return FilterType::kCounting;
  return Status::Error(
      Status::Code::kInvalidArgument,
      "type '" + std::string(name) + "' is not bloom, cuckoo or counting");
}

Status ValidateOptions(const FilterOptions& o) {
  auto bad = [](const std::string& msg) {
    return Status::Error(Status::Code::kInvalidArgument, msg);
  };
  if (static_cast<unsigned>(o.type) > 2)
    return bad("type is not bloom, cuckoo or counting");
  if (o.capacity == 0 || o.capacity > (uint64_t{1} << 40)) {
    return bad("capacity " + std::to_string(o.capacity) + " is not in 1 .. 2^40");
  }
  if (!(o.error_rate >= 1e-9 && o.error_rate < 0.5)) {
    return bad("error_rate " + std::to_string(o.error_rate) + " is not in [1e-9, 0.5)");
  }
  if (!(o.expansion >= 1.1 && o.expansion <= 16)) {
    return bad("expansion " + std::to_string(o.expansion) + " is not in [1.1, 16]");
  }
  if (!(o.tightening > 0.05 && o.tightening < 1)) {
    return bad("tightening " + std::to_string(o.tightening) + " is not in (0.05, 1)");
  }
  if (o.stripes == 0 || o.stripes > 65536 || !std::has_single_bit(o.stripes)) {
    return bad("stripes " + std::to_string(o.stripes) +
               " is not a power of two in 1 .. 65536");
  }
  if (o.allow_erase && o.type == FilterType::kBloom) {
    return bad(
        "a bloom filter cannot erase: use type cuckoo or counting when deletes are "
        "wanted");
  }
  return Status::Ok();
}

namespace {

using internal::StripedFilter;

template <typename Layer>
Result<std::unique_ptr<Filter>> ReadStripes(std::FILE* in, const std::string& name,
                                            const FilterOptions& options) {
  auto filter = std::make_unique<StripedFilter<Layer>>(options, /*empty=*/true);
  uint64_t items = 0;
  SectionReader section;
  for (uint32_t i = 0; i < options.stripes; ++i) {
    Status st = section.Open(in, name, kTagStripe, "stripe " + std::to_string(i));
    if (!st.ok()) return st;
    st = filter->ReadStripe(i, &section, name, &items);
    if (!st.ok()) return st;
  }
  std::vector<uint8_t> payload;
  Status st = ReadSection(in, name, kTagEnd, "end", &payload);
  if (!st.ok()) return st;
  ByteReader r(payload.data(), payload.size());
  uint32_t stripes = r.U32();
  r.U32();
  uint64_t total = r.U64();
  if (!r.ok() || stripes != options.stripes || total != items) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": end section does not match the stripes read");
  }
  return std::unique_ptr<Filter>(std::move(filter));
}

}  // namespace

Result<std::unique_ptr<Filter>> Filter::Create(const FilterOptions& options) {
  Status st = ValidateOptions(options);
  if (!st.ok()) return st;
  switch (options.type) {
    case FilterType::kBloom:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<BloomLayer>>(options, false));
    case FilterType::kCounting:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<CountingLayer>>(options, false));
    case FilterType::kCuckoo:
      return std::unique_ptr<Filter>(
          std::make_unique<StripedFilter<CuckooLayer>>(options, false));
  }
  return Status::Error(Status::Code::kInvalidArgument, "unknown filter type");
}

Result<std::unique_ptr<Filter>> Filter::Read(std::FILE* in, const std::string& name) {
  Status st = ReadPreamble(in, name);
  if (!st.ok()) return st;
  std::vector<uint8_t> payload;
  st = ReadSection(in, name, kTagHead, "header", &payload);
  if (!st.ok()) return st;
  ByteReader r(payload.data(), payload.size());
  FilterOptions o;
  uint8_t type = r.U8();
  uint8_t scaling = r.U8();
  uint8_t allow_erase = r.U8();
  r.U8();
  o.stripes = r.U32();
  o.capacity = r.U64();
  o.error_rate = r.F64();
  o.expansion = r.F64();
  o.tightening = r.F64();
  if (!r.ok() || r.remaining() != 0) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": header section has the wrong size");
  }
  if (type > 2 || scaling > 1 || allow_erase > 1) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": header has an invalid type or flag");
  }
  o.type = static_cast<FilterType>(type);
  o.scaling = scaling == 1;
  o.allow_erase = allow_erase == 1;
  st = ValidateOptions(o);
  if (!st.ok()) {
    return Status::Error(Status::Code::kCorruption, name + ": header: " + st.message());
  }
  switch (o.type) {
    case FilterType::kBloom:
      return ReadStripes<BloomLayer>(in, name, o);
    case FilterType::kCounting:
      return ReadStripes<CountingLayer>(in, name, o);
    case FilterType::kCuckoo:
      return ReadStripes<CuckooLayer>(in, name, o);
  }
  return Status::Error(Status::Code::kCorruption, name + ": unknown filter type");
}

Result<std::unique_ptr<Filter>> Filter::Load(const std::string& path) {
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (in == nullptr) {
    return Status::Error(Status::Code::kIoError,
                         path + ": open: " + std::strerror(errno));
  }
  auto result = Read(in, path);
  bool trailing = result.ok() && std::fgetc(in) != EOF;
  std::fclose(in);
  if (trailing) {
    return Status::Error(Status::Code::kCorruption,
                         path + ": trailing bytes after the end section");
  }
  return result;
}

Status Filter::Save(const std::string& path) const {
  return WriteFileAtomic(path, [&](std::FILE* out) { return Write(out, path + ".tmp"); });
}

}  // namespace crawler::dedup
