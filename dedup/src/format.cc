#include "format.h"

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/file_util.h"

namespace crawler::dedup {
namespace {

std::string TagName(const char* tag) { return std::string(tag, 4); }

// Bytes left in `in` if it is a regular file, else no limit.
uint64_t BytesLeft(std::FILE* in) {
  struct stat st;
  long pos = std::ftell(in);
  if (pos >= 0 && fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size >= pos) {
    return static_cast<uint64_t>(st.st_size - pos);
  }
  return UINT64_MAX;
}

// One stripe of a 2^40-key filter is far below this; a larger length is damage.
constexpr uint64_t kMaxSectionBytes = uint64_t{1} << 44;

}  // namespace

Status WritePreamble(std::FILE* out, const std::string& name) {
  ByteWriter w;
  w.Bytes(reinterpret_cast<const uint8_t*>(kMagic), sizeof(kMagic));
  w.U32(kFormatVersion);
  w.U32(0);
  if (std::fwrite(w.view().data(), 1, w.view().size(), out) != w.view().size()) {
    return IoError(name, "write");
  }
  return Status::Ok();
}

Status WriteSection(std::FILE* out, const std::string& name, const char (&tag)[4],
                    const ByteWriter& payload) {
  uint64_t length = payload.size();
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  XXH64_update(&state, tag, 4);
  XXH64_update(&state, &length, sizeof(length));
  bool ok = std::fwrite(tag, 1, 4, out) == 4 && std::fwrite(&length, 8, 1, out) == 1;
  payload.ForEachRun([&](const uint8_t* p, size_t n) {
    XXH64_update(&state, p, n);
    ok = ok && std::fwrite(p, 1, n, out) == n;
  });
  uint64_t sum = XXH64_digest(&state);
  if (!ok || std::fwrite(&sum, 8, 1, out) != 1) return IoError(name, "write");
  return Status::Ok();
}

Status ReadPreamble(std::FILE* in, const std::string& name) {
  uint8_t buf[16];
  size_t got = std::fread(buf, 1, sizeof(buf), in);
  if (std::ferror(in)) return IoError(name, "read");
  if (got < sizeof(kMagic) || std::memcmp(buf, kMagic, sizeof(kMagic)) != 0) {
    if (got < sizeof(kMagic) && std::memcmp(buf, kMagic, got) == 0) {
      return Status::Error(
          Status::Code::kTruncated,
          name + ": file ends inside the header (" + std::to_string(got) + " bytes)");
    }
    return Status::Error(Status::Code::kBadMagic,
                         name + ": not a dedup filter file (magic is not CRWLDDUP)");
  }
  if (got < sizeof(buf)) {
    return Status::Error(
        Status::Code::kTruncated,
        name + ": file ends inside the header (" + std::to_string(got) + " bytes)");
  }
  ByteReader r(buf + 8, 8);
  uint32_t version = r.U32();
  if (version != kFormatVersion) {
    return Status::Error(Status::Code::kBadVersion, name + ": format version " +
                                                        std::to_string(version) +
                                                        ", this build reads version " +
                                                        std::to_string(kFormatVersion));
  }
  if (r.U32() != 0) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": reserved header field is not 0");
  }
  return Status::Ok();
}

Status ReadSection(std::FILE* in, const std::string& name, const char (&tag)[4],
                   const std::string& what, std::vector<uint8_t>* payload) {
  SectionReader section;
  Status st = section.Open(in, name, tag, what);
  if (!st.ok()) return st;
  // The payload grows as its bytes arrive: when the stream's size is unknown
  // (a checkpoint is read through a hashing FILE*, BytesLeft cannot tell), a
  // damaged length must end in "truncated", not in a terabyte allocation.
  // (Found by tests/fuzz/dedup_load_fuzz.)
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  payload->clear();
  payload->reserve(std::min<uint64_t>(section.remaining(), uint64_t{256} << 20));
  while (section.remaining() > 0) {
    const uint64_t want = std::min(kChunk, section.remaining());
    const size_t at = payload->size();
    payload->resize(at + want);
    if (!section.Read(payload->data() + at, want)) break;  // Finish: truncated
  }
  return section.Finish();
}

SectionReader::SectionReader() : state_(XXH64_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
}
SectionReader::~SectionReader() { XXH64_freeState(state_); }

Status SectionReader::Open(std::FILE* in, const std::string& name, const char (&tag)[4],
                           const std::string& what) {
  in_ = in;
  name_ = name;
  what_ = what;
  failed_ = false;
  char got_tag[4];
  uint64_t length = 0;
  size_t n = std::fread(got_tag, 1, 4, in);
  if (n == 4) n += std::fread(&length, 1, 8, in);
  if (std::ferror(in)) return IoError(name, "read");
  if (n < 12) {
    return Status::Error(Status::Code::kTruncated,
                         name + ": file ends before the " + what + " section");
  }
  if (std::memcmp(got_tag, tag, 4) != 0) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": expected section " + TagName(tag) + " (" + what +
                             "), found tag '" + TagName(got_tag) + "'");
  }
  if (length > kMaxSectionBytes) {
    return Status::Error(Status::Code::kCorruption,
                         name + ": " + what + " section claims " +
                             std::to_string(length) +
                             " bytes, more than any filter section can hold");
  }
  const uint64_t max_length = BytesLeft(in);
  if (length > max_length) {
    return Status::Error(Status::Code::kTruncated,
                         name + ": file ends inside the " + what +
                             " section (it claims " + std::to_string(length) +
                             " bytes, " + std::to_string(max_length) + " are left)");
  }
  remaining_ = length;
  XXH64_reset(state_, 0);
  XXH64_update(state_, tag, 4);
  XXH64_update(state_, &length, sizeof(length));
  return Status::Ok();
}

bool SectionReader::Read(void* dst, uint64_t n) {
  if (failed_ || n > remaining_) return failed_ = true, false;
  if (n > 0 && std::fread(dst, 1, n, in_) != n) return failed_ = true, false;
  XXH64_update(state_, dst, n);
  remaining_ -= n;
  return true;
}

Status SectionReader::FinishSkipping() {
  std::vector<uint8_t> buf(size_t{1} << 16);
  while (remaining_ > 0 && !std::feof(in_) && !std::ferror(in_)) {
    const uint64_t want = std::min<uint64_t>(buf.size(), remaining_);
    const size_t got = std::fread(buf.data(), 1, want, in_);
    XXH64_update(state_, buf.data(), got);
    remaining_ -= got;
  }
  failed_ = false;
  return Finish();
}

Status SectionReader::Finish() {
  if (std::ferror(in_)) return IoError(name_, "read");
  uint64_t sum = 0;
  if (failed_ || remaining_ != 0 || std::fread(&sum, 1, 8, in_) != 8) {
    return Status::Error(Status::Code::kTruncated,
                         name_ + ": file ends inside the " + what_ + " section");
  }
  if (sum != XXH64_digest(state_)) {
    return Status::Error(Status::Code::kCorruption,
                         name_ + ": checksum mismatch in the " + what_ + " section");
  }
  return Status::Ok();
}

}  // namespace crawler::dedup

namespace crawler::dedup {
namespace {

Status BadField(const std::string& where, const std::string& what) {
  return Status::Error(Status::Code::kCorruption, where + ": " + what);
}

bool ErrorInRange(double e) { return e > 0 && e < 1; }

// A layer's data into a fresh table: from the stream `data`, or from `r`.
// The length was checked against the geometry and what the section has
// left, but a damaged record in a stream of unknown size can still claim
// terabytes: a table that cannot be had is an error, not a crash (and the
// pages of one that can are only touched as the bytes arrive).
Status ReadData(ByteReader* r, SectionReader* data, uint64_t n, const std::string& where,
                AlignedBuffer* out) {
  if (data != nullptr ? n > data->remaining() : n > r->remaining())
    return BadField(where, "layer data is cut short");
  try {
    *out = AlignedBuffer(n, /*zero=*/false);
  } catch (const std::bad_alloc&) {
    return BadField(where,
                    "layer data of " + std::to_string(n) + " bytes: out of memory");
  }
  if (n == 0) return Status::Ok();
  if (data != nullptr) {
    if (!data->Read(out->data(), n)) return BadField(where, "layer data is cut short");
  } else {
    std::memcpy(out->data(), r->Bytes(n), n);
  }
  return Status::Ok();
}

template <unsigned kCellBits>
void EncodeBlocked(const BlockedLayer<kCellBits>& layer, ByteWriter* w) {
  w->U64(layer.capacity());
  w->F64(layer.error());
  w->U32(layer.block_bits());
  w->U32(layer.k());
  w->U64(layer.blocks());
  w->U64(layer.items());
  w->U64(layer.nonzero());
  w->U64(layer.data().size());
  w->Bytes(layer.data().data(), layer.data().size());
}

template <unsigned kCellBits>
Status DecodeBlocked(ByteReader* r, SectionReader* stream, const std::string& where,
                     BlockedLayer<kCellBits>* out) {
  uint64_t capacity = r->U64();
  double error = r->F64();
  uint32_t block_bits = r->U32();
  uint32_t k = r->U32();
  uint64_t blocks = r->U64();
  uint64_t items = r->U64();
  uint64_t nonzero = r->U64();
  uint64_t data_len = r->U64();
  if (!r->ok()) return BadField(where, "layer record is cut short");
  if (capacity == 0) return BadField(where, "capacity is 0");
  if (!ErrorInRange(error)) return BadField(where, "error rate out of (0, 1)");
  if (block_bits < 512 || block_bits > 4096 || !std::has_single_bit(block_bits)) {
    return BadField(where,
                    "block_bits " + std::to_string(block_bits) + " is not 512..4096");
  }
  if (k == 0 || k > 64)
    return BadField(where, "k " + std::to_string(k) + " is not 1..64");
  if (blocks == 0 || blocks > (uint64_t{1} << 40))
    return BadField(where, "block count out of range");
  if (data_len != blocks * block_bits * kCellBits / 8) {
    return BadField(where, "data length " + std::to_string(data_len) +
                               " does not match the geometry");
  }
  if (nonzero > blocks * block_bits) return BadField(where, "more set cells than cells");
  AlignedBuffer data;
  Status st = ReadData(r, stream, data_len, where, &data);
  if (!st.ok()) return st;
  *out = BlockedLayer<kCellBits>(capacity, error, block_bits, k, blocks, items, nonzero,
                                 std::move(data));
  return Status::Ok();
}

}  // namespace

void EncodeLayer(const BloomLayer& layer, ByteWriter* w) { EncodeBlocked(layer, w); }
void EncodeLayer(const CountingLayer& layer, ByteWriter* w) { EncodeBlocked(layer, w); }
Status DecodeLayer(ByteReader* r, SectionReader* data, const std::string& where,
                   BloomLayer* out) {
  return DecodeBlocked(r, data, where, out);
}
Status DecodeLayer(ByteReader* r, SectionReader* data, const std::string& where,
                   CountingLayer* out) {
  return DecodeBlocked(r, data, where, out);
}

void EncodeLayer(const CuckooLayer& layer, ByteWriter* w) {
  w->U64(layer.capacity());
  w->F64(layer.error());
  w->U32(layer.fp_bits());
  w->U8(layer.full_flag() ? 1 : 0);
  w->U8(0);
  w->U8(0);
  w->U8(0);
  w->U64(layer.buckets());
  w->U64(layer.items());
  w->U32(layer.victim_fp());
  w->U32(0);
  w->U64(layer.victim_bucket());
  w->U64(layer.relocations());
  w->U64(layer.data().size());
  w->Bytes(layer.data().data(), layer.data().size());
}

Status DecodeLayer(ByteReader* r, SectionReader* stream, const std::string& where,
                   CuckooLayer* out) {
  uint64_t capacity = r->U64();
  double error = r->F64();
  uint32_t fp_bits = r->U32();
  uint8_t full = r->U8();
  r->U8();
  r->U8();
  r->U8();
  uint64_t buckets = r->U64();
  uint64_t items = r->U64();
  uint32_t victim_fp = r->U32();
  r->U32();
  uint64_t victim_bucket = r->U64();
  uint64_t relocations = r->U64();
  uint64_t data_len = r->U64();
  if (!r->ok()) return BadField(where, "layer record is cut short");
  if (capacity == 0) return BadField(where, "capacity is 0");
  if (!ErrorInRange(error)) return BadField(where, "error rate out of (0, 1)");
  if (fp_bits < 4 || fp_bits > CuckooLayer::kMaxFingerprintBits) {
    return BadField(where, "fingerprint bits " + std::to_string(fp_bits) + " not 4..32");
  }
  if (full > 1) return BadField(where, "full flag is not 0 or 1");
  if (buckets == 0 || buckets > (uint64_t{1} << 40))
    return BadField(where, "bucket count out of range");
  if (items > buckets * CuckooLayer::kSlots + 1)
    return BadField(where, "more items than slots");
  if (victim_bucket >= buckets) return BadField(where, "victim bucket out of range");
  if (victim_fp != 0 && fp_bits < 32 && victim_fp >= (1u << fp_bits)) {
    return BadField(where, "victim fingerprint wider than fp_bits");
  }
  if (data_len != CuckooLayer::DataBytes(buckets, fp_bits)) {
    return BadField(where, "data length " + std::to_string(data_len) +
                               " does not match the geometry");
  }
  AlignedBuffer data;
  Status st = ReadData(r, stream, data_len, where, &data);
  if (!st.ok()) return st;
  *out = CuckooLayer(capacity, error, fp_bits, buckets, items, full == 1, victim_fp,
                     victim_bucket, relocations, std::move(data));
  return Status::Ok();
}

}  // namespace crawler::dedup
