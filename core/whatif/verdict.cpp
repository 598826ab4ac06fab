// Phase verdicts from the replays (verdict.h).
#include "core/whatif/verdict.h"

#include "core/annotate/markers.h"
#include "core/text_format.h"
#include "core/whatif/scenarios.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace strata::whatif {

namespace {

// A host wait is called bound when the host spends at least this share of a phase in calls
// that wait for the GPU.
constexpr double kHostBlocked = 0.3;
// Phases repeat: they are judged on at most this many iterations from the middle of the trace
// (the replays of a 750-iteration trace would cost seconds and say the same).
constexpr size_t kJudgedIterations = 16;

using PhaseKey = std::pair<std::string, PhaseKind>;

// Per phase name: time per label, most first.
struct Tally {
  std::map<std::string, Ns> by;
  void add(const std::string& k, Ns t) { by[k] += t; }
  std::pair<std::string, Ns> top() const {
    std::pair<std::string, Ns> best{"", 0};
    for (auto& [k, t] : by)
      if (t > best.second) best = {k, t};
    return best;
  }
  Ns total() const {
    Ns s = 0;
    for (auto& [k, t] : by) s += t;
    return s;
  }
};

struct PhaseFacts {
  Tally host_waits;  // "cudaMemcpyAsync in aten::to"
  Tally launches;    // by call name
  Tally kernels;     // compute kernels by name
  Tally collectives; // communication kernels by name
  Tally ops;         // outermost CPU ops by name
};

// The outermost CPU op around an event on its thread, or kNoEvent.
EventId outer_op(const TraceModel& m, EventId e) {
  EventId found = kNoEvent;
  for (EventId p = m.parent_of(e); p != kNoEvent; p = m.parent_of(p))
    if (m.ev.category(p) == Cat::CpuOp) found = p;
  return found;
}

std::string short_name(std::string_view n) {
  return n.size() > 60 ? std::string(n.substr(0, 57)) + "..." : std::string(n);
}

// What the trace says each phase holds in the iterations [w0, w1): its host waits and
// launches (from the graph's vertices), its kernels and outermost CPU ops (from the tree).
std::map<PhaseKey, PhaseFacts> gather_facts(const TraceModel& m, const Annotation& a, const Graph& g, Ns w0, Ns w1) {
  std::map<PhaseKey, PhaseFacts> facts;
  const AnnotationTree& t = a.tree;
  auto key_of = [&](NodeId n) -> std::optional<PhaseKey> {
    NodeId ph = n != kNoNode ? t.ancestor(n, NodeKind::Phase) : kNoNode;
    if (ph == kNoNode || t.begin[ph] < w0 || t.begin[ph] >= w1) return std::nullopt;
    return PhaseKey{std::string(t.name_of(ph)), t.phase[ph]};
  };
  for (Vertex v = 0; v < g.size(); ++v) {
    if (g.kind[v] != VertexKind::HostWait && g.kind[v] != VertexKind::Launch) continue;
    const std::optional<PhaseKey> k = key_of(g.node[v]);
    if (!k || g.event[v] == kNoEvent) continue;
    std::string call(m.name_of(g.event[v]));
    if (g.kind[v] == VertexKind::Launch) {
      facts[*k].launches.add(call, g.dur[v]);
      continue;
    }
    EventId op = outer_op(m, g.event[v]);
    facts[*k].host_waits.add(op != kNoEvent ? call + " in " + std::string(m.name_of(op)) : call, g.dur[v]);
  }
  // The window's iterations are one range of nodes (pre-order).
  NodeId lo = NodeId(t.size()), hi = 0;
  for (const Iteration& it : a.iterations)
    if (it.node != kNoNode && it.begin >= w0 && it.begin < w1) lo = std::min(lo, it.node), hi = std::max(hi, t.subtree_end[it.node]);
  for (NodeId n = lo; n < hi; ++n) {
    if (t.kind[n] != NodeKind::Op || t.event[n] == kNoEvent) continue;
    NodeId p = t.parent[n];
    if (p != kNoNode && t.kind[p] == NodeKind::Op) continue;  // outermost ops only
    if (const std::optional<PhaseKey> k = key_of(n)) facts[*k].ops.add(std::string(t.name_of(n)), t.duration(n));
  }
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::GpuStream) continue;
    for (EventId e = tr.events.begin; e < tr.events.end && e < a.node_of_event.size(); ++e) {
      const NodeId n = a.node_of_event[e];
      if (n < lo || n >= hi || m.ev.category(e) != Cat::Kernel) continue;
      const std::optional<PhaseKey> k = key_of(n);
      if (!k) continue;
      std::string name(m.name_of(e));
      (is_communication_kernel(name) ? facts[*k].collectives : facts[*k].kernels).add(name, m.ev.dur[e]);
    }
  }
  return facts;
}

// One of the built-in scenarios, whose specs always parse.
Scenario named(const char* spec) { return parse_scenario(spec, 2.0).value(); }

// `iterations`: what the facts' sums are over.
void judge(PhaseVerdict& v, const PhaseFacts& f, Ns iterations) {
  const double m = double(std::max<Ns>(1, v.measured));
  auto share = [&](Ns x) { return 100.0 * double(x / iterations) / m; };
  if (v.host_blocked >= kHostBlocked) {
    auto [call, t] = f.host_waits.top();
    v.bound = Bound::HostBlocked;
    v.detail = strprintf("%.0f%% of it in calls that wait for the GPU, most in %s", 100 * v.host_blocked, short_name(call).c_str());
    // What the GPU was doing meanwhile, when a faster GPU side would shorten it.
    if (v.comm_2x >= kSensitive && v.comm_2x >= v.kernels_2x)
      v.detail += strprintf("; 2x faster collectives would save %.0f%% of it", 100 * v.comm_2x);
    else if (v.kernels_2x >= kSensitive)
      v.detail += strprintf("; 2x faster kernels would save %.0f%% of it", 100 * v.kernels_2x);
    return;
  }
  // The scenario that would save the most, each weighed by how strongly it changes its part
  // (faster kernels and collectives halve theirs; no launch overhead removes it).
  struct Option { Bound b; double save, weight; };
  // A phase is launch-bound by its own launches and communication-bound by its own collectives
  // (a phase can shrink when an earlier one does: that is the earlier one's matter).
  const bool launches = share(f.launches.total()) >= 5, collectives = f.collectives.total() > 0;
  Option opts[] = {{Bound::Gpu, v.kernels_2x, 2 * v.kernels_2x},
                   {Bound::CpuLaunch, launches ? v.no_launch_overhead : 0.0, v.no_launch_overhead},
                   {Bound::Communication, collectives ? v.comm_2x : 0.0, 2 * v.comm_2x}};
  const Option* best = nullptr;
  for (const Option& o : opts)
    if (o.save >= kSensitive && (!best || o.weight > best->weight)) best = &o;
  if (best) {
    v.bound = best->b;
    if (best->b == Bound::Gpu) {
      auto [k, t] = f.kernels.top();
      v.detail = strprintf("2x faster kernels would save %.0f%% of it; most GPU time in %s", 100 * v.kernels_2x, short_name(k).c_str());
    } else if (best->b == Bound::CpuLaunch) {
      v.detail = strprintf("%s of launch calls (%.0f%% of it); without them it would take %.0f%% less",
                           format_duration(f.launches.total() / iterations).c_str(), share(f.launches.total()),
                           100 * v.no_launch_overhead);
    } else {
      auto [k, t] = f.collectives.top();
      v.detail = strprintf("2x faster collectives would save %.0f%% of it; most in %s", 100 * v.comm_2x, short_name(k).c_str());
    }
    return;
  }
  Ns host_comm = 0;
  for (auto& [name, time] : f.ops.by)
    if (is_host_collective(name)) host_comm += time;
  if (share(host_comm) >= 50) {  // the host in collectives (a pipeline's send and recv)
    v.bound = Bound::Communication;
    v.detail = strprintf("%.0f%% of it in the host's collectives, most in %s", share(host_comm), short_name(f.ops.top().first).c_str());
    return;
  }
  auto [op, t] = f.ops.top();
  v.bound = v.kind == PhaseKind::DataLoading ? Bound::DataLoading : Bound::CpuCompute;
  v.detail = op.empty() ? "no faster kernels, launches or collectives would shorten it" : "most CPU time in " + short_name(op);
}

}  // namespace

std::vector<PhasePrediction> phase_predictions(const Graph& g, const ReplayResult& baseline, const ReplayResult& r) {
  std::vector<PhasePrediction> out;
  size_t iterations = 0;
  for (size_t p = 0; p < g.parts.size() && p < r.parts.size(); ++p) {
    const Part& part = g.parts[p];
    const AnnotationTree& t = part.annotation->tree;
    iterations += std::max<size_t>(1, part.boundaries.size() / 2);
    for (size_t k = 0; k < part.phases.size() && k < r.parts[p].phases.size(); ++k) {
      NodeId n = part.phases[k].node;
      std::string_view name = t.name_of(n);
      auto it = std::find_if(out.begin(), out.end(), [&](const PhasePrediction& x) { return x.phase == name && x.kind == t.phase[n]; });
      if (it == out.end()) it = out.insert(out.end(), {std::string(name), t.phase[n], 0, 0});
      it->measured += baseline.parts[p].phases[k];
      it->predicted += r.parts[p].phases[k];
    }
  }
  for (PhasePrediction& x : out) {
    x.measured /= Ns(std::max<size_t>(1, iterations));
    x.predicted /= Ns(std::max<size_t>(1, iterations));
  }
  return out;
}

void judge_phases(const TraceModel& m, Annotation& a, const Progress* progress) {
  a.verdicts.clear();
  if (a.iterations.empty()) return;
  IterationRange range;
  range.count = std::min(kJudgedIterations, a.iterations.size());
  range.first = (a.iterations.size() - range.count) / 2;
  const Ns w0 = a.iterations[range.first].begin, w1 = a.iterations[range.first + range.count - 1].end;
  Graph g = build_graph(m, a, progress, range);
  if (!g.status.is_ok()) return;
  const ReplayResult base = replay(g, {}, progress);
  auto under = [&](const char* spec) { return phase_predictions(g, base, replay(g, scenario_scale(g, named(spec)).scale, progress)); };
  const std::vector<PhasePrediction> gpu = under("kernels-2x"), launch = under("no-launch-overhead"), comm = under("comm-2x");
  if (progress && progress->cancelled()) return;
  const std::map<PhaseKey, PhaseFacts> facts = gather_facts(m, a, g, w0, w1);
  auto saving = [](const PhasePrediction& x) { return x.measured > 0 ? 1.0 - double(x.predicted) / double(x.measured) : 0.0; };
  for (size_t i = 0; i < gpu.size(); ++i) {
    PhaseVerdict v;
    v.phase = gpu[i].phase;
    v.kind = gpu[i].kind;
    v.measured = gpu[i].measured;
    v.kernels_2x = saving(gpu[i]);
    v.no_launch_overhead = i < launch.size() ? saving(launch[i]) : 0;
    v.comm_2x = i < comm.size() ? saving(comm[i]) : 0;
    auto f = facts.find({v.phase, v.kind});
    static const PhaseFacts kNone;
    const PhaseFacts& pf = f != facts.end() ? f->second : kNone;
    const Ns iters = Ns(range.count);
    v.host_blocked = v.measured > 0 ? double(pf.host_waits.total() / iters) / double(v.measured) : 0.0;
    judge(v, pf, iters);
    a.verdicts.push_back(std::move(v));
  }
  for (AnnotationTree* t : {&a.tree, &a.reduced})
    for (NodeId n = 0; n < t->size(); ++n) {
      if (t->kind[n] != NodeKind::Phase) continue;
      for (const PhaseVerdict& v : a.verdicts)
        if (v.phase == t->name_of(n) && v.kind == t->phase[n]) t->bound[n] = v.bound;
    }
}

}  // namespace strata::whatif
