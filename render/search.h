// Finding events by name: a case-insensitive substring match over the distinct names,
// then the events that carry them. Runs on a worker thread; `cancel` stops it early.
#pragma once

#include "core/trace_model.h"

#include <atomic>
#include <string_view>
#include <vector>

namespace strata::render {

struct SearchResult {
  std::vector<EventId> matches;  // ascending ids (highlighting looks them up)
  std::vector<EventId> by_time;  // the same in start order (next/previous); empty past kMaxTimeOrdered
  bool cancelled = false;
};

inline constexpr size_t kMaxTimeOrdered = size_t(1) << 22;

bool contains_ignoring_case(std::string_view hay, std::string_view needle);
SearchResult find_by_name(const TraceModel& m, std::string_view query, const std::atomic<bool>* cancel = nullptr);

}  // namespace strata::render
