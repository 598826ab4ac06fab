// Every real trace against its golden counts (tests/golden/count_trace.py), plus the
// model's structural invariants.
#include "core/trace_info.h"
#include "test_util.h"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <fcntl.h>
#include <fstream>
#include <map>
#include <unistd.h>

using namespace strata;
using namespace strata::test;

namespace {

using Counts = std::map<std::string, uint64_t, std::less<>>;

struct Golden {
  uint64_t trace_events, timed_events, memory_events, profiler_steps, devices, cpu_gpu_rows, gpu_ops,
      gpu_ops_with_launch, fwdbwd_flow_pairs;
  int64_t rank, world_size, time_begin_ns, time_end_ns;
  Counts phases, categories;
};

std::filesystem::path golden_path(const std::filesystem::path& trace) {
  std::string name = trace.filename().string();
  for (std::string_view suffix : {".gz", ".json"})
    if (name.ends_with(suffix)) name.resize(name.size() - suffix.size());
  return std::filesystem::path(STRATA_GOLDEN_DIR) / (name + ".json");
}

Golden read_golden(const std::filesystem::path& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(path.string());
  auto u = [&](const char* key) { return uint64_t(doc[key].get_int64().value()); };
  auto i = [&](const char* key) { return doc[key].get_int64().value(); };
  auto counts = [&](const char* key) {
    Counts c;
    for (auto [k, v] : doc[key].get_object()) c.emplace(std::string(k), uint64_t(v.get_int64().value()));
    return c;
  };
  return {u("trace_events"), u("timed_events"), u("memory_events"), u("profiler_steps"), u("devices"),
          u("cpu_gpu_rows"), u("gpu_ops"), u("gpu_ops_with_launch"), u("fwdbwd_flow_pairs"), i("rank"),
          i("world_size"), i("time_begin_ns"), i("time_end_ns"), counts("phases"), counts("categories")};
}

void check_golden(const TraceModel& m, const Golden& g) {
  const LoadStats& st = m.stats;
  CHECK(st.trace_events == g.trace_events);
  static const char* phase_names[] = {"X", "i", "C", "s", "t", "f", "M", "B", "E", "other"};
  Counts phases, categories;
  for (size_t p = 0; p < std::size(st.per_phase); ++p)
    if (st.per_phase[p]) phases[phase_names[p]] = st.per_phase[p];
  for (size_t c = 0; c < st.per_category.size(); ++c)
    if (st.per_category[c]) categories[m.category_names[c]] += st.per_category[c];
  CHECK(phases == g.phases);
  CHECK(categories == g.categories);
  CHECK(m.ev.size() == g.timed_events);
  CHECK(m.memory.size() == g.memory_events);
  CHECK(profiler_steps(m).steps.size() == g.profiler_steps);
  CHECK(m.devices.size() == g.devices);
  CHECK(m.distributed.rank == g.rank);
  CHECK(m.distributed.world_size == g.world_size);
  uint64_t rows = 0;
  for (const Track& t : m.tracks) rows += !t.events.empty() && t.overflow_of == kNoTrack;
  CHECK(rows == g.cpu_gpu_rows);
  CHECK(st.gpu_ops == g.gpu_ops);
  CHECK(m.time_end - m.time_begin == g.time_end_ns - g.time_begin_ns);
  CHECK(st.gpu_ops_linked >= g.gpu_ops_with_launch);
  if (g.gpu_ops_with_launch == g.gpu_ops) CHECK(st.gpu_ops_linked == st.gpu_ops);
  if (g.fwdbwd_flow_pairs > 0) CHECK(st.fwdbwd_pairs >= 1);
}

// Tracks partition the events; each level is start-sorted, non-overlapping, at its depth;
// every parent contains its child.
void check_structure(const TraceModel& m) {
  const EventColumns& ev = m.ev;
  uint64_t covered = 0, bad_order = 0, bad_depth = 0, bad_parent = 0, bad_track = 0;
  for (uint32_t t = 0; t < m.tracks.size(); ++t) {
    const Track& tr = m.tracks[t];
    covered += tr.events.size();
    uint32_t at = tr.events.begin;
    for (size_t d = 0; d < tr.levels.size(); ++d) {
      const IndexRange& level = tr.levels[d];
      bad_track += level.begin != at;
      at = level.end;
      for (EventId e = level.begin; e < level.end; ++e) {
        bad_depth += ev.depth[e] != d;
        if (e > level.begin) bad_order += ev.start[e] < ev.start[e - 1] || ev.end(e - 1) > ev.start[e];
        if (d == 0) continue;
        EventId p = m.parent_of(e);
        bad_parent += p == kNoEvent || ev.depth[p] + 1 != ev.depth[e] || ev.start[p] > ev.start[e] ||
                      ev.end(p) < ev.end(e) || m.track_of(p) != t;
      }
    }
    bad_track += at != tr.events.end;
    if (tr.overflow != kNoTrack) bad_track += m.tracks[tr.overflow].overflow_of != t;
  }
  CHECK(covered == ev.size());
  CHECK(bad_order == 0);
  CHECK(bad_depth == 0);
  CHECK(bad_parent == 0);
  CHECK(bad_track == 0);
  uint64_t bad_links = 0;
  for (EventId e = 0; e < ev.size(); ++e) bad_links += ev.link[e] != kNoEvent && ev.link[e] >= ev.size();
  CHECK(bad_links == 0);
}

// A sample of events: their source bytes are a JSON object with the same name.
void check_sources(const TraceModel& m) {
  simdjson::dom::parser parser;
  size_t step = std::max<size_t>(1, m.ev.size() / 500);
  uint64_t checked = 0, bad = 0;
  for (EventId e = 0; e < m.ev.size(); e += EventId(step)) {
    std::string_view src = m.source_of(e);
    simdjson::dom::object obj;
    if (src.empty() || parser.parse(src.data(), src.size()).get_object().get(obj)) {
      ++bad;
      continue;
    }
    std::string_view name;
    if (obj["name"].get_string().get(name)) name = "";
    bad += name != m.name_of(e);
    ++checked;
  }
  CHECK(bad == 0);
  CHECK(checked > 0);
}

void check_warnings(const TraceModel& m) {
  uint64_t expected = m.stats.overlaps ? 1 : 0;
  CHECK(m.warning_count == expected);
  for (const std::string& w : m.warnings) CHECK_MESSAGE(w.find("overlapped") != std::string::npos, w);
}

}  // namespace

TEST_CASE("real traces match their golden counts and the model invariants" * doctest::timeout(300)) {
  auto traces = real_traces();  // tests/data/traces, what only ../shared/traces has, tests/data/torch2
  REQUIRE(!traces.empty());
  for (const auto& path : traces) {
    CAPTURE(path.filename().string());
    REQUIRE(std::filesystem::exists(golden_path(path)));
    LoadResult r = load_trace(path.string());
    INFO("error: ", r.error());
    REQUIRE(r.model);
    const TraceModel& m = *r.model;
    check_golden(m, read_golden(golden_path(path)));
    check_structure(m);
    check_sources(m);
    check_warnings(m);
  }
}

TEST_CASE("real traces: threads=1 and threads=8 give identical models" * doctest::timeout(300)) {
  for (const auto& path : real_traces()) {
    CAPTURE(path.filename().string());
    LoadOptions one, eight;
    one.threads = 1;
    eight.threads = 8;
    LoadResult a = load_trace(path.string(), nullptr, one), b = load_trace(path.string(), nullptr, eight);
    REQUIRE(a.model);
    REQUIRE(b.model);
    check_same_model(*a.model, *b.model);
  }
}

// Scalar top-level keys (baseTimeNanoseconds above all) are read wherever they stand.
TEST_CASE("real traces: absolute times include baseTimeNanoseconds") {
  for (const auto& path : real_traces()) {
    CAPTURE(path.filename().string());
    LoadResult r = load_trace(path.string());
    REQUIRE(r.model);
    Golden g = read_golden(golden_path(path));
    CHECK(r.model->time_begin == g.time_begin_ns);
    CHECK(r.model->time_end == g.time_end_ns);
  }
}

// A plain JSON file in the page cache is copied into memory, one that is not is mapped:
// both give the same model.
TEST_CASE("real traces: cached and uncached plain JSON files load the same") {
  auto traces = real_traces();
  REQUIRE(!traces.empty());
  auto plain = std::filesystem::temp_directory_path() / "strata-test-uncached.json";
  {
    LoadResult gz = load_trace(traces.front().string());
    REQUIRE(gz.model);
    std::ofstream(plain, std::ios::binary) << gz.model->source->view();
  }
  LoadResult cached = load_trace(plain.string());
  int fd = ::open(plain.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  LoadResult uncached = load_trace(plain.string());
  std::filesystem::remove(plain);
  REQUIRE(cached.model);
  REQUIRE(uncached.model);
  check_same_model(*cached.model, *uncached.model);
}
