#include "json_check.h"

#include <zlib.h>

#include <algorithm>

namespace strata::collector::test {

std::string read_file(const std::string& path) {
  std::string out;
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (f == nullptr) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

TraceSummary summarize(const std::string& json) {
  TraceSummary s;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json).get(doc); err) {
    s.error = simdjson::error_message(err);
    return s;
  }
  simdjson::dom::array devices;
  if (!doc["deviceProperties"].get(devices)) s.devices = static_cast<int>(devices.size());
  simdjson::dom::array events;
  if (auto err = doc["traceEvents"].get(events); err) {
    s.error = "no traceEvents";
    return s;
  }
  for (simdjson::dom::element e : events) {
    std::string_view ph, cat, name;
    if (e["ph"].get(ph)) continue;
    if (ph == "M") {
      ++s.metadata;
      continue;
    }
    if (ph == "s" || ph == "f") {
      uint64_t id = 0;
      if (!e["id"].get(id)) (ph == "s" ? s.flow_starts : s.flow_ends).insert(id);
      continue;
    }
    if (!e["cat"].get(cat)) ++s.categories[std::string(cat)];
    double ts = 0, dur = 0;
    if (e["ts"].get(ts)) continue;
    if (!e["dur"].get(dur) && dur < 0) s.durations_non_negative = false;
    s.min_ts = std::min(s.min_ts, ts);
    s.max_end = std::max(s.max_end, ts + dur);
    if (ph == "X" && !e["name"].get(name)) ++s.names[std::string(name)];
  }
  s.parsed = true;
  return s;
}

}  // namespace strata::collector::test
