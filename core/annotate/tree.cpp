// The annotation tree: finalizing the built nodes into pre-order columns, attaching every
// event to its node, and the per-node metrics (GPU busy union, span, kernel count, share,
// what bounds it).
#include "core/annotate/internal.h"
#include "core/intervals.h"

#include <algorithm>
#include <numeric>

namespace strata {

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Root: return "root";
    case NodeKind::Iteration: return "iteration";
    case NodeKind::Phase: return "phase";
    case NodeKind::Layer: return "layer";
    case NodeKind::Op: return "op";
    case NodeKind::Group: return "group";
  }
  return "?";
}

const char* phase_name(PhaseKind p) {
  switch (p) {
    case PhaseKind::DataLoading: return "Data loading";
    case PhaseKind::Forward: return "Forward";
    case PhaseKind::Loss: return "Loss";
    case PhaseKind::ZeroGrad: return "Zero grad";
    case PhaseKind::Backward: return "Backward";
    case PhaseKind::Optimizer: return "Optimizer step";
    case PhaseKind::Other: return "Other";
    case PhaseKind::Count: break;
  }
  return "?";
}

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::Unknown: return "unknown";
    case Bound::Gpu: return "GPU";
    case Bound::CpuLaunch: return "CPU launch";
    case Bound::DataLoading: return "data loading";
    case Bound::HostBlocked: return "host blocked";
    case Bound::Communication: return "communication";
    case Bound::CpuCompute: return "CPU compute";
  }
  return "?";
}

const char* layer_source_name(LayerSource s) {
  switch (s) {
    case LayerSource::None: return "none";
    case LayerSource::Module: return "nn.Module events";
    case LayerSource::UserAnnotation: return "user annotations";
    case LayerSource::Heuristic: return "op-sequence heuristics";
  }
  return "?";
}

const char* iteration_source_name(IterationSource s) {
  switch (s) {
    case IterationSource::ProfilerStep: return "ProfilerStep ranges";
    case IterationSource::IterationRanges: return "iteration ranges";
    case IterationSource::StepRanges: return "step ranges";
    case IterationSource::OptimizerStep: return "Optimizer.step markers";
    case IterationSource::DataLoader: return "DataLoader markers";
    case IterationSource::ModuleCalls: return "top-level module calls";
    case IterationSource::Periodic: return "repeating op sequence";
    case IterationSource::WholeTrace: return "whole trace";
    case IterationSource::None: return "none";
  }
  return "?";
}

std::vector<NodeId> AnnotationTree::children(NodeId n) const {
  std::vector<NodeId> out;
  for (NodeId c = first_child(n); c != kNoNode; c = next_sibling(c)) out.push_back(c);
  return out;
}

std::string AnnotationTree::path(NodeId n) const {
  std::vector<NodeId> chain;
  for (NodeId p = n; p != kNoNode && kind[p] != NodeKind::Root; p = parent[p]) chain.push_back(p);
  std::string s;
  for (size_t i = chain.size(); i-- > 0;) {
    s += name_of(chain[i]);
    if (i) s += '/';
  }
  return s;
}

NodeId AnnotationTree::ancestor(NodeId n, NodeKind k) const {
  for (NodeId p = n; p != kNoNode; p = parent[p])
    if (kind[p] == k) return p;
  return kNoNode;
}

size_t AnnotationTree::bytes() const {
  return size() * (sizeof(NodeKind) + sizeof(StrId) + 2 * sizeof(NodeId) + 2 + 1 + 2 * sizeof(Ns) + sizeof(EventId) +
                   sizeof(NodeId) + 4 + 4 * sizeof(Ns) + 4 + 4 + 1) +
         strings.bytes();
}

Bound classify_bound(PhaseKind phase, Ns dur, uint64_t gpu_ops, Ns gpu_busy, Ns gpu_begin, Ns gpu_end, Ns sync) {
  if (phase == PhaseKind::DataLoading) return Bound::DataLoading;
  if (gpu_ops == 0 && sync == 0) return Bound::Unknown;
  // The GPU bounds what it keeps busy most of the time: the item's own time, or, when its GPU
  // work outlasts it (queued work), the time that work takes.
  const double busy = double(gpu_busy);
  if (busy >= 0.8 * double(std::max<Ns>(dur, 1)) || (gpu_end - gpu_begin > dur && busy >= 0.8 * double(gpu_end - gpu_begin)))
    return Bound::Gpu;
  if (double(sync) >= 0.3 * double(dur)) return Bound::HostBlocked;
  return Bound::CpuLaunch;
}

namespace annot {

void finalize_tree(Context& c, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of) {
  size_t n = b.size();
  AnnotationTree& t = a.tree;
  // Children in time order, then a pre-order walk.
  std::vector<uint32_t> first(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (b.parent[i] != kNoNode) ++first[b.parent[i] + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<NodeId> kids(n), fill(first.begin(), first.end() - 1);
  for (size_t i = 0; i < n; ++i)
    if (b.parent[i] != kNoNode) kids[fill[b.parent[i]]++] = NodeId(i);
  for (size_t p = 0; p < n; ++p)
    std::sort(kids.begin() + first[p], kids.begin() + first[p + 1], [&](NodeId x, NodeId y) {
      return b.begin[x] != b.begin[y] ? b.begin[x] < b.begin[y] : x < y;
    });
  std::vector<NodeId> order, stack, new_id(n, kNoNode);
  order.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (b.parent[i] == kNoNode) stack.push_back(NodeId(i));
  std::reverse(stack.begin(), stack.end());
  while (!stack.empty()) {
    NodeId x = stack.back();
    stack.pop_back();
    new_id[x] = NodeId(order.size());
    order.push_back(x);
    for (uint32_t k = first[x + 1]; k-- > first[x];) stack.push_back(kids[k]);
  }
  size_t m = order.size();
  t.kind.resize(m);
  t.name.resize(m);
  t.parent.resize(m);
  t.subtree_end.resize(m);
  t.depth.resize(m);
  t.phase.resize(m);
  t.begin.resize(m);
  t.end.resize(m);
  t.event.resize(m);
  t.mirror.resize(m);
  t.members.assign(m, 1);
  t.origin.resize(m);
  for (size_t i = 0; i < m; ++i) {
    NodeId o = order[i];
    t.kind[i] = b.kind[o];
    t.name[i] = b.name[o];
    t.parent[i] = b.parent[o] == kNoNode ? kNoNode : new_id[b.parent[o]];
    t.depth[i] = t.parent[i] == kNoNode ? 0 : uint16_t(t.depth[t.parent[i]] + 1);
    t.phase[i] = b.phase[o];
    t.begin[i] = b.begin[o];
    t.end[i] = std::max(b.begin[o], b.end[o]);
    t.event[i] = b.event[o];
    t.mirror[i] = b.mirror[o] == kNoNode ? kNoNode : new_id[b.mirror[o]];
    t.subtree_end[i] = NodeId(i + 1);
    t.origin[i] = NodeId(i);
  }
  for (size_t i = m; i-- > 1;)
    if (t.parent[i] != kNoNode) t.subtree_end[t.parent[i]] = std::max(t.subtree_end[t.parent[i]], t.subtree_end[i]);
  t.strings = std::move(b.strings);
  for (auto& it : a.iterations)
    if (it.node != kNoNode) it.node = new_id[it.node];

  // Every event's node: op roots have theirs; descendants inherit, GPU ops follow their launch.
  const TraceModel& md = c.m;
  for (auto& x : node_of)
    if (x != kNoNode) x = new_id[x];
  parallel_for(c.threads, md.tracks.size(), [&](size_t ti) {
    const Track& tr = md.tracks[ti];
    if (tr.kind == TrackKind::GpuStream) return;
    for (EventId e = tr.events.begin; e < tr.events.end; ++e)
      if (node_of[e] == kNoNode && c.parent[e] != kNoEvent && (c.flags[e] & Context::kUnderOp)) node_of[e] = node_of[c.parent[e]];
  });
  // GPU ops whose launch is in a node follow it; launches outside ops go by their time to a
  // phase; GPU ops with no launch in the trace (queued before the window) only to an iteration
  // (not profiler ranges: their made-up times say nothing of when they ran).
  struct PhaseSpan { Ns b, e; NodeId n; };
  std::vector<PhaseSpan> phases, iterations;
  for (size_t i = 0; i < m; ++i) {
    if (t.kind[i] == NodeKind::Phase) phases.push_back({t.begin[i], t.end[i], NodeId(i)});
    if (t.kind[i] == NodeKind::Iteration) iterations.push_back({t.begin[i], t.end[i], NodeId(i)});
  }
  std::sort(iterations.begin(), iterations.end(), [](auto& x, auto& y) { return x.b < y.b; });
  std::sort(phases.begin(), phases.end(), [](auto& x, auto& y) { return x.b < y.b; });
  auto span_at = [&](const std::vector<PhaseSpan>& v, Ns ts) -> NodeId {
    auto it = std::upper_bound(v.begin(), v.end(), ts, [](Ns x, const PhaseSpan& p) { return x < p.b; });
    if (it == v.begin()) return kNoNode;
    --it;
    return ts < it->e ? it->n : kNoNode;
  };
  for (size_t ti = 0; ti < md.tracks.size(); ++ti) {
    const Track& tr = md.tracks[ti];
    if (tr.kind != TrackKind::GpuStream) continue;
    for (EventId g = tr.events.begin; g < tr.events.end; ++g) {
      EventId l = md.host_side_of(g);
      if (l != kNoEvent && node_of[l] != kNoNode) node_of[g] = node_of[l];
      else if (l != kNoEvent) node_of[g] = span_at(phases, md.ev.start[l]);
      else if (md.ev.category(g) != Cat::ProfilerRange) node_of[g] = span_at(iterations, md.ev.start[g]);
    }
  }
  a.gpu_ops = c.gpu_ops.size();
  a.gpu_ops_annotated = 0;
  for (EventId g : c.gpu_ops) a.gpu_ops_annotated += node_of[g] != kNoNode;
}

void compute_metrics(Context& c, AnnotationTree& t, const std::vector<NodeId>& node_of) {
  size_t n = t.size();
  const auto& ev = c.m.ev;
  t.gpu_busy.assign(n, 0);
  t.gpu_begin.assign(n, 0);
  t.gpu_end.assign(n, 0);
  t.kernels.assign(n, 0);
  t.sync.assign(n, 0);
  t.share.assign(n, 0);
  t.bound.assign(n, Bound::Unknown);
  // A node's GPU ops arrive in start order, so its busy union grows one interval at a time,
  // kept in the gpu_busy and gpu_end columns themselves (no per-node scratch columns).
  for (EventId g : c.gpu_ops) {
    NodeId x = node_of[g];
    Ns s = ev.start[g], e = ev.end(g);
    for (NodeId p = x; p != kNoNode; p = t.parent[p]) {
      if (t.kernels[p] == 0) t.gpu_begin[p] = s;
      IntervalUnion::add_to(t.gpu_busy[p], t.gpu_end[p], t.kernels[p]++ == 0, s, e);
    }
  }
  for (size_t i = 0; i < n; ++i) t.gpu_busy[i] = IntervalUnion::total_of(t.gpu_busy[i], t.gpu_end[i], t.kernels[i] > 0);
  // Time in synchronizing calls under each node. They are few: (node, time) pairs, summed
  // over each node's pre-order range below, instead of a column walked up per call.
  std::vector<std::pair<NodeId, Ns>> sync;
  const TraceModel& m = c.m;
  for (size_t ti = 0; ti < m.tracks.size(); ++ti) {
    if (m.tracks[ti].kind != TrackKind::CpuThread) continue;
    for (EventId e = m.tracks[ti].events.begin; e < m.tracks[ti].events.end; ++e) {
      NodeId x = node_of[e];
      if (x == kNoNode) continue;
      if (c.is_sync(e)) sync.push_back({x, m.ev.dur[e]});
    }
  }
  std::sort(sync.begin(), sync.end());
  std::vector<Ns> sync_before(sync.size() + 1, 0);  // prefix sums
  for (size_t i = 0; i < sync.size(); ++i) sync_before[i + 1] = sync_before[i] + sync[i].second;
  auto node_lt = [](const std::pair<NodeId, Ns>& x, NodeId v) { return x.first < v; };
  size_t lo = 0;  // first pair at or after node i
  for (size_t i = 0; i < n; ++i) {
    while (lo < sync.size() && sync[lo].first < i) ++lo;
    Ns sync_i = 0;
    if (lo < sync.size() && sync[lo].first < t.subtree_end[i]) {
      size_t hi = size_t(std::lower_bound(sync.begin() + long(lo), sync.end(), t.subtree_end[i], node_lt) - sync.begin());
      sync_i = sync_before[hi] - sync_before[lo];
    }
    Ns d = t.end[i] - t.begin[i];
    NodeId p = t.parent[i];
    if (p != kNoNode) {
      Ns pd = t.end[p] - t.begin[p];
      t.share[i] = pd > 0 ? float(double(d) / double(pd)) : 0.f;
    } else {
      t.share[i] = 1.f;
    }
    t.sync[i] = sync_i;
    t.bound[i] = classify_bound(t.kind[i] == NodeKind::Root ? PhaseKind::Other : t.phase[i], d, t.kernels[i], t.gpu_busy[i],
                                t.gpu_begin[i], t.gpu_end[i], sync_i);
  }
}

}  // namespace annot

}  // namespace strata
