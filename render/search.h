// Finding events by name: a case-insensitive substring match over the distinct names,
// then the events that carry them, and per matching name its count and time (the search's
// results list). Runs on a worker thread; `cancel` stops it early.
#pragma once

#include "core/trace_model.h"

#include <atomic>
#include <string_view>
#include <vector>

namespace strata::render {

// One name that matched: how often it occurs and how much time it covers.
struct NameMatches {
  StrId name = kNoStr;
  uint32_t count = 0;     // events carrying the name
  Ns total = 0;           // time they cover: per track, the union of their spans (an occurrence
                          // nested in another of the same name is not counted twice), summed over tracks
  EventId longest = kNoEvent;
};

struct SearchResult {
  std::vector<EventId> matches;  // ascending ids (highlighting looks them up)
  std::vector<EventId> by_time;  // the same in start order (next/previous); empty past kMaxTimeOrdered
  std::vector<NameMatches> names;  // by total time, descending (then name)
  bool cancelled = false;
};

inline constexpr size_t kMaxTimeOrdered = size_t(1) << 22;

bool contains_ignoring_case(std::string_view hay, std::string_view needle);
SearchResult find_by_name(const TraceModel& m, std::string_view query, const std::atomic<bool>* cancel = nullptr);
// The events of `r` named `name`, in time order.
std::vector<EventId> occurrences(const TraceModel& m, const SearchResult& r, StrId name);

}  // namespace strata::render
