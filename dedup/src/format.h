// On-disk format of a dedup filter (dedup.bin), and the byte codecs for it.
//
// All integers little-endian; doubles as their IEEE-754 binary64 bit pattern.
//
//   offset 0   "CRWLDDUP"       8 bytes  magic
//          8   version   u32             kFormatVersion (1)
//         12   reserved  u32             0
//         16   section*                  HEAD, then STRP x stripes (index order), then
//         END!
//
//   section := tag[4] | length u64 | payload[length] | xxh64 u64
//              xxh64 = XXH64(tag | length | payload, seed 0)
//
//   HEAD: type u8 | scaling u8 | allow_erase u8 | 0 u8 | stripes u32 |
//         capacity u64 | error_rate f64 | expansion f64 | tightening f64
//   STRP: index u32 | layers u32 | inserts_new u64 | inserts_duplicate u64 |
//         inserts_full u64 | erases u64 | saturations u64 | layer x layers
//     bloom / counting layer:
//         capacity u64 | error f64 | block_bits u32 | k u32 | blocks u64 |
//         items u64 | nonzero u64 | data_len u64 | data[data_len]
//         (bloom: bit p of a block is bit p%8 of byte p/8; counting: counter p
//          is the low nibble of byte p/2 for even p, the high for odd p)
//     cuckoo layer:
//         capacity u64 | error f64 | fp_bits u32 | full u8 | 0 u8 u8 u8 |
//         buckets u64 | items u64 | victim_fp u32 | 0 u32 | victim_bucket u64 |
//         relocations u64 | data_len u64 | data[data_len]
//         (slot s of bucket b is the fp_bits-bit little-endian field at bit
//          (b*4+s)*fp_bits of data)
//   END!: stripes u32 | 0 u32 | total_items u64
//
// A reader checks magic, then version, then each section's bounds and checksum
// before parsing it, then every field's range; the END! section proves the
// file was not cut at a section boundary. Any failure rejects the whole file.
//
// Thread-compatibility: the codecs are plain values; no shared state.
#ifndef DEDUP_FORMAT_H_
#define DEDUP_FORMAT_H_

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/status.h"
#include "bloom_impl.h"
#include "cuckoo_impl.h"

struct XXH64_state_s;  // xxhash.h

namespace crawler::dedup {

inline constexpr char kMagic[8] = {'C', 'R', 'W', 'L', 'D', 'D', 'U', 'P'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr char kTagHead[4] = {'H', 'E', 'A', 'D'};
inline constexpr char kTagStripe[4] = {'S', 'T', 'R', 'P'};
inline constexpr char kTagEnd[4] = {'E', 'N', 'D', '!'};

// Layer data is written as the bytes of its in-memory words.
static_assert(std::endian::native == std::endian::little,
              "layer data is stored as its little-endian memory image; add swaps for "
              "big-endian hosts");

using crawler::ByteReader;
using crawler::ByteWriter;

// Writes magic + version + reserved.
Status WritePreamble(std::FILE* out, const std::string& name);
// Writes one framed section (tag, length, payload, checksum).
Status WriteSection(std::FILE* out, const std::string& name, const char (&tag)[4],
                    const ByteWriter& payload);

// Reads the preamble; distinguishes a foreign file (kBadMagic), a short file
// (kTruncated) and a newer/older format (kBadVersion).
Status ReadPreamble(std::FILE* in, const std::string& name);

// Reads one section whose tag must be `tag`; verifies its length against
// what the file has left and its checksum before returning the payload.
// `what` names the section in errors ("stripe 3").
Status ReadSection(std::FILE* in, const std::string& name, const char (&tag)[4],
                   const std::string& what, std::vector<uint8_t>* payload);

// One section read as a stream, so that a layer's data goes from the file
// straight into its table (no payload buffer, no second copy: resume reads
// each byte once), checksummed on the way. Nothing read from it counts until
// Finish() has checked the checksum: a caller builds into an object it
// throws away on any error.
class SectionReader {
 public:
  SectionReader();
  ~SectionReader();
  SectionReader(const SectionReader&) = delete;
  SectionReader& operator=(const SectionReader&) = delete;

  // Reads and checks the tag and the length, as ReadSection does.
  Status Open(std::FILE* in, const std::string& name, const char (&tag)[4],
              const std::string& what);
  // Reads exactly n more payload bytes into dst. False when the payload (or
  // the file) has fewer: the caller reports the record as cut short.
  bool Read(void* dst, uint64_t n);
  uint64_t remaining() const { return remaining_; }
  // Reads the checksum; requires the whole payload read.
  Status Finish();
  // After a record failed to parse: reads (and sums) what is left of the
  // payload, then the checksum. Damage shows as the checksum mismatch or
  // truncation it is; Ok means the record is bad under a good checksum.
  Status FinishSkipping();

 private:
  std::FILE* in_ = nullptr;
  std::string name_, what_;
  uint64_t remaining_ = 0;
  ::XXH64_state_s* state_;  // xxhash.h's streaming state
  bool failed_ = false;
};

// Layer records (the "layer" productions above). Decode validates every field
// and the data length against the geometry; `where` names the layer in errors.
// The head is the record before data[data_len]; the data comes from `data`
// (a stream) or, when it is null, from `r` after the head.
inline constexpr size_t kBlockedHeadBytes = 56;
inline constexpr size_t kCuckooHeadBytes = 72;
void EncodeLayer(const BloomLayer& layer, ByteWriter* w);
void EncodeLayer(const CountingLayer& layer, ByteWriter* w);
void EncodeLayer(const CuckooLayer& layer, ByteWriter* w);
Status DecodeLayer(ByteReader* r, SectionReader* data, const std::string& where,
                   BloomLayer* out);
Status DecodeLayer(ByteReader* r, SectionReader* data, const std::string& where,
                   CountingLayer* out);
Status DecodeLayer(ByteReader* r, SectionReader* data, const std::string& where,
                   CuckooLayer* out);

}  // namespace crawler::dedup

#endif  // DEDUP_FORMAT_H_
