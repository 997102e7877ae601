// Part of striped_filter.h: StripedFilter's file members (the bytes are in
// format.h).
#ifndef DEDUP_STRIPED_IO_H_
#define DEDUP_STRIPED_IO_H_

#include <cmath>
#include <string>

#include "striped_filter.h"

namespace crawler::dedup::internal {

// frozen: no other thread uses the filter; write each layer straight from
// its memory (no copy, no lock held across I/O).
template <typename Layer>
Status StripedFilter<Layer>::WriteImpl(std::FILE* out, const std::string& name,
                                       bool frozen) const {
  Status st = WritePreamble(out, name);
  if (!st.ok()) return st;
  ByteWriter head;
  head.U8(static_cast<uint8_t>(options_.type));
  head.U8(options_.scaling ? 1 : 0);
  head.U8(options_.allow_erase ? 1 : 0);
  head.U8(0);
  head.U32(options_.stripes);
  head.U64(options_.capacity);
  head.F64(options_.error_rate);
  head.F64(options_.expansion);
  head.F64(options_.tightening);
  st = WriteSection(out, name, kTagHead, head);
  uint64_t total_items = 0;
  for (uint32_t i = 0; i < options_.stripes && st.ok(); ++i) {
    ByteWriter w(frozen);
    {
      // The only pause a writer causes: copying one stripe under its lock.
      const Stripe& s = stripes_[i];
      SpinLockGuard lock(s.mu);
      size_t bytes = 64;
      for (const Layer& layer : s.layers) bytes += layer.data().size() + 96;
      w.Reserve(bytes);
      w.U32(i);
      w.U32(static_cast<uint32_t>(s.layers.size()));
      w.U64(s.inserts_new);
      w.U64(s.inserts_duplicate);
      w.U64(s.inserts_full);
      w.U64(s.erases);
      w.U64(s.saturations);
      for (const Layer& layer : s.layers) {
        EncodeLayer(layer, &w);
        total_items += layer.items();
      }
    }
    st = WriteSection(out, name, kTagStripe, w);
  }
  if (!st.ok()) return st;
  ByteWriter end;
  end.U32(options_.stripes);
  end.U32(0);
  end.U64(total_items);
  return WriteSection(out, name, kTagEnd, end);
}

template <typename Layer>
Status StripedFilter<Layer>::ReadStripe(uint32_t index, SectionReader* in,
                                        const std::string& name, uint64_t* items) {
  Status st = DecodeStripe(index, in, name, items);
  if (!st.ok()) {
    Status whole = in->FinishSkipping();
    return whole.ok() ? st : whole;
  }
  return in->Finish();
}

template <typename Layer>
Status StripedFilter<Layer>::DecodeStripe(uint32_t index, SectionReader* in,
                                          const std::string& name,
                                          uint64_t* items) NO_THREAD_SAFETY_ANALYSIS {
  const std::string what = name + ": stripe " + std::to_string(index);
  uint8_t head[48];
  if (!in->Read(head, sizeof(head)))
    return Corrupt(what + ": stripe header is cut short");
  ByteReader r(head, sizeof(head));
  Stripe& s = stripes_[index];
  uint32_t got_index = r.U32();
  uint32_t layers = r.U32();
  s.inserts_new = r.U64();
  s.inserts_duplicate = r.U64();
  s.inserts_full = r.U64();
  s.erases = r.U64();
  s.saturations = r.U64();
  if (got_index != index) {
    return Corrupt(what + ": section holds stripe " + std::to_string(got_index));
  }
  if (layers == 0 || layers > kMaxLayers) {
    return Corrupt(what + ": layer count " + std::to_string(layers) + " out of range");
  }
  constexpr size_t kHead =
      std::is_same_v<Layer, CuckooLayer> ? kCuckooHeadBytes : kBlockedHeadBytes;
  for (uint32_t l = 0; l < layers; ++l) {
    const std::string where = what + " layer " + std::to_string(l);
    uint8_t layer_head[kHead];
    if (!in->Read(layer_head, kHead))
      return Corrupt(where + ": layer record is cut short");
    ByteReader lr(layer_head, kHead);
    Layer layer;
    Status st = DecodeLayer(&lr, in, where, &layer);
    if (!st.ok()) return st;
    *items += layer.items();
    s.layers.push_back(std::move(layer));
  }
  if (in->remaining() != 0)
    return Corrupt(what + ": trailing bytes after the last layer");
  // A rebuilt first layer has its own error (kRebuiltErrorShare).
  s.rebuilt = options_.scaling &&
              std::abs(s.layers[0].error() - LayerError(0)) > 1e-9 * LayerError(0);
  Publish(s);
  return Status::Ok();
}

}  // namespace crawler::dedup::internal

#endif  // DEDUP_STRIPED_IO_H_
