// Steps, phases and verdicts on every real trace, against what each trace's own markers say
// (tests/golden/steps.json, counted by tests/golden/count_steps.py from the raw JSON), and the
// held-out CPU workloads of tests/data/cpu-workloads against how they were made.
#include "core/annotate/internal.h"
#include "core/annotate/markers.h"
#include "core/whatif/whatif.h"
#include "helpers.h"

#include <simdjson.h>

#include <algorithm>
#include <map>

using namespace strata;
using namespace strata::test;

namespace {

struct NamedRange {
  std::string name;
  uint64_t count = 0;
};
struct StepGolden {
  std::string file;
  int64_t iterations = -1;  // -1: the program said nothing
  std::string source;
  std::vector<NamedRange> ranges;
};

// tests/data/traces, ../shared/traces, tests/data/torch2, tests/data/cpu-workloads.
std::string resolve(const std::string& key) {
  if (std::string p = shared_trace(key.c_str()); !p.empty()) return p;
  for (const std::string& dir : {std::string(STRATA_TORCH2_DIR), std::string(STRATA_WORKLOADS_DIR)})
    if (std::string p = dir + "/" + key; exists(p)) return p;
  return {};
}

std::vector<StepGolden> read_steps() {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(STRATA_GOLDEN_DIR "/steps.json");
  std::vector<StepGolden> out;
  for (auto [key, v] : doc.get_object()) {
    StepGolden g;
    g.file = resolve(std::string(key));
    if (g.file.empty()) {  // that data set is not here: the others are checked
      MESSAGE("not here: " << key);
      continue;
    }
    int64_t n;
    if (!v["iterations"].get_int64().get(n)) g.iterations = n;
    std::string_view src;
    if (!v["source"].get_string().get(src)) g.source = src;
    for (auto r : v["ranges"].get_array()) g.ranges.push_back({std::string(r["name"].get_string().value()), uint64_t(r["count"].get_int64().value())});
    out.push_back(std::move(g));
  }
  return out;
}

// Time of [b, e) inside the tree's phase nodes that `pick` accepts.
template <class F>
Ns phase_time(const AnnotationTree& t, Ns b, Ns e, F&& pick) {
  Ns in = 0;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Phase && pick(n)) in += std::max<Ns>(0, std::min(e, t.end[n]) - std::max(b, t.begin[n]));
  return in;
}

// The events of the main thread named `name`.
std::vector<EventId> events_named(const TraceModel& m, const Annotation& a, std::string_view name) {
  std::vector<EventId> out;
  for (uint32_t t = a.main_track; t != kNoTrack && t < m.tracks.size(); t = m.tracks[t].overflow)
    for (EventId e = m.tracks[t].events.begin; e < m.tracks[t].events.end; ++e)
      if (m.name_of(e) == name) out.push_back(e);
  return out;
}

// A Loss phase node holds a loss op or a loss module's ops: what the ops are, not where they sit.
bool loss_by_identity(const AnnotationTree& t, NodeId ph) {
  for (NodeId n = ph + 1; n < t.subtree_end[ph]; ++n)
    if (annot::is_loss_op(t.name_of(n)) || (t.kind[n] == NodeKind::Layer && is_loss_module(t.name_of(n)))) return true;
  return false;
}

bool is_layer_event(const Annotation& a, EventId e) {
  for (NodeId n = 0; n < a.tree.size(); ++n)
    if (a.tree.kind[n] == NodeKind::Layer && a.tree.event[n] == e) return true;
  return false;
}

}  // namespace

TEST_CASE("every real trace: the iterations are the program's own, by the rule that found them" * doctest::timeout(600)) {
  const std::vector<StepGolden> golden = read_steps();
  STRATA_SKIP_UNLESS(!golden.empty(), "no trace of tests/golden/steps.json is here");
  for (const StepGolden& g : golden) {
    if (g.iterations < 0) continue;
    CAPTURE(g.file);
    auto m = load(g.file);
    Annotation a = annotate(*m);
    CHECK(int64_t(a.iterations.size()) == g.iterations);
    CHECK(iteration_source_name(a.iteration_source) == g.source);
  }
}

// A range the program named keeps its name: the phases over its time are named by it, or say
// the phase its name says; never Loss by position (only a loss op or module makes one inside
// it). Ranges around the model's ops (layers) are the forward's.
TEST_CASE("every real trace: no phase is named by position where a named range covers the time" * doctest::timeout(600)) {
  const std::vector<StepGolden> golden = read_steps();
  STRATA_SKIP_UNLESS(!golden.empty(), "no trace of tests/golden/steps.json is here");
  for (const StepGolden& g : golden) {
    if (g.ranges.empty()) continue;
    CAPTURE(g.file);
    auto m = load(g.file);
    Annotation a = annotate(*m);
    const AnnotationTree& t = a.tree;
    // PyTorch's own markers (Optimizer.zero_grad#, …) are more specific than a range around them.
    std::vector<std::pair<EventId, PhaseKind>> pytorch;
    for (uint32_t tr = a.main_track; tr != kNoTrack && tr < m->tracks.size(); tr = m->tracks[tr].overflow)
      for (EventId e = m->tracks[tr].events.begin; e < m->tracks[tr].events.end; ++e)
        if (RangeName n = read_range_name(m->name_of(e)); n.pytorch && n.phase) pytorch.push_back({e, *n.phase});
    auto said_by_pytorch = [&](NodeId n) {
      const Ns mid = t.begin[n] + t.duration(n) / 2;
      return std::any_of(pytorch.begin(), pytorch.end(), [&](auto& x) {
        return x.second == t.phase[n] && m->ev.start[x.first] <= mid && mid < m->ev.end(x.first);
      });
    };
    for (const NamedRange& r : g.ranges) {
      CAPTURE(r.name);
      const RangeName rn = read_range_name(r.name);
      Ns total = 0, right = 0, loss = 0, slack = 0;
      for (EventId e : events_named(*m, a, r.name)) {
        if (a.iterations.empty() || m->ev.start[e] >= a.iterations.back().end || m->ev.end(e) <= a.iterations.front().begin) continue;
        if (!rn.phase && is_layer_event(a, e)) continue;
        const Ns b = m->ev.start[e], en = m->ev.end(e);
        slack += 10'000;  // a phase starts at its first op, a few µs into the range
        total += phase_time(t, b, en, [](NodeId) { return true; });
        loss += phase_time(t, b, en, [&](NodeId n) { return t.phase[n] == PhaseKind::Loss && !loss_by_identity(t, n); });
        right += phase_time(t, b, en, [&](NodeId n) {
          if (said_by_pytorch(n)) return true;
          if (rn.phase) return t.phase[n] == *rn.phase || (t.phase[n] == PhaseKind::Loss && *rn.phase == PhaseKind::Forward);
          return t.name_of(n) == clean_range_name(r.name);
        });
      }
      if (total == 0) continue;
      if (!rn.phase || *rn.phase != PhaseKind::Loss) CHECK(loss * 100 <= total);
      CHECK(double(right + slack) >= 0.95 * double(total));
    }
  }
}

// The summary's verdicts and the what-if replay are one model: a phase of at least 10% of the
// iteration called GPU-bound is shortened by 2x faster kernels, one called launch-bound by no
// launch overhead, by at least 15% (measured through `strata whatif`'s own report).
TEST_CASE("every real trace with a GPU: the phase verdicts agree with the what-if replay" * doctest::timeout(600)) {
  const std::vector<StepGolden> golden = read_steps();
  STRATA_SKIP_UNLESS(!golden.empty(), "no trace of tests/golden/steps.json is here");
  for (const StepGolden& g : golden) {
    CAPTURE(g.file);
    auto m = load(g.file);
    Annotation a = annotate(*m);
    if (a.gpu_ops == 0 || a.verdicts.empty()) continue;
    whatif::Graph graph = whatif::build_graph(*m, a);
    whatif::Report r = whatif::what_if(graph, whatif::default_scenarios(), g.file);
    Ns iteration = 0;
    for (const PhaseVerdict& v : a.verdicts) iteration += v.measured;
    for (const PhaseVerdict& v : a.verdicts) {
      if (v.measured * 10 < iteration) continue;
      CAPTURE(v.phase);
      const char* scenario = v.bound == Bound::Gpu ? "kernels-2x" : v.bound == Bound::CpuLaunch ? "no-launch-overhead" : nullptr;
      if (!scenario) continue;
      for (const whatif::ScenarioResult& s : r.scenarios) {
        if (s.scenario.name != scenario) continue;
        for (const whatif::PhasePrediction& p : s.phases)
          if (p.phase == v.phase && p.kind == v.kind) CHECK(double(p.predicted) <= 0.85 * double(p.measured));
      }
    }
  }
}

// What tests/data/cpu-workloads/truth.json says of how the workloads were made.
TEST_CASE("CPU workloads: unmarked inference, serving steps and a pipeline, as they were made") {
  const std::string dir = STRATA_WORKLOADS_DIR;
  STRATA_SKIP_UNLESS(exists(dir + "/truth.json"), "tests/data/cpu-workloads is not here");
  {  // five forwards of eight identical blocks, no ranges: five iterations, not forty
    auto m = load(dir + "/inference-no-steps.json.gz");
    Annotation a = annotate(*m);
    CHECK(a.iteration_source == IterationSource::Periodic);
    CHECK(a.iterations.size() == 5);
  }
  for (const char* f : {"serving-like.json.gz", "serving-like-vllm.json.gz"}) {
    CAPTURE(f);
    auto m = load(dir + "/" + f);
    Annotation a = annotate(*m);
    REQUIRE(a.iterations.size() == 13);
    if (std::string_view(f) == "serving-like.json.gz") {  // SGLang-style names say which steps prefill
      std::map<std::string, int> stages;
      for (NodeId n = 0; n < a.tree.size(); ++n)
        if (a.tree.kind[n] == NodeKind::Phase && a.tree.phase[n] == PhaseKind::Forward) ++stages[std::string(a.tree.name_of(n))];
      CHECK(stages["Prefill"] == 2);
      CHECK(stages["Decode"] == 11);
    }
    for (const PhaseVerdict& v : a.verdicts) CHECK(v.kind != PhaseKind::Backward);
  }
  {  // activation checkpointing: the forward recomputed inside backward is shown as such
    auto m = load(dir + "/activation-checkpointing.json.gz");
    Annotation a = annotate(*m);
    CHECK(a.backward_recompute == 18);  // 6 checkpointed blocks, 3 steps
    CHECK(has_layer(a.tree, "Recompute (activation checkpointing)"));
    auto plain = load(dir + "/train-optimizer-only.json.gz");
    CHECK(annotate(*plain).backward_recompute == 0);
  }
  {  // DualPipe-like chunks: one segment per chunk, forward and backward interleaved in a step
    auto m = load(dir + "/pipeline-dualpipe-like-rank0.json.gz");
    Annotation a = annotate(*m);
    REQUIRE(a.iterations.size() == 3);
    std::vector<std::string> seq;
    for (NodeId c : a.tree.children(a.iterations[1].node)) seq.emplace_back(a.tree.name_of(c));
    CHECK(std::count(seq.begin(), seq.end(), "attn(F)") == 6);
    CHECK(std::count(seq.begin(), seq.end(), "mlp(W)") == 6);
    // F and B chunks of different micro-batches alternate: a backward chunk before the last forward one.
    auto last_f = std::find(seq.rbegin(), seq.rend(), "mlp(F)");
    auto first_b = std::find(seq.begin(), seq.end(), "mlp(B)");
    REQUIRE(last_f != seq.rend());
    REQUIRE(first_b != seq.end());
    CHECK(first_b - seq.begin() < seq.rend() - last_f - 1);
  }
}

// GPU idle gaps are put in the verdicts' classes; what none explains stays under a tenth.
TEST_CASE("every real trace with a GPU: idle causes leave under 10% of the idle time unexplained" * doctest::timeout(600)) {
  const std::vector<StepGolden> golden = read_steps();
  STRATA_SKIP_UNLESS(!golden.empty(), "no trace of tests/golden/steps.json is here");
  for (const StepGolden& g : golden) {
    CAPTURE(g.file);
    auto m = load(g.file);
    Annotation a = annotate(*m);
    const IdleGaps& idle = a.analyses.idle;
    if (idle.total == 0) continue;
    Ns sum = 0;
    for (Ns t : idle.by_cause) sum += t;
    CHECK(sum == idle.total);
    CHECK(idle.of(IdleCause::Other) * 10 < idle.total);
  }
}
