// FilterStats::ToJson: a flat JSON object, stable field names (documented in
// README "Dedup stats"), numbers in full precision.
#include <cstdio>
#include <string>

#include "dedup/filter.h"

namespace crawler::dedup {
namespace {

class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { *out_ += '{'; }
  ~JsonObject() { *out_ += '}'; }
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;

  void Key(const char* key) {
    if (!first_) *out_ += ',';
    first_ = false;
    *out_ += '"';
    *out_ += key;
    *out_ += "\":";
  }
  void Add(const char* key, uint64_t v) {
    Key(key);
    *out_ += std::to_string(v);
  }
  void Add(const char* key, double v) {
    Key(key);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    *out_ += buf;
  }
  void Add(const char* key, bool v) {
    Key(key);
    *out_ += v ? "true" : "false";
  }
  void Add(const char* key, const char* v) {
    Key(key);
    *out_ += '"';
    *out_ += v;  // only our own enum names: no escaping needed
    *out_ += '"';
  }

 private:
  std::string* out_;
  bool first_ = true;
};

void AddStripe(const StripeStats& s, std::string* out) {
  JsonObject o(out);
  o.Add("layers", uint64_t{s.layers});
  o.Add("items", s.items);
  o.Add("capacity", s.capacity);
  o.Add("bytes", s.bytes);
  o.Add("fill", s.fill);
  o.Add("estimated_fpr", s.estimated_fpr);
  o.Add("inserts_new", s.inserts_new);
  o.Add("inserts_duplicate", s.inserts_duplicate);
  o.Add("inserts_full", s.inserts_full);
  o.Add("erases", s.erases);
  o.Add("relocations", s.relocations);
  o.Add("saturations", s.saturations);
  o.Add("saturated", s.saturated);
}

}  // namespace

std::string FilterStats::ToJson(bool with_stripes) const {
  std::string out;
  {
    JsonObject o(&out);
    o.Add("variant", FilterTypeName(type));
    o.Add("stripes", uint64_t{stripes});
    o.Add("layers_min", uint64_t{layers_min});
    o.Add("layers_max", uint64_t{layers_max});
    o.Add("items", items);
    o.Add("capacity", capacity);
    o.Add("bytes", bytes);
    o.Add("bits_per_item", bits_per_item);
    o.Add("fill", fill);
    o.Add("estimated_fpr", estimated_fpr);
    o.Add("fpr_bound", fpr_bound);
    o.Add("inserts_new", inserts_new);
    o.Add("inserts_duplicate", inserts_duplicate);
    o.Add("inserts_full", inserts_full);
    o.Add("erases", erases);
    o.Add("relocations", relocations);
    o.Add("saturations", saturations);
    o.Add("saturated_stripes", uint64_t{saturated_stripes});
    o.Add("scaling", options.scaling);
    o.Add("expansion", options.expansion);
    o.Add("tightening", options.tightening);
    if (with_stripes) {
      o.Key("per_stripe");
      out += '[';
      for (size_t i = 0; i < per_stripe.size(); ++i) {
        if (i) out += ',';
        AddStripe(per_stripe[i], &out);
      }
      out += ']';
    }
  }
  return out;
}

}  // namespace crawler::dedup
