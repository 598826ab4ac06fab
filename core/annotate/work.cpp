// The GPU work of one item and what bounds it, for a selection in a front end: the same
// rules as the tree's metrics (classify_bound, the busy union), on any node or event.
#include "core/annotate/internal.h"
#include "core/intervals.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>

namespace strata {

namespace {

// Its collectives' time, and the part of it that the analyses found exposed (not hidden
// behind compute anywhere in the trace).
void measure_communication(const TraceModel& m, const Annotation& a, WorkFigures& w) {
  IntervalUnion comm;
  std::vector<Interval> spans;
  for (EventId g : w.gpu_ops)
    if (m.ev.category(g) == Cat::Kernel && is_communication_kernel(m.name_of(g))) {
      comm.add(m.ev.start[g], m.ev.end(g));
      spans.push_back({m.ev.start[g], m.ev.end(g)});
    }
  w.communication = comm.total();
  merge_intervals(spans);
  const auto& exposed = a.analyses.exposed_communication;
  for (auto [s, e] : spans) {
    auto it = std::upper_bound(exposed.begin(), exposed.end(), s, [](Ns t, const Interval& x) { return t < x.second; });
    for (; it != exposed.end() && it->first < e; ++it) w.comm_exposed += std::min(e, it->second) - std::max(s, it->first);
  }
}

// Sums the busy union, total time and extent of `w.gpu_ops` (sorted by start here).
void measure_gpu_ops(const TraceModel& m, WorkFigures& w) {
  std::sort(w.gpu_ops.begin(), w.gpu_ops.end(), [&](EventId x, EventId y) {
    return m.ev.start[x] != m.ev.start[y] ? m.ev.start[x] < m.ev.start[y] : x < y;
  });
  IntervalUnion busy;
  for (EventId g : w.gpu_ops) {
    busy.add(m.ev.start[g], m.ev.end(g));
    w.gpu_time += m.ev.dur[g];
    w.gpu_end = std::max(w.gpu_end, m.ev.end(g));
  }
  w.gpu_busy = busy.total();
  w.gpu_begin = w.gpu_ops.empty() ? 0 : m.ev.start[w.gpu_ops.front()];
}

// Calls f(d) for every event nested in e on its track (e excluded).
template <class F>
void for_descendants(const TraceModel& m, EventId e, F&& f) {
  uint32_t t = m.track_of(e);
  if (t == kNoTrack) return;
  const Track& tr = m.tracks[t];
  auto st = m.ev.start.begin();
  for (size_t d = size_t(m.ev.depth[e]) + 1; d < tr.levels.size(); ++d) {
    const IndexRange& level = tr.levels[d];
    auto lo = EventId(std::lower_bound(st + level.begin, st + level.end, m.ev.start[e]) - st);
    auto hi = EventId(std::upper_bound(st + lo, st + level.end, m.ev.end(e)) - st);
    if (lo == hi) break;
    for (EventId k = lo; k < hi; ++k) f(k);
  }
}

// Calls f(k) for every event on a CPU thread that starts within [a, b].
template <class F>
void for_cpu_events_in(const TraceModel& m, Ns a, Ns b, F&& f) {
  auto st = m.ev.start.begin();
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::CpuThread) continue;
    for (const IndexRange& level : tr.levels) {
      auto lo = EventId(std::lower_bound(st + level.begin, st + level.end, a) - st);
      auto hi = EventId(std::upper_bound(st + lo, st + level.end, b) - st);
      for (EventId k = lo; k < hi; ++k) f(k);
    }
  }
}

}  // namespace

bool is_time_range(const TraceModel& m, EventId e) {
  return m.ev.category(e) == Cat::UserAnnotation || m.is_profiler_step(e);
}

WorkFigures node_work(const TraceModel& m, const Annotation& a, NodeId n) {
  const AnnotationTree& t = a.tree;
  WorkFigures w;
  if (n >= t.size()) return w;
  w.begin = t.begin[n];
  w.end = t.end[n];
  // The GPU ops the tree counts for the node: those attached to a node in its subtree.
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::GpuStream) continue;
    for (EventId g = tr.events.begin; g < tr.events.end; ++g) {
      NodeId x = g < a.node_of_event.size() ? a.node_of_event[g] : kNoNode;
      if (x < n || x >= t.subtree_end[n]) continue;
      Cat k = m.ev.category(g);
      if (is_gpu_op_cat(k)) w.gpu_ops.push_back(g);
      else if (k == Cat::ProfilerRange) w.flops.add(m.args().counters(g));
    }
  }
  measure_gpu_ops(m, w);
  measure_communication(m, a, w);
  if (!t.kernels.empty()) {  // the tree's own metrics, so both read the same figures
    w.gpu_busy = t.gpu_busy[n];
    w.sync = t.sync[n];
    w.bound = t.bound[n];
  }
  if (t.kind[n] == NodeKind::Phase)  // a phase's verdict comes from the replays (Annotation::verdicts)
    for (const PhaseVerdict& v : a.verdicts)
      if (v.phase == t.name_of(n) && v.kind == t.phase[n]) w.bound = v.bound, w.bound_detail = v.detail;
  NodeId p = t.parent[n];
  if (p != kNoNode && t.kind[p] != NodeKind::Root) {
    w.share = t.share.empty() ? 0.f : t.share[n];
    w.parent = t.name_of(p);
  }
  return w;
}

WorkFigures event_work(const TraceModel& m, const Annotation& a, EventId e) {
  WorkFigures w;
  if (e >= m.ev.size()) return w;
  w.begin = m.ev.start[e];
  w.end = m.ev.end(e);
  const Cat cat = m.ev.category(e);
  if (is_gpu_cat(cat)) {  // GPU work is its own work: no bound, no parent of the host's clock
    if (is_gpu_op_cat(cat)) w.gpu_ops.push_back(e);
    if (cat == Cat::ProfilerRange) w.flops.add(m.args().counters(e));
    measure_gpu_ops(m, w);
    measure_communication(m, a, w);
    return w;
  }
  std::vector<int8_t> sync_names(m.strings.size(), -1);
  auto visit = [&](EventId d) {
    if (EventId g = m.gpu_op_of(d); g != kNoEvent) w.gpu_ops.push_back(g);
    if (is_cuda_call_cat(m.ev.category(d))) {
      int8_t& s = sync_names[m.ev.name[d]];
      if (s < 0) s = annot::is_sync_call(m.name_of(d));
      if (s || m.is_blocking_copy(d)) w.sync += m.ev.dur[d];
    }
  };
  if (is_time_range(m, e)) {
    for_cpu_events_in(m, w.begin, w.end, visit);
  } else {
    visit(e);
    for_descendants(m, e, visit);
  }
  std::sort(w.gpu_ops.begin(), w.gpu_ops.end());
  w.gpu_ops.erase(std::unique(w.gpu_ops.begin(), w.gpu_ops.end()), w.gpu_ops.end());
  measure_gpu_ops(m, w);
  measure_communication(m, a, w);
  NodeId n = e < a.node_of_event.size() ? a.node_of_event[e] : kNoNode;
  PhaseKind phase = n != kNoNode ? a.tree.phase[n] : PhaseKind::Other;
  // A CUDA call only hands work over: what bounds that work is the GPU op's own matter.
  if (!is_cuda_call_cat(cat))
    w.bound = classify_bound(phase, w.end - w.begin, w.gpu_ops.size(), w.gpu_busy, w.gpu_begin, w.gpu_end, w.sync);
  if (EventId p = m.parent_of(e); p != kNoEvent) {
    w.share = m.ev.dur[p] > 0 ? float(double(m.ev.dur[e]) / double(m.ev.dur[p])) : 0.f;
    w.parent = m.name_of(p);
  }
  return w;
}

std::string bound_reason(const WorkFigures& w) {
  const Ns dur = w.end - w.begin;
  auto pct = [](Ns x, Ns of) { return of > 0 ? 100.0 * double(x) / double(of) : 0.0; };
  switch (w.bound) {
    case Bound::Gpu:
      if (!w.bound_detail.empty()) return "GPU: " + w.bound_detail;
      if (w.gpu_end - w.gpu_begin > dur)
        return strprintf("GPU: its GPU work (%s, busy %.1f%% of it) outlasts its %s on the host",
                         format_duration(w.gpu_end - w.gpu_begin).c_str(), pct(w.gpu_busy, w.gpu_end - w.gpu_begin),
                         format_duration(dur).c_str());
      return strprintf("GPU: busy %.1f%% of its %s", pct(w.gpu_busy, dur), format_duration(dur).c_str());
    case Bound::CpuLaunch:
      if (!w.bound_detail.empty()) return "CPU (launch overhead): " + w.bound_detail;
      return strprintf("CPU (launch overhead): the GPU is busy %.1f%% of its %s", pct(w.gpu_busy, dur),
                       format_duration(dur).c_str());
    case Bound::HostBlocked:
      if (!w.bound_detail.empty()) return "host blocked: " + w.bound_detail;
      return strprintf("host blocked: %.1f%% of its time in calls that wait for the GPU", pct(w.sync, dur));
    case Bound::DataLoading: return w.bound_detail.empty() ? "data loading" : "data loading: " + w.bound_detail;
    case Bound::Communication: return "communication: " + w.bound_detail;
    case Bound::CpuCompute: return "CPU compute: " + w.bound_detail;
    case Bound::Unknown: break;
  }
  return w.gpu_ops.empty() ? "no GPU work" : "not bound: it hands work to the GPU";
}

void write_work_fields(JsonWriter& j, std::string_view name, const WorkFigures& w) {
  j.field("name", name).field("begin_ns", w.begin).field("end_ns", w.end).field("duration_ns", w.end - w.begin);
  if (!w.parent.empty()) j.field("share_of_parent", double(w.share)).field("parent", w.parent);
  j.field("gpu_ops", uint64_t(w.gpu_ops.size())).field("gpu_time_ns", w.gpu_time).field("gpu_busy_ns", w.gpu_busy);
  j.field("gpu_begin_ns", w.gpu_begin).field("gpu_end_ns", w.gpu_end).field("sync_ns", w.sync);
  j.field("communication_ns", w.communication).field("communication_exposed_ns", w.comm_exposed);
  j.field("bound", bound_name(w.bound)).field("bound_reason", bound_reason(w));
  if (w.flops.ranges) {
    j.key("flops").begin_object();
    write_flop_fields(j, w.flops);
    j.end_object();
  }
}

std::string work_json(std::string_view name, const WorkFigures& w) {
  JsonWriter j;
  j.begin_object();
  write_work_fields(j, name, w);
  j.end_object();
  return j.str() + "\n";
}

std::string work_text(std::string_view name, const WorkFigures& w) {
  std::string o = std::string(name) + "\n";
  o += strprintf("  duration %s", format_duration(w.end - w.begin).c_str());
  if (!w.parent.empty()) o += strprintf(", %.1f%% of %s", 100.0 * double(w.share), w.parent.c_str());
  o += "\n";
  if (!w.gpu_ops.empty())
    o += strprintf("  GPU: %zu ops, %s in total, busy %s, from %s to %s after its start\n", w.gpu_ops.size(),
                   format_duration(w.gpu_time).c_str(), format_duration(w.gpu_busy).c_str(),
                   format_duration(w.gpu_begin - w.begin).c_str(), format_duration(w.gpu_end - w.begin).c_str());
  if (w.flops.ranges) o += "  FLOPs (range profiler): " + flops_text(w.flops) + "\n";
  if (w.sync > 0) o += "  waiting for the GPU: " + format_duration(w.sync) + "\n";
  if (w.communication > 0)
    o += strprintf("  communication %s, %s of it exposed (not hidden behind compute)\n", format_duration(w.communication).c_str(),
                   format_duration(w.comm_exposed).c_str());
  o += "  bound by " + bound_reason(w) + "\n";
  return o;
}

NodeId find_node(const AnnotationTree& t, std::string_view path) {
  if (t.size() == 0) return kNoNode;
  NodeId cur = 0;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty()) continue;
    NodeId found = kNoNode;
    for (int pass = 0; pass < 2 && found == kNoNode; ++pass)
      for (NodeId c = t.first_child(cur); c != kNoNode && found == kNoNode; c = t.next_sibling(c))
        if (pass == 0 ? t.name_of(c) == part : t.name_of(c).starts_with(part)) found = c;
    if (found == kNoNode) return kNoNode;
    cur = found;
  }
  return cur == 0 ? kNoNode : cur;
}

}  // namespace strata
