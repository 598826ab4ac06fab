// Running the scenarios and writing the report.
#include "core/whatif/whatif.h"

#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strata::whatif {

namespace {

const char* kAssumptions[] = {
    "CPU time between CUDA calls is kept as measured: faster GPU work does not make the host faster; a thread's idle "
    "stretch that ended just after another thread's call or work is a wait for it (inferred from timing)",
    "a GPU op starts after the op before it on its stream, its launch (plus, once the GPU catches up, the trace's shortest launch latency) and the "
    "events its stream waits for; a delay nothing in the trace explains is kept as a fixed inferred wait",
    "a blocking call (synchronize, synchronous copy) returns after the GPU work it waits for, with its measured return latency",
    "an iteration ends where the training loop's thread reaches its end, or later when the GPU work issued before then "
    "runs further past it than it did in the trace",
    "a scenario's iteration is the unchanged replay's median scaled by how much the replayed span of all iterations "
    "changes: single iterations can trade work with their neighbours, the span cannot",
};

double saving(Ns base, Ns x) { return base > 0 ? 1.0 - double(x) / double(base) : 0; }

// The inferred waits' time over the replayed span of all iterations (all ranks'): how much of
// the prediction rests on delays the trace does not explain.
double inferred_wait_share(const Graph& g, const Report& r) {
  Ns window = 0;
  for (const PartReplay& p : r.baseline.parts) window += p.window;
  return window > 0 ? double(g.stats.inferred_wait_time) / double(window) : 0.0;
}

std::string percent(double f) { return strprintf("%.0f%%", f * 100); }

}  // namespace

Report what_if(const Graph& g, const std::vector<Scenario>& scenarios, std::string file, const Progress* progress) {
  Report r;
  r.file = std::move(file);
  r.job = g.parts.size() > 1;
  for (const Part& p : g.parts) r.measured = std::max(r.measured, p.measured_median);
  auto t0 = std::chrono::steady_clock::now();
  r.baseline = replay(g, {}, progress);
  r.replay_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.predicted = r.baseline.iteration;
  for (const Scenario& s : scenarios) {
    if (progress && progress->cancelled()) {
      r.status = Status::cancelled();
      return r;
    }
    ScenarioScale sc = scenario_scale(g, s);
    ReplayResult rr = replay(g, sc.scale, progress);
    ScenarioResult out;
    out.scenario = s;
    out.changed = sc.changed;
    out.phases = phase_predictions(g, r.baseline, rr);
    out.notes = std::move(sc.notes);
    for (size_t p = 0; p < rr.parts.size(); ++p) {
      const PartReplay& base = r.baseline.parts[p];
      const Ns x = base.window > 0 ? Ns(std::llround(double(base.median) * double(rr.parts[p].window) / double(base.window))) : base.median;
      out.part_predicted.push_back(x);
      out.predicted = std::max(out.predicted, x);
      out.iterations.push_back(std::move(rr.parts[p].iterations));
    }
    out.speedup = out.predicted > 0 ? double(r.predicted) / double(out.predicted) : 1;
    r.scenarios.push_back(std::move(out));
  }
  r.notes = g.notes;
  for (const Part& p : g.parts) {
    if (p.whole_trace) r.notes.push_back("no iterations were found: the whole trace is replayed as one iteration");
    if (!p.has_gpu) r.notes.push_back("the trace has no GPU work: the replay is of CPU time only, and GPU scenarios change nothing");
    if (r.job) break;  // said once for a job
  }
  return r;
}

std::string report_json(const Graph& g, const Report& r) {
  JsonWriter w;
  w.begin_object();
  w.field("file", r.file).field("job", r.job);
  w.key("baseline").begin_object();
  w.field("measured_ns", int64_t(r.measured)).field("predicted_ns", int64_t(r.predicted));
  w.field("error", r.measured > 0 ? double(r.predicted - r.measured) / double(r.measured) : 0.0);
  w.end_object();
  w.key("scenarios").begin_array();
  for (const ScenarioResult& s : r.scenarios) {
    w.begin_object().field("name", s.scenario.name).field("predicted_ns", int64_t(s.predicted)).field("speedup", s.speedup);
    w.field("saving", saving(r.predicted, s.predicted)).field("description", describe(s.scenario));
    w.field("changed_vertices", s.changed);
    w.key("phases").begin_array();
    for (const PhasePrediction& p : s.phases)
      w.begin_object().field("phase", p.phase).field("kind", phase_name(p.kind)).field("measured_ns", int64_t(p.measured))
          .field("predicted_ns", int64_t(p.predicted)).end_object();
    w.end_array();
    w.key("notes").begin_array();
    for (const std::string& n : s.notes) w.value(n);
    w.end_array().end_object();
  }
  w.end_array();
  // Per rank (one for a single trace): iterations measured and predicted.
  w.key("ranks").begin_array();
  for (size_t p = 0; p < g.parts.size(); ++p) {
    const Part& part = g.parts[p];
    const Annotation& a = *part.annotation;
    w.begin_object().field("rank", part.rank).field("file", part.model->path).field("clock_offset_ns", int64_t(part.clock_offset));
    w.field("iteration_source", iteration_source_name(a.iteration_source)).field("whole_trace", part.whole_trace);
    w.field("measured_ns", int64_t(part.measured_median)).field("predicted_ns", int64_t(r.baseline.parts[p].median));
    w.field("launch_latency_ns", int64_t(part.launch_latency));
    w.key("iterations").begin_array();
    for (size_t i = 0; i < r.baseline.parts[p].iterations.size(); ++i) {
      w.begin_object();
      if (i < a.iterations.size()) w.field("name", a.iterations[i].name).field("measured_ns", int64_t(a.iterations[i].end - a.iterations[i].begin));
      w.field("predicted_ns", int64_t(r.baseline.parts[p].iterations[i])).field("partial", part.partial[i] != 0);
      w.key("scenarios_ns").begin_array();
      for (const ScenarioResult& s : r.scenarios) w.value(int64_t(s.iterations[p][i]));
      w.end_array().end_object();
    }
    w.end_array().end_object();
  }
  w.end_array();
  const GraphStats& st = g.stats;
  uint64_t cpu = 0, gpu = 0;
  for (const Lane& l : g.lanes) (l.gpu ? gpu : cpu) += 1;
  w.key("graph").begin_object();
  w.field("vertices", uint64_t(g.size())).field("edges", uint64_t(g.edges.size()));
  w.field("cpu_threads", cpu).field("gpu_streams", gpu);
  w.key("edges_by_kind").begin_object();
  for (size_t k = 0; k < size_t(EdgeKind::Count); ++k) w.field(edge_kind_name(EdgeKind(k)), st.edges[k]);
  w.end_object();
  w.key("host_waits").begin_object();
  w.field("device", st.host_waits[size_t(HostWait::Device)]).field("stream", st.host_waits[size_t(HostWait::Stream)]);
  w.field("event", st.host_waits[size_t(HostWait::Event)]).field("copy", st.host_waits[size_t(HostWait::Copy)]);
  w.end_object();
  w.key("stream_waits").begin_object().field("resolved", st.stream_waits_resolved).field("guessed", st.stream_waits_guessed);
  w.field("unresolved", st.stream_waits_unresolved).end_object();
  w.field("inferred_waits", st.inferred_waits).field("inferred_wait_ns", int64_t(st.inferred_wait_time));
  w.field("inferred_wait_share", inferred_wait_share(g, r)).field("inferred_dependencies", st.inferred_dependencies);
  w.field("idle_stretches", st.idle_stretches).field("wakes", st.wakes);
  w.field("dropped_edges", st.dropped_edges).field("collectives_coupled", st.collectives_coupled);
  w.field("cycles_broken", st.cycles_broken);
  w.end_object();
  // What bounds the unchanged replay's last point: time on its critical path per kind.
  w.key("critical_path").begin_object();
  Ns per_kind[kVertexKinds] = {};
  for (Vertex v : r.baseline.critical_path) per_kind[size_t(g.kind[v])] += r.baseline.end[v] - r.baseline.start[v];
  w.field("vertices", uint64_t(r.baseline.critical_path.size()));
  for (size_t k = 0; k < kVertexKinds; ++k) w.field(std::string(vertex_kind_name(VertexKind(k))) + "_ns", int64_t(per_kind[k]));
  w.end_object();
  w.key("assumptions").begin_array();
  for (const char* a : kAssumptions) w.value(a);
  w.end_array();
  w.key("notes").begin_array();
  for (const std::string& n : r.notes) w.value(n);
  w.end_array();
  w.field("replay_seconds", r.replay_seconds);
  w.end_object();
  return w.str() + "\n";
}

std::string report_text(const Graph& g, const Report& r) {
  std::string o = "what if: " + r.file + "\n";
  size_t iterations = 0;
  for (const PartReplay& p : r.baseline.parts) iterations += p.iterations.size();
  const double err = r.measured > 0 ? double(r.predicted - r.measured) / double(r.measured) * 100 : 0;
  o += strprintf("  %s%zu iteration%s: measured median %s, replayed unchanged %s (%+.2f%%)\n",
                 r.job ? strprintf("%zu ranks, ", g.parts.size()).c_str() : "", iterations, iterations == 1 ? "" : "s",
                 format_duration(r.measured).c_str(), format_duration(r.predicted).c_str(), err);
  uint64_t cpu = 0, gpu = 0;
  for (const Lane& l : g.lanes) (l.gpu ? gpu : cpu) += 1;
  const GraphStats& st = g.stats;
  uint64_t waits = 0;
  for (uint64_t x : st.host_waits) waits += x;
  o += strprintf("  graph: %zu vertices, %zu edges; %llu CPU threads, %llu GPU streams; %llu host waits, %llu stream waits, "
                 "%llu inferred waits (%s, %.1f%% of the replayed iterations), %llu inferred dependencies\n",
                 g.size(), g.edges.size(), (unsigned long long)cpu, (unsigned long long)gpu, (unsigned long long)waits,
                 (unsigned long long)(st.stream_waits_resolved + st.stream_waits_guessed), (unsigned long long)st.inferred_waits,
                 format_duration(st.inferred_wait_time).c_str(), 100 * inferred_wait_share(g, r),
                 (unsigned long long)st.inferred_dependencies);
  // Ranked, largest saving first.
  std::vector<const ScenarioResult*> ranked;
  for (const ScenarioResult& s : r.scenarios) ranked.push_back(&s);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto* x, auto* y) { return x->predicted < y->predicted; });
  o += "\n  scenario                          predicted     speed-up  saves\n";
  for (const ScenarioResult* s : ranked)
    o += strprintf("  %-32s %12s    %6.2fx  %5.1f%%\n", s->scenario.name.c_str(), format_duration(s->predicted).c_str(), s->speedup,
                   saving(r.predicted, s->predicted) * 100);
  if (!ranked.empty()) {
    o += "\n  ";
    for (size_t i = 0; i < ranked.size(); ++i) {
      std::string p = phrase(ranked[i]->scenario);
      std::string pct = percent(saving(r.predicted, ranked[i]->predicted));
      o += i == 0 ? p + " would save " + pct : "; " + p + " " + pct;
    }
    o += ".\n";
  }
  o += "\n";
  for (const ScenarioResult* s : ranked) {
    o += "  " + s->scenario.name + ": " + describe(s->scenario) + "\n";
    for (const std::string& n : s->notes) o += "    note: " + n + "\n";
  }
  for (const std::string& n : r.notes) o += "  note: " + n + "\n";
  return o;
}

}  // namespace strata::whatif
