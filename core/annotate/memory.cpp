// Memory: per device, the peak and what is alive at it (weights, gradients, optimizer state,
// activations, temporaries, other; and which layers allocated it), plus allocation volumes
// per phase and per forward layer over the trace.
#include "core/annotate/internal.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace strata {

const char* memory_category_key(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Weights: return "weights";
    case MemoryCategory::Gradients: return "gradients";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::Activations: return "activations";
    case MemoryCategory::Temporaries: return "temporaries";
    case MemoryCategory::Other: return "other";
    case MemoryCategory::Count: break;
  }
  return "?";
}

const char* memory_category_name(MemoryCategory c) {
  return c == MemoryCategory::OptimizerState ? "optimizer state" : memory_category_key(c);
}

namespace {

bool same_device(const MemoryEvents& me, size_t i, int8_t type, int16_t id) {
  return me.device_type[i] == type && me.device_id[i] == id;
}

// The innermost layer of the op running on the allocating thread, else kNoNode.
NodeId allocating_layer(const TraceModel& m, const Annotation& a, uint32_t event) {
  EventId op = allocating_op(m, event);
  NodeId n = op != kNoEvent && op < a.node_of_event.size() ? a.node_of_event[op] : kNoNode;
  const AnnotationTree& t = a.tree;
  while (n != kNoNode && t.kind[n] != NodeKind::Layer) {
    if (t.kind[n] != NodeKind::Op) return kNoNode;
    n = t.parent[n];
  }
  return n;
}

Ns first_iteration_begin(const Annotation& a) {
  Ns b = INT64_MAX;
  for (const Iteration& it : a.iterations) b = std::min(b, it.begin);
  return b;
}

}  // namespace

EventId allocating_op(const TraceModel& m, uint32_t event) {
  const MemoryEvents& me = m.memory;
  if (event >= me.size() || me.track[event] >= m.tracks.size()) return kNoEvent;
  return m.event_at(me.track[event], me.ts[event]);
}

uint32_t memory_event_at(const MemoryEvents& me, int8_t device_type, int16_t device_id, Ns t) {
  size_t i = size_t(std::upper_bound(me.ts.begin(), me.ts.end(), t) - me.ts.begin());
  while (i-- > 0)
    if (same_device(me, i, device_type, device_id)) return uint32_t(i);
  return UINT32_MAX;
}

LiveMemory live_memory(const TraceModel& m, const Annotation& a, uint32_t event) {
  const MemoryEvents& me = m.memory;
  LiveMemory r;
  if (event >= me.size()) return r;
  r.device_type = me.device_type[event];
  r.device_id = me.device_id[event];
  r.through = event;
  r.at = me.ts[event];
  r.allocated = me.total_allocated[event];
  r.split = me.addresses_recorded;
  const Ns first_iter = first_iteration_begin(a);
  // Before the trace, only setup ran when the trace starts before the first iteration and
  // that iteration is the run's first (no step number, or step 0): the model's weights.
  const bool from_start = first_iter != INT64_MAX && m.time_begin < first_iter && a.iterations.front().step <= 0;
  r.before_trace_as = from_start ? MemoryCategory::Weights : MemoryCategory::Other;
  if (!r.split) {
    r.before_trace = r.allocated;
    r.bytes[size_t(MemoryCategory::Other)] = r.allocated;
    return r;
  }
  // The allocations alive just after `event`, then when each is freed (if it is).
  std::unordered_map<uint64_t, uint32_t> live;  // address → allocating event
  for (uint32_t i = 0; i <= event; ++i) {
    if (!same_device(me, i, r.device_type, r.device_id)) continue;
    if (me.bytes[i] > 0) live[me.addr[i]] = i;
    else if (me.bytes[i] < 0) live.erase(me.addr[i]);
  }
  std::unordered_map<uint64_t, Ns> freed_at;
  for (size_t i = size_t(event) + 1; i < me.size() && freed_at.size() < live.size(); ++i)
    if (me.bytes[i] < 0 && same_device(me, i, r.device_type, r.device_id) && live.count(me.addr[i]))
      freed_at.try_emplace(me.addr[i], me.ts[i]);

  const AnnotationTree& t = a.tree;
  annot::PhaseIndex phases(t);
  std::map<NodeId, int64_t> per_layer;
  int64_t seen = 0;
  for (auto& [addr, i] : live) {
    auto f = freed_at.find(addr);
    const bool freed = f != freed_at.end();
    const NodeId ph = phases.at(me.ts[i]);
    const PhaseKind pk = ph == kNoNode ? PhaseKind::Other : t.phase[ph];
    MemoryCategory c = MemoryCategory::Other;
    if (me.ts[i] < first_iter) c = freed ? MemoryCategory::Other : MemoryCategory::Weights;
    else if (ph != kNoNode && freed && f->second <= t.end[ph]) c = MemoryCategory::Temporaries;
    else if (pk == PhaseKind::Forward || pk == PhaseKind::Loss) c = MemoryCategory::Activations;
    else if (pk == PhaseKind::Backward) c = MemoryCategory::Gradients;
    else if (pk == PhaseKind::Optimizer && !freed) c = MemoryCategory::OptimizerState;
    const NodeId layer = allocating_layer(m, a, i);
    r.bytes[size_t(c)] += me.bytes[i];
    per_layer[layer] += me.bytes[i];
    seen += me.bytes[i];
    r.allocations.push_back({i, c, layer});
  }
  // The rest was allocated before the trace began. A trace whose addresses are reused without
  // a free in between can see more than the total: `other` takes the difference, so the
  // categories still sum to what the trace says was allocated.
  r.before_trace = std::max<int64_t>(0, r.allocated - seen);
  r.bytes[size_t(r.before_trace_as)] += r.before_trace;
  r.bytes[size_t(MemoryCategory::Other)] += std::min<int64_t>(0, r.allocated - seen);
  std::sort(r.allocations.begin(), r.allocations.end(), [&](auto& x, auto& y) {
    return me.bytes[x.event] != me.bytes[y.event] ? me.bytes[x.event] > me.bytes[y.event] : x.event < y.event;
  });
  for (auto& [n, bytes] : per_layer) r.layers.push_back({n, n == kNoNode ? std::string() : t.path(n), bytes});
  std::sort(r.layers.begin(), r.layers.end(), [](auto& x, auto& y) { return x.bytes != y.bytes ? x.bytes > y.bytes : x.path < y.path; });
  return r;
}

namespace annot {

void analyze_memory(const TraceModel& m, Annotation& a) {
  const MemoryEvents& me = m.memory;
  MemoryUse& mu = a.analyses.memory;
  bool any_cuda = false;
  for (size_t i = 0; i < me.size(); ++i) any_cuda |= me.device_type[i] == 1;
  auto counted = [&](size_t i) { return !any_cuda || me.device_type[i] == 1; };
  mu.totals_derived = me.totals_derived;
  mu.reserved_recorded = me.reserved_recorded;
  mu.addresses_recorded = me.addresses_recorded;

  // Peaks per device (the first event reaching each).
  std::map<std::pair<int8_t, int16_t>, std::pair<uint32_t, int64_t>> peaks;  // device → (peak event, peak reserved)
  for (uint32_t i = 0; i < me.size(); ++i) {
    if (!counted(i)) continue;
    auto [it, fresh] = peaks.try_emplace({me.device_type[i], me.device_id[i]}, i, me.total_reserved[i]);
    if (!fresh) {
      if (me.total_allocated[i] > me.total_allocated[it->second.first]) it->second.first = i;
      it->second.second = std::max(it->second.second, me.total_reserved[i]);
    }
  }
  mu.present = !peaks.empty();
  const AnnotationTree& t = a.tree;
  PhaseIndex phases(t);
  for (auto& [dev, peak] : peaks) {
    DeviceMemory d;
    d.device_type = dev.first;
    d.device_id = dev.second;
    const uint32_t i = peak.first;
    d.peak_allocated = me.total_allocated[i];
    d.peak_reserved = peak.second;
    d.peak_ts = me.ts[i];
    EventId op = allocating_op(m, i);
    NodeId n = op != kNoEvent ? a.node_of_event[op] : kNoNode;
    if (n == kNoNode) n = phases.at(me.ts[i]);
    if (n != kNoNode) d.peak_where = t.path(n);
    if (d.device_type == 1)
      for (const DeviceInfo& di : m.devices)
        if (di.id == d.device_id) d.capacity = di.total_global_mem;
    d.at_peak = live_memory(m, a, i);
    d.at_peak.allocations.clear();
    if (mu.devices.empty() || d.peak_allocated > mu.devices[mu.peak].peak_allocated) mu.peak = mu.devices.size();
    mu.devices.push_back(std::move(d));
  }

  // Volumes over the trace: per phase, and per forward layer.
  std::vector<MemoryUse::PhaseAlloc> per(static_cast<size_t>(PhaseKind::Count));
  for (size_t p = 0; p < per.size(); ++p) per[p].phase = PhaseKind(p);
  std::unordered_map<NodeId, MemoryUse::LayerAlloc> layers;
  for (uint32_t i = 0; i < me.size(); ++i) {
    if (!counted(i)) continue;
    NodeId ph = phases.at(me.ts[i]);
    PhaseKind pk = ph == kNoNode ? PhaseKind::Other : t.phase[ph];
    const int64_t bytes = me.bytes[i];
    if (bytes > 0) per[size_t(pk)].allocated += bytes;
    else per[size_t(pk)].freed += -bytes;
    if (pk != PhaseKind::Forward) continue;
    NodeId layer = allocating_layer(m, a, i);
    if (layer == kNoNode) continue;
    auto& la = layers[layer];
    if (bytes > 0) la.allocated += bytes;
    la.net += bytes;
  }
  for (auto& p : per)
    if (p.allocated || p.freed) mu.per_phase.push_back(p);
  for (auto& [n, la] : layers) {
    la.path = t.path(n);
    mu.top_layers.push_back(la);
  }
  std::sort(mu.top_layers.begin(), mu.top_layers.end(), [](auto& x, auto& y) {
    return x.allocated != y.allocated ? x.allocated > y.allocated : x.path < y.path;
  });
  if (mu.top_layers.size() > 10) mu.top_layers.resize(10);
}

}  // namespace annot

}  // namespace strata
