// Scoring against Hotline's hid= ground truth (see accuracy.h).
#include "core/annotate/accuracy.h"

#include "core/annotate/internal.h"
#include "core/json_scan.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace strata {

namespace {

bool phase_of_range(std::string_view name, PhaseKind& p) {
  if (name == "Load Data" || name == "data_loading") p = PhaseKind::DataLoading;
  else if (name == "Forward" || name == "forward") p = PhaseKind::Forward;
  else if (name == "Calc Loss" || name == "loss") p = PhaseKind::Loss;
  else if (name == "Zero Grad" || name == "zero_grad") p = PhaseKind::ZeroGrad;
  else if (name == "Backward" || name == "backward") p = PhaseKind::Backward;
  else if (name == "Optimizer" || name == "optimizer") p = PhaseKind::Optimizer;
  else return false;
  return true;
}

bool is_hid(const TraceModel& m, EventId e) {
  return m.ev.category(e) == Cat::UserAnnotation && m.name_of(e).starts_with("hid=");
}

// A phase range of the truth: Hotline's are hid= ranges; the corpus's are plain user ranges.
bool is_truth_phase(const TraceModel& m, EventId e) {
  PhaseKind p;
  return m.ev.category(e) == Cat::UserAnnotation && phase_of_range(m.name_of(e), p);
}

bool is_module_frame(const TraceModel& m, EventId e) {
  return m.ev.category(e) == Cat::PythonFunction && is_module_frame_name(m.name_of(e));
}

void nest_phases(GroundTruth& g) {
  for (auto& r : g.ranges) {
    if (r.is_phase) continue;
    for (auto& p : g.ranges)
      if (p.is_phase && r.begin >= p.begin && r.end <= p.end) r.phase = p.phase;
  }
}

}  // namespace

GroundTruth ground_truth(const TraceModel& m) {
  GroundTruth g;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    std::string_view n = m.name_of(e);
    PhaseKind phase = PhaseKind::Other;
    if (is_hid(m, e)) {
      n.remove_prefix(4);
      int32_t id = -1;
      auto r = std::from_chars(n.data(), n.data() + n.size(), id);
      std::string_view label = r.ptr < n.data() + n.size() ? std::string_view(r.ptr + 1, size_t(n.data() + n.size() - r.ptr - 1)) : "";
      GroundTruth::TimeRange rg{m.ev.start[e], m.ev.end(e), id, PhaseKind::Other, false, std::string(label)};
      rg.is_phase = phase_of_range(label, rg.phase);
      g.ranges.push_back(std::move(rg));
    } else if (is_truth_phase(m, e) && phase_of_range(n, phase)) {
      g.ranges.push_back({m.ev.start[e], m.ev.end(e), -1, phase, true, std::string(n)});
    }
  }
  if (!g.ranges.empty()) {
    g.source = GroundTruth::Source::Ranges;
    nest_phases(g);
    return g;
  }
  // The modules' frames: each one a layer of the forward pass, except the loss's.
  std::vector<std::pair<Ns, Ns>> losses;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (!is_module_frame(m, e)) continue;
    std::string_view n = module_of_frame(m.name_of(e));
    // Loss functions are modules too: not the model's layers.
    if (is_loss_module(n)) losses.push_back({m.ev.start[e], m.ev.end(e)});
    else g.ranges.push_back({m.ev.start[e], m.ev.end(e), int32_t(e), PhaseKind::Forward, false, std::string(n)});
  }
  std::erase_if(g.ranges, [&](const GroundTruth::TimeRange& r) {
    return std::any_of(losses.begin(), losses.end(), [&](auto& l) { return r.begin >= l.first && r.end <= l.second; });
  });
  if (!g.ranges.empty()) g.source = GroundTruth::Source::Modules;
  return g;
}

std::string strip_events(const TraceModel& m, unsigned flags) {
  if (!m.source) return {};
  const char* p = m.source->data();
  size_t n = m.source->size();
  std::vector<std::pair<size_t, size_t>> cuts;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    const bool strip = ((flags & kStripTruthRanges) && (is_hid(m, e) || is_truth_phase(m, e))) ||
                       ((flags & kStripModules) && is_module_frame(m, e)) ||
                       ((flags & kStripStacks) && m.ev.category(e) == Cat::PythonFunction);
    if (!strip) continue;
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
  s.phase_agreement = total ? double(agree) / double(total) : -1;  // -1: the truth has no phases

  // Kernels by the launch's time: truth phase and innermost truth range.
  auto innermost = [&](Ns ts) -> const GroundTruth::TimeRange* {
    const GroundTruth::TimeRange* best = nullptr;
    for (auto& r : truth.ranges)
      if (ts >= r.begin && ts < r.end && (!best || r.end - r.begin < best->end - best->begin)) best = &r;
    return best;
  };
  Ns kt_agree = 0, kt_total = 0;
  std::map<std::pair<int64_t, int64_t>, uint64_t> joint, baseline_joint;
  std::map<int64_t, uint64_t> ours_count, truth_count, baseline_count;
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
    // The baseline: the launch's outermost CPU op is its layer.
    EventId top = kNoEvent;
    for (EventId p = m.parent_of(l); p != kNoEvent; p = m.parent_of(p))
      if (m.ev.category(p) == Cat::CpuOp) top = p;
    const int64_t base_id = top == kNoEvent ? -1 - int64_t(l) : int64_t(top);
    ++baseline_joint[{base_id, r->id}];
    ++baseline_count[base_id];
  }
  s.kernel_phase_agreement = kt_total ? double(kt_agree) / double(kt_total) : 0;
  // Pairwise: of the pairs of forward kernels one grouping puts together, how many the other does.
  auto pairs = [](uint64_t k) { return double(k) * double(k - (k > 0)) / 2; };
  double tt = 0;
  for (auto& [k, v] : truth_count) tt += pairs(v);
  auto f1 = [&](const auto& j, const auto& count, double* precision, double* recall) {
    double tp = 0, pp = 0;
    for (auto& [k, v] : j) tp += pairs(v);
    for (auto& [k, v] : count) pp += pairs(v);
    const double pr = pp > 0 ? tp / pp : 1, rc = tt > 0 ? tp / tt : 1;
    if (precision) *precision = pr, *recall = rc;
    return pr + rc > 0 ? 2 * pr * rc / (pr + rc) : 0;
  };
  s.layer_f1 = f1(joint, ours_count, &s.layer_precision, &s.layer_recall);
  s.baseline_f1 = f1(baseline_joint, baseline_count, nullptr, nullptr);
  return s;
}

}  // namespace strata
