// Helpers that read a trace with a real JSON parser (simdjson) and check its structure.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace strata::collector::test {

struct TraceSummary {
  bool parsed = false;
  std::string error;
  std::map<std::string, int> categories;  // ph X/i events per cat
  std::set<uint64_t> flow_starts, flow_ends;
  int metadata = 0;
  int devices = 0;
  double min_ts = 1e300, max_end = -1e300;
  bool durations_non_negative = true;
  std::map<std::string, int> names;  // X event names
};

// Parses `json` and summarizes its traceEvents (failing checks are reported by the caller).
TraceSummary summarize(const std::string& json);
// Reads a plain or gzipped file.
std::string read_file(const std::string& path);

}  // namespace strata::collector::test
