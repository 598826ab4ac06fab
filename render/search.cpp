#include "render/search.h"

#include <algorithm>

namespace strata::render {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

}  // namespace

bool contains_ignoring_case(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

SearchResult find_by_name(const TraceModel& m, std::string_view query, const std::atomic<bool>* cancel) {
  SearchResult r;
  if (query.empty()) return r;
  auto cancelled = [&] {
    r.cancelled = cancel && cancel->load(std::memory_order_relaxed);
    return r.cancelled;
  };
  // Distinct names are few: match each once, then pick the events carrying them.
  std::vector<uint8_t> hit(m.strings.size(), 0);
  for (StrId i = 0; i < m.strings.size(); ++i) hit[i] = contains_ignoring_case(m.strings.view(i), query);
  constexpr EventId kCheckEvery = 1 << 16;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (e % kCheckEvery == 0 && cancelled()) return r;
    if (m.ev.name[e] < hit.size() && hit[m.ev.name[e]]) r.matches.push_back(e);
  }
  if (r.matches.size() <= kMaxTimeOrdered) {
    // (start, id) pairs sort without looking into the columns.
    std::vector<std::pair<Ns, EventId>> order(r.matches.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = {m.ev.start[r.matches[i]], r.matches[i]};
    if (cancelled()) return r;
    std::sort(order.begin(), order.end());
    r.by_time.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) r.by_time[i] = order[i].second;
  }
  return r;
}

}  // namespace strata::render
