// The efficiency figures' groups (kernel class, kernel name, layer, phase), the ops without
// work, and one sentence per phase (efficiency.h).
#include "core/annotate/annotation.h"
#include "core/efficiency/efficiency_internal.h"
#include "core/text_format.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace strata::efficiency {

namespace {

std::string_view bare_op(std::string_view n) { return n.starts_with("aten::") ? n.substr(6) : n; }

std::string percent(double share) { return strprintf(share < 0.095 ? "%.1f%%" : "%.0f%%", 100 * share); }

void sort_by_time(std::vector<EfficiencyStat>& v) {
  std::sort(v.begin(), v.end(), [](const EfficiencyStat& x, const EfficiencyStat& y) {
    return x.time != y.time ? x.time > y.time : x.name < y.name;
  });
}

// How a phase's bound reads in its sentence, before the roofline share.
std::string bound_words(const std::string& phase, Bound b, const std::string& share) {
  switch (b) {
    case Bound::Gpu: return phase + " is GPU-bound at " + share + " of the roofline";
    case Bound::CpuLaunch: return phase + " is launch-bound; its kernels run at " + share + " of the roofline";
    case Bound::DataLoading: return phase + " is bound by data loading; its kernels run at " + share + " of the roofline";
    case Bound::HostBlocked: return phase + " is blocked on the host; its kernels run at " + share + " of the roofline";
    case Bound::Communication: return phase + " is communication-bound; its kernels run at " + share + " of the roofline";
    case Bound::CpuCompute: return phase + " is CPU-bound; its kernels run at " + share + " of the roofline";
    case Bound::Unknown: break;
  }
  return phase + "'s kernels run at " + share + " of the roofline";
}

// "Backward is GPU-bound at 31% of the roofline: 58% of its kernel time in memory-bound
// elementwise kernels of native_layer_norm_backward and gelu_backward".
std::string sentence(const TraceModel& m, const Efficiency& ef, const EfficiencyStat& s, const std::vector<size_t>& ks, Bound b) {
  if (s.modelled == 0)
    return s.name + ": the work of none of its " + std::to_string(s.kernels) + " kernels is known (their ops have no model or no shapes)";
  if (s.roofline_share() < 0)
    return strprintf("%s: %.1f TFLOP/s and %.2f TB/s achieved; the device's roofline is unknown", s.name.c_str(),
                     s.flop_per_s() / 1e12, s.bytes_per_s() / 1e12);
  // The kernels (a class, bound by compute or by memory) that hold most of its time, by op.
  std::map<std::pair<KernelClass, bool>, Ns> groups;
  for (size_t i : ks)
    if (ef.kernels[i].roofline_ns() >= 0) groups[{ef.kernels[i].cls, ef.kernels[i].compute_bound()}] += ef.kernels[i].time;
  auto best = std::max_element(groups.begin(), groups.end(), [](auto& x, auto& y) { return x.second < y.second; });
  std::unordered_map<StrId, Ns> ops;
  for (size_t i : ks) {
    const KernelWork& k = ef.kernels[i];
    if (k.roofline_ns() >= 0 && k.op != kNoEvent && k.cls == best->first.first && k.compute_bound() == best->first.second)
      ops[m.ev.name[k.op]] += k.time;
  }
  std::vector<std::pair<Ns, StrId>> top;
  for (auto& [name, time] : ops) top.push_back({time, name});
  std::sort(top.begin(), top.end(), [&](auto& x, auto& y) {
    return x.first != y.first ? x.first > y.first : m.strings.view(x.second) < m.strings.view(y.second);
  });
  std::string o = bound_words(s.name, b, percent(s.roofline_share()));
  o += ": " + percent(double(best->second) / double(std::max<Ns>(1, s.time))) + " of its kernel time in " +
       (best->first.second ? "compute" : "memory") + "-bound " + kernel_class_name(best->first.first) + " kernels";
  if (!top.empty()) o += " of " + std::string(bare_op(m.strings.view(top[0].second)));
  if (top.size() > 1) o += " and " + std::string(bare_op(m.strings.view(top[1].second)));
  if (double(s.modelled_time) < 0.9 * double(s.time))
    o += " (work known for " + percent(double(s.modelled_time) / double(std::max<Ns>(1, s.time))) + " of its kernel time)";
  return o;
}

// A phase's bound: its verdict from the replays, else the bound most of its time had (as the
// summary says it).
Bound phase_bound(const Annotation& a, PhaseKind kind, const std::string& name, const std::map<Bound, Ns>& by_time) {
  for (const PhaseVerdict& v : a.verdicts)
    if (v.kind == kind && v.phase == name) return v.bound;
  auto it = std::max_element(by_time.begin(), by_time.end(), [](auto& x, auto& y) { return x.second < y.second; });
  return it == by_time.end() ? Bound::Unknown : it->first;
}

void add_notes(Efficiency& ef) {
  for (const DeviceRoofline& d : ef.devices)
    if (!d.peaks.known())
      ef.notes.push_back("no roofline for GPU " + std::to_string(d.device) + " (\"" + d.trace_name +
                         "\" is not in the table): achieved rates only; --roofline-device NAME, --peak-tflops and "
                         "--peak-bandwidth give one");
  bool nameless = false;
  for (const KernelWork& k : ef.kernels) nameless |= k.cls != KernelClass::Communication && k.bandwidth <= 0;
  if (ef.devices.empty() && nameless)
    ef.notes.push_back("the trace names no device (no deviceProperties): achieved rates only; --roofline-device NAME "
                       "gives a roofline");
  if (ef.same_input)
    ef.notes.push_back(std::to_string(ef.same_input) + " kernels are under their roof only if two of their inputs with one shape "
                       "and type are one tensor (x != x): their bytes count it once");
  if (ef.cached)
    ef.notes.push_back(std::to_string(ef.cached) + " kernels moved their data faster than device memory can: it fitted in the "
                       "last-level cache; no memory roof applies, and their share of the roofline is unknown");
  if (ef.fast_algorithm)
    ef.notes.push_back(std::to_string(ef.fast_algorithm) + " kernels (Winograd, FFT) ran faster than the direct convolution's "
                       "FLOPs allow: their algorithm does fewer; their share of the roofline is unknown");
  if (ef.kernels_without_op)
    ef.notes.push_back(std::to_string(ef.kernels_without_op) + " kernels have no op around their launch (or no launch): no work");
}

}  // namespace

void count_ops(const TraceModel& m, const std::vector<EventId>& ops, const std::vector<OpWork>& works,
               const std::vector<EventId>& owner, const std::vector<EventId>& innermost, Efficiency& ef) {
  for (const OpWork& w : works) {
    if (w.model != WorkModel::Modelled) continue;
    ++ef.ops_modelled;
    if (!w.assumption) continue;
    ++ef.ops_estimated;
    if (std::find(ef.assumptions.begin(), ef.assumptions.end(), w.assumption) == ef.assumptions.end())
      ef.assumptions.emplace_back(w.assumption);
  }
  // Per name its entry, per op whether it was counted: columns, not hash tables (a kernel each).
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> by_name(m.strings.size(), kNone);
  std::vector<uint8_t> counted(m.ev.size(), 0);
  for (size_t i = 0; i < ef.kernels.size(); ++i) {
    const KernelWork& k = ef.kernels[i];
    if (k.cls == KernelClass::Communication || k.source != WorkSource::None) continue;
    const EventId op = owner[i] != kNoEvent ? owner[i] : innermost[i];
    if (op == kNoEvent) continue;
    uint32_t& at = by_name[m.ev.name[op]];
    if (at == kNone) {
      at = uint32_t(ef.unmodelled.size());
      UnmodelledOp u;
      u.name = m.name_of(op);
      if (owner[i] != kNoEvent) u.why = works[size_t(std::lower_bound(ops.begin(), ops.end(), op) - ops.begin())].model;
      ef.unmodelled.push_back(std::move(u));
    }
    UnmodelledOp& u = ef.unmodelled[at];
    ++u.kernels;
    u.time += k.time;
    u.calls += !counted[op];
    counted[op] = 1;
  }
  std::sort(ef.unmodelled.begin(), ef.unmodelled.end(), [](const UnmodelledOp& x, const UnmodelledOp& y) {
    return x.time != y.time ? x.time > y.time : x.name < y.name;
  });
}

void group(const TraceModel& m, const Annotation& a, Efficiency& ef) {
  const AnnotationTree& t = a.tree;
  std::vector<EfficiencyStat> classes(static_cast<size_t>(KernelClass::Count));
  // Per kernel name, per layer node, per phase node: its entry (columns: a lookup per kernel).
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> by_name(m.strings.size(), kNone), layer_of(t.size(), kNone), phase_at(t.size(), kNone);
  std::unordered_map<std::string, size_t> layer_by_path;
  std::map<std::pair<PhaseKind, std::string>, size_t> phase_of;
  std::vector<std::vector<size_t>> phase_kernels;
  std::vector<std::map<Bound, Ns>> phase_bounds;
  auto phase_index = [&](NodeId p) -> size_t {
    if (phase_at[p] != kNone) return phase_at[p];
    auto [it, fresh] = phase_of.emplace(std::make_pair(t.phase[p], std::string(t.name_of(p))), ef.phases.size());
    if (fresh) {
      ef.phases.push_back({});
      ef.phases.back().stat.name = t.name_of(p);
      ef.phases.back().kind = t.phase[p];
      phase_kernels.emplace_back();
      phase_bounds.emplace_back();
    }
    phase_at[p] = uint32_t(it->second);
    return it->second;
  };
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Phase) phase_bounds[phase_index(n)][t.bound[n]] += t.duration(n);
  for (size_t i = 0; i < ef.kernels.size(); ++i) {
    const KernelWork& k = ef.kernels[i];
    classes[size_t(k.cls)].add(k);
    if (k.cls == KernelClass::Communication) continue;  // the network's time: no roofline
    ef.total.add(k);
    uint32_t& ni = by_name[m.ev.name[k.kernel]];
    if (ni == kNone) ni = uint32_t(ef.kernel_names.size()), ef.kernel_names.push_back({}), ef.kernel_names.back().name = m.name_of(k.kernel);
    ef.kernel_names[ni].add(k);
    const NodeId n = k.kernel < a.node_of_event.size() ? a.node_of_event[k.kernel] : kNoNode;
    if (n == kNoNode) continue;
    if (const NodeId layer = t.ancestor(n, NodeKind::Layer); layer != kNoNode) {
      uint32_t& li = layer_of[layer];
      if (li == kNone) {
        std::string path = t.path(layer);  // across iterations: "Forward/model/fc"
        if (size_t slash = path.find('/'); slash != std::string::npos) path.erase(0, slash + 1);
        auto [pi, new_path] = layer_by_path.emplace(path, ef.layers.size());
        if (new_path) ef.layers.push_back({}), ef.layers.back().name = path;
        li = uint32_t(pi->second);
      }
      ef.layers[li].add(k);
    }
    if (const NodeId phase = t.ancestor(n, NodeKind::Phase); phase != kNoNode) {
      const size_t p = phase_index(phase);
      ef.phases[p].stat.add(k);
      phase_kernels[p].push_back(i);
    }
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    if (!classes[c].kernels) continue;
    classes[c].name = kernel_class_name(KernelClass(c));
    ef.classes.push_back(std::move(classes[c]));
  }
  sort_by_time(ef.classes);
  sort_by_time(ef.kernel_names);
  sort_by_time(ef.layers);
  // Phases in the summary's order (by kind, then name); those without kernels say nothing.
  std::vector<PhaseEfficiency> phases;
  for (auto& [key, p] : phase_of) {
    PhaseEfficiency& pe = ef.phases[p];
    if (!pe.stat.kernels) continue;
    pe.sentence = sentence(m, ef, pe.stat, phase_kernels[p], phase_bound(a, key.first, key.second, phase_bounds[p]));
    phases.push_back(std::move(pe));
  }
  ef.phases = std::move(phases);
  add_notes(ef);
}

}  // namespace strata::efficiency
