#include "render/search.h"

#include <algorithm>
#include <tuple>

namespace strata::render {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// Each name's time on one track: the union of its occurrences' spans (on a track, events
// nest or are disjoint, so a nested occurrence of the same name adds nothing).
void add_track_time(std::vector<std::tuple<uint32_t, Ns, Ns>>& spans, std::vector<NameMatches>& names) {
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i < spans.size();) {
    const uint32_t slot = std::get<0>(spans[i]);
    Ns covered_to = std::get<1>(spans[i]);
    for (; i < spans.size() && std::get<0>(spans[i]) == slot; ++i) {
      const auto [unused, s, e] = spans[i];
      names[slot].total += std::max<Ns>(0, e - std::max(s, covered_to));
      covered_to = std::max(covered_to, e);
    }
  }
  spans.clear();
}

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
  // Per name: count, longest, and time (matches come in id order, so track by track).
  constexpr uint32_t kNoSlot = UINT32_MAX;
  std::vector<uint32_t> slot(m.strings.size(), kNoSlot);  // a matching name's entry in r.names
  std::vector<std::tuple<uint32_t, Ns, Ns>> spans;  // (slot, start, end) on the current track
  uint32_t track = kNoTrack;
  for (size_t i = 0; i < r.matches.size(); ++i) {
    if (i % kCheckEvery == 0 && cancelled()) return r;
    const EventId e = r.matches[i];
    if (track == kNoTrack || e >= m.tracks[track].events.end) {
      add_track_time(spans, r.names);
      track = m.track_of(e);
    }
    uint32_t& s = slot[m.ev.name[e]];
    if (s == kNoSlot) {
      s = uint32_t(r.names.size());
      r.names.push_back({m.ev.name[e]});
    }
    NameMatches& n = r.names[s];
    ++n.count;
    if (n.longest == kNoEvent || m.ev.dur[e] > m.ev.dur[n.longest]) n.longest = e;
    spans.emplace_back(s, m.ev.start[e], m.ev.end(e));
  }
  add_track_time(spans, r.names);
  std::sort(r.names.begin(), r.names.end(), [&](const NameMatches& a, const NameMatches& b) {
    return a.total != b.total ? a.total > b.total : m.strings.view(a.name) < m.strings.view(b.name);
  });
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

std::vector<EventId> occurrences(const TraceModel& m, const SearchResult& r, StrId name) {
  std::vector<EventId> out;
  for (EventId e : r.matches)
    if (m.ev.name[e] == name) out.push_back(e);
  std::sort(out.begin(), out.end(), [&](EventId a, EventId b) { return std::pair(m.ev.start[a], a) < std::pair(m.ev.start[b], b); });
  return out;
}

}  // namespace strata::render
