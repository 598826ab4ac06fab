// The unchanged replay against the measured iterations of every real trace in tests/data
// (tests/data/traces among them), and what only ../shared/traces has (the bar: within
// 3%), and what every replay must
// keep: scenarios that only speed things up never predict a slower iteration.
#include "core/job/job.h"
#include "core/whatif/whatif.h"
#include "test_util.h"
#include "two_rank_job.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

namespace strata::test {
namespace {

using namespace whatif;

constexpr double kMaxError = 0.03;

// A JSON text that is a bare event array or has a "traceEvents" array.
bool holds_trace_events(std::string_view text) {
  size_t p = text.find_first_not_of(" \t\r\n");
  if (p != std::string_view::npos && text[p] == '[') return true;
  for (size_t k = text.find("\"traceEvents\""); k != std::string_view::npos; k = text.find("\"traceEvents\"", k + 1)) {
    size_t v = text.find_first_not_of(" \t\r\n:", k + 13);
    if (v != std::string_view::npos && text[v] == '[') return true;
  }
  return false;
}

// Every trace file under tests/data and what only ../shared/traces has, at any depth: gzipped,
// or plain JSON that holds trace events (tests/data also keeps summaries).
std::vector<std::filesystem::path> every_trace() {
  std::vector<std::filesystem::path> out;
  auto add = [&out](const std::filesystem::path& p) {
    if (p.extension() == ".gz" || (p.extension() == ".json" && holds_trace_events(read_file(p)))) out.push_back(p);
  };
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test_data_dir()))
    if (entry.is_regular_file()) add(entry.path());
  for (const auto& p : shared_only_files(true)) add(p);
  std::sort(out.begin(), out.end());
  return out;
}

void check_replay(const Graph& g, const std::string& name) {
  Report rep = what_if(g, default_scenarios(), name);
  REQUIRE(rep.measured > 0);
  const double error = double(rep.predicted - rep.measured) / double(rep.measured);
  MESSAGE(name << ": measured " << rep.measured << " ns, replayed " << rep.predicted << " ns (" << error * 100 << "%), "
               << g.size() << " vertices, " << g.stats.inferred_waits << " inferred waits");
  CHECK_MESSAGE(std::abs(error) <= kMaxError, name);
  CHECK(g.stats.cycles_broken == 0);
  CHECK(g.order.size() == 2 * g.size());
  // Every vertex replays with a non-negative length, and the critical path reaches the end.
  const ReplayResult& b = rep.baseline;
  for (Vertex v = 0; v < g.size(); ++v) REQUIRE(b.end[v] >= b.start[v]);
  if (g.size()) CHECK(!b.critical_path.empty());
  for (const ScenarioResult& s : rep.scenarios) CHECK_MESSAGE(s.predicted <= rep.predicted, name << ": " << s.scenario.name);
}

TEST_CASE("the unchanged replay is within 3% of the measured median iteration on every real trace") {
  std::vector<std::filesystem::path> traces = every_trace();
  REQUIRE(traces.size() >= 5);
  for (const auto& path : traces) {
    LoadResult r = load_trace(path.string());
    INFO(path.string(), ": ", r.error());
    REQUIRE(r.model);
    Annotation a = annotate(*r.model);
    Graph g = build_graph(*r.model, a);
    check_replay(g, path.filename().string());
  }
}

TEST_CASE("a job of two ranks replays within 3%, its collectives coupled") {
  STRATA_REQUIRE_TRACE(rank, "hta-nccl-a100-2ranks.pt.trace.json.gz");
  const Job job = two_rank_job(rank, "nccl");
  Graph g = build_job_graph(job);
  CHECK(g.parts.size() == 2);
  CHECK(g.stats.collectives_coupled > 0);
  check_replay(g, "hta-nccl-a100-2ranks ×2");
}

}  // namespace
}  // namespace strata::test
