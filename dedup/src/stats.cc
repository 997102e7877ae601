// FilterStats::ToJson: Boost.JSON from the described struct (filter.h), plus
// the variant's name and the growth options.
#include <boost/json.hpp>
#include <string>

#include "dedup/filter.h"

namespace crawler::dedup {

std::string FilterStats::ToJson(bool with_stripes) const {
  namespace json = boost::json;
  json::object o{{"variant", FilterTypeName(type)}};
  json::value figures = json::value_from(*this);
  for (auto& [key, value] : figures.as_object()) o[key] = std::move(value);
  if (!with_stripes) o.erase("per_stripe");
  o["scaling"] = options.scaling;
  o["expansion"] = options.expansion;
  o["tightening"] = options.tightening;
  return json::serialize(o);
}

}  // namespace crawler::dedup
