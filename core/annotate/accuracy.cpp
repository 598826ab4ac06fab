// Scoring against Hotline's hid= ground truth (see accuracy.h).
#include "core/annotate/accuracy.h"

#include "core/json_scan.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace strata {

namespace {

bool phase_of_hid(std::string_view name, PhaseKind& p) {
  if (name == "Load Data") p = PhaseKind::DataLoading;
  else if (name == "Forward") p = PhaseKind::Forward;
  else if (name == "Calc Loss") p = PhaseKind::Loss;
  else if (name == "Zero Grad") p = PhaseKind::ZeroGrad;
  else if (name == "Backward") p = PhaseKind::Backward;
  else if (name == "Optimizer") p = PhaseKind::Optimizer;
  else return false;
  return true;
}

bool is_hid(const TraceModel& m, EventId e) {
  return m.ev.category(e) == Cat::UserAnnotation && m.name_of(e).starts_with("hid=");
}

}  // namespace

GroundTruth hid_ground_truth(const TraceModel& m) {
  GroundTruth g;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    std::string_view n = m.name_of(e);
    if (m.is_profiler_step(e)) {
      g.step_begin = m.ev.start[e];
      g.step_end = m.ev.end(e);
    }
    if (!is_hid(m, e)) continue;
    n.remove_prefix(4);
    int32_t id = -1;
    auto r = std::from_chars(n.data(), n.data() + n.size(), id);
    std::string_view label = r.ptr < n.data() + n.size() ? std::string_view(r.ptr + 1, size_t(n.data() + n.size() - r.ptr - 1)) : "";
    GroundTruth::TimeRange rg{m.ev.start[e], m.ev.end(e), id, PhaseKind::Other, false, std::string(label)};
    rg.is_phase = phase_of_hid(label, rg.phase);
    g.ranges.push_back(std::move(rg));
  }
  // Phases of the nested ranges: the phase range around them.
  for (auto& r : g.ranges) {
    if (r.is_phase) continue;
    for (auto& p : g.ranges)
      if (p.is_phase && r.begin >= p.begin && r.end <= p.end) r.phase = p.phase;
  }
  return g;
}

std::string strip_hid_events(const TraceModel& m) {
  if (!m.source) return {};
  const char* p = m.source->data();
  size_t n = m.source->size();
  std::vector<std::pair<size_t, size_t>> cuts;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (!is_hid(m, e)) continue;
    size_t off = m.ev.source_offset[e], end;
    if (off >= n || p[off] != '{' || json::value_end(p, off, n, end) != json::ScanError::None) continue;
    size_t k = json::skip_ws(p, end, n);
    if (k < n && p[k] == ',') {
      cuts.push_back({off, k + 1});
    } else {  // the last entry: drop the comma before it
      size_t b = off;
      while (b > 0 && json::is_ws(p[b - 1])) --b;
      if (b > 0 && p[b - 1] == ',') --b;
      cuts.push_back({b, end});
    }
  }
  std::sort(cuts.begin(), cuts.end());
  std::string out;
  out.reserve(n);
  size_t pos = 0;
  for (auto& [b, e] : cuts) {
    if (b < pos) continue;
    out.append(p + pos, b - pos);
    pos = e;
  }
  out.append(p + pos, n - pos);
  return out;
}

AccuracyScore score_against(const TraceModel& m, const Annotation& a, const GroundTruth& truth) {
  AccuracyScore s;
  const AnnotationTree& t = a.tree;
  struct Span { Ns b, e; PhaseKind p; };
  std::vector<Span> ours;
  for (NodeId i = 0; i < t.size(); ++i)
    if (t.kind[i] == NodeKind::Phase) ours.push_back({t.begin[i], t.end[i], t.phase[i]});
  Ns agree = 0, total = 0;
  for (auto& r : truth.ranges) {
    if (!r.is_phase) continue;
    total += r.end - r.begin;
    for (auto& o : ours)
      if (o.p == r.phase) agree += std::max<Ns>(0, std::min(o.e, r.end) - std::max(o.b, r.begin));
  }
  s.phase_agreement = total ? double(agree) / double(total) : 0;

  // Kernels by the launch's time: truth phase and innermost truth range.
  auto innermost = [&](Ns ts) -> const GroundTruth::TimeRange* {
    const GroundTruth::TimeRange* best = nullptr;
    for (auto& r : truth.ranges)
      if (ts >= r.begin && ts < r.end && (!best || r.end - r.begin < best->end - best->begin)) best = &r;
    return best;
  };
  Ns kt_agree = 0, kt_total = 0;
  std::map<std::pair<int64_t, int64_t>, uint64_t> joint;
  std::map<int64_t, uint64_t> ours_count, truth_count;
  for (EventId g = 0; g < m.ev.size(); ++g) {
    if (m.ev.category(g) != Cat::Kernel) continue;
    EventId l = m.launch_of(g);
    if (l == kNoEvent) continue;
    const GroundTruth::TimeRange* r = innermost(m.ev.start[l]);
    if (!r) continue;
    NodeId n = g < a.node_of_event.size() ? a.node_of_event[g] : kNoNode;
    PhaseKind ph = n == kNoNode ? PhaseKind::Other : t.phase[n];
    kt_total += m.ev.dur[g];
    if (ph == r->phase) kt_agree += m.ev.dur[g];
    if (r->phase != PhaseKind::Forward) continue;
    ++s.forward_kernels;
    NodeId leaf = n == kNoNode ? kNoNode : t.ancestor(n, NodeKind::Layer);
    int64_t ours_id = leaf != kNoNode ? int64_t(leaf) : n != kNoNode ? -2 - int64_t(n) : -1;
    ++joint[{ours_id, r->id}];
    ++ours_count[ours_id];
    ++truth_count[r->id];
  }
  s.kernel_phase_agreement = kt_total ? double(kt_agree) / double(kt_total) : 0;
  auto pairs = [](uint64_t k) { return double(k) * double(k - (k > 0)) / 2; };
  double tp = 0, pp = 0, tt = 0;
  for (auto& [k, v] : joint) tp += pairs(v);
  for (auto& [k, v] : ours_count) pp += pairs(v);
  for (auto& [k, v] : truth_count) tt += pairs(v);
  s.layer_precision = pp > 0 ? tp / pp : 1;
  s.layer_recall = tt > 0 ? tp / tt : 1;
  s.layer_f1 = s.layer_precision + s.layer_recall > 0
                   ? 2 * s.layer_precision * s.layer_recall / (s.layer_precision + s.layer_recall)
                   : 0;
  return s;
}

}  // namespace strata
