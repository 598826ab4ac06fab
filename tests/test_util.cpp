#include "test_util.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace strata::test {

LoadResult load_json(std::string_view json, unsigned threads) {
  LoadOptions options;
  options.threads = threads;
  return load_trace_bytes("test.json", json, nullptr, options);
}

std::unique_ptr<TraceModel> must_load(std::string_view json, unsigned threads) {
  LoadResult r = load_json(json, threads);
  INFO("load error: ", r.error());
  REQUIRE(r.model != nullptr);
  CHECK(r.error().empty());
  return std::move(r.model);
}

EventId find_event(const TraceModel& m, std::string_view name) {
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name) return e;
  return kNoEvent;
}

uint32_t find_track(const TraceModel& m, int64_t pid, int64_t tid) {
  for (uint32_t t = 0; t < m.tracks.size(); ++t) {
    const Track& tr = m.tracks[t];
    const Process& p = m.processes[tr.process];
    if (p.pid == pid && p.pid_label == kNoStr && tr.tid == tid && tr.tid_label == kNoStr && tr.overflow_of == kNoTrack)
      return t;
  }
  return kNoTrack;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// Columns holding string or category ids are compared by text: ids are an implementation detail.
std::vector<std::string_view> names(const TraceModel& m) {
  std::vector<std::string_view> out(m.ev.size());
  for (EventId e = 0; e < m.ev.size(); ++e) out[e] = m.name_of(e);
  return out;
}

std::vector<std::string_view> categories(const TraceModel& m) {
  std::vector<std::string_view> out(m.ev.size());
  for (EventId e = 0; e < m.ev.size(); ++e) out[e] = m.category_names[m.ev.cat[e]];
  return out;
}

}  // namespace

void check_same_model(const TraceModel& a, const TraceModel& b) {
  REQUIRE(a.ev.size() == b.ev.size());
  CHECK(a.ev.start == b.ev.start);
  CHECK(a.ev.dur == b.ev.dur);
  CHECK(names(a) == names(b));
  CHECK(categories(a) == categories(b));
  CHECK(a.ev.phase == b.ev.phase);
  CHECK(a.ev.depth == b.ev.depth);
  CHECK(a.ev.id == b.ev.id);
  CHECK(a.ev.source_offset == b.ev.source_offset);
  CHECK(a.ev.link == b.ev.link);
  REQUIRE(a.tracks.size() == b.tracks.size());
  for (size_t t = 0; t < a.tracks.size(); ++t) {
    const Track &x = a.tracks[t], &y = b.tracks[t];
    CHECK(x.kind == y.kind);
    CHECK(x.tid == y.tid);
    CHECK(a.strings.view(x.name) == b.strings.view(y.name));
    CHECK(x.stream == y.stream);
    CHECK(x.events.begin == y.events.begin);
    CHECK(x.events.end == y.events.end);
    CHECK(x.levels.size() == y.levels.size());
    CHECK(x.overflow == y.overflow);
  }
  CHECK(a.processes.size() == b.processes.size());
  CHECK(a.memory.ts == b.memory.ts);
  CHECK(a.memory.bytes == b.memory.bytes);
  CHECK(a.memory.track == b.memory.track);
  CHECK(a.counters.size() == b.counters.size());
  CHECK(a.fwd_to_bwd == b.fwd_to_bwd);
  CHECK(a.bwd_to_fwd == b.bwd_to_fwd);
  CHECK(a.time_begin == b.time_begin);
  CHECK(a.time_end == b.time_end);
  CHECK(a.warning_count == b.warning_count);
  CHECK(a.stats.trace_events == b.stats.trace_events);
  CHECK(a.stats.flows_resolved == b.stats.flows_resolved);
  CHECK(a.stats.gpu_ops_linked == b.stats.gpu_ops_linked);
  CHECK(a.stats.overlaps == b.stats.overlaps);
}

}  // namespace strata::test
