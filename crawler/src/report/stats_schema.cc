// See stats_schema.h.
#include "report/stats_schema.h"

#include "output/json_fields.h"

namespace crawler::report {

namespace json = boost::json;

json::object ToJson(const StatsReport& r) {
  json::object o = json::value_from(r).as_object();
  o["crawl"] = output::json_fields::Flat(r.crawl, r.rates);
  return o;
}

StatsReport StatsReportFromJson(const json::value& v) {
  StatsReport r = output::json_fields::ReadLenient<StatsReport>(v);
  if (const json::value* c =
          v.is_object() ? v.as_object().if_contains("crawl") : nullptr) {
    output::json_fields::ReadLenient(*c, r.crawl);
    output::json_fields::ReadLenient(*c, r.rates);
  }
  return r;
}

}  // namespace crawler::report
