// One rank's part of a job: its iterations, its collectives (what kind, which group, when,
// how much of each was hidden behind compute, which layers it is charged to) and, before each
// collective, where the rank's time went: what a straggler is compared on.
#include "core/event_args.h"
#include "core/intervals.h"
#include "core/job/job.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace strata {

namespace {

constexpr size_t kTopParts = 8;

std::string lower_alnum(std::string_view s) {
  std::string o;
  for (char c : s)
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) o += c;
    else if (c >= 'A' && c <= 'Z') o += char(c - 'A' + 'a');
  return o;
}

// The collective a kernel runs: the trace's "Collective name" when it has one, else the
// kernel's name ("ncclKernel_AllReduce_RING_LL_Sum_float" → "allreduce",
// "ncclDevKernel_SendRecv" → "sendrecv").
std::string collective_kind(const TraceModel& m, EventId g) {
  const std::string_view kernel = m.name_of(g);
  if (std::string_view c = m.args().text(g, Arg::CollectiveName); !c.empty()) return lower_alnum(c);
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_", "rcclKernel_"}) {
    size_t p = kernel.find(prefix);
    if (p == std::string_view::npos) continue;
    std::string_view rest = kernel.substr(p + prefix.size());
    return lower_alnum(rest.substr(0, rest.find_first_of("_(")));
  }
  return "collective";
}

int64_t dtype_bytes(std::string_view t) {
  std::string d = lower_alnum(t);
  if (d == "float" || d == "float32" || d == "int" || d == "int32" || d == "uint32") return 4;
  if (d == "half" || d == "bfloat16" || d == "float16" || d == "short" || d == "int16") return 2;
  if (d == "double" || d == "float64" || d == "long" || d == "int64" || d == "uint64") return 8;
  if (d == "byte" || d == "char" || d == "bool" || d == "int8" || d == "uint8") return 1;
  return -1;
}

// Adds `add` to the part named `name` (parts stay few: a linear search).
void add_part(std::vector<RankData::Part>& parts, uint32_t name, Ns cpu, Ns gpu) {
  for (RankData::Part& p : parts)
    if (p.name == name) {
      p.cpu += cpu;
      p.gpu += gpu;
      return;
    }
  parts.push_back({name, cpu, gpu});
}

void keep_top(std::vector<RankData::Part>& parts) {
  std::sort(parts.begin(), parts.end(), [](const RankData::Part& x, const RankData::Part& y) {
    Ns a = std::max(x.cpu, x.gpu), b = std::max(y.cpu, y.gpu);
    return a != b ? a > b : x.name < y.name;
  });
  if (parts.size() > kTopParts) parts.resize(kTopParts);
}

// Disjoint, sorted stretches [b, e) of the timeline; f(i, overlap) for each one [s, t) meets.
struct Windows {
  std::vector<Ns> b, e;
  template <class F>
  void each(Ns s, Ns t, F&& f) const {
    if (t <= s) return;
    size_t i = size_t(std::upper_bound(e.begin(), e.end(), s) - e.begin());
    for (; i < b.size() && b[i] < t; ++i) {
      Ns o = std::min(t, e[i]) - std::max(s, b[i]);
      if (o > 0) f(i, o);
    }
  }
};

// A layer's path without its iteration: "Backward/ResNet_0/layer1/conv1".
std::string_view without_iteration(std::string_view path) {
  size_t slash = path.find('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool by_start(const TraceModel& m, EventId x, EventId y) {
  return m.ev.start[x] != m.ev.start[y] ? m.ev.start[x] < m.ev.start[y] : x < y;
}

}  // namespace

std::vector<EventId> collective_kernels(const TraceModel& m) {
  std::vector<EventId> comms;
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::GpuStream) continue;
    for (EventId g = tr.events.begin; g < tr.events.end; ++g)
      if (m.ev.category(g) == Cat::Kernel && is_communication_kernel(m.name_of(g))) comms.push_back(g);
  }
  std::sort(comms.begin(), comms.end(), [&](EventId x, EventId y) { return by_start(m, x, y); });
  return comms;
}

int64_t collective_bytes(const TraceModel& m, EventId kernel) {
  int64_t nelems = m.args().integer(kernel, Arg::InMsgNelems), size = dtype_bytes(m.args().text(kernel, Arg::Dtype));
  return nelems >= 0 && size > 0 ? nelems * size : -1;
}

uint32_t RankData::intern(std::string_view s) {
  for (uint32_t i = 0; i < names.size(); ++i)
    if (names[i] == s) return i;
  names.emplace_back(s);
  return uint32_t(names.size() - 1);
}

namespace {

// The phase span holding `ts`, or null.
const RankData::PhaseSpan* phase_at(const RankData& r, Ns ts) {
  auto it = std::upper_bound(r.phases.begin(), r.phases.end(), ts, [](Ns v, const RankData::PhaseSpan& p) { return v < p.begin; });
  return it != r.phases.begin() && ts < (it - 1)->end ? &*(it - 1) : nullptr;
}

// The innermost span (by begin) holding `ts` among those beginning at `floor` or later that
// `keep` accepts, or null. Nested spans begin later than their parents, and with equal
// begins come after them (spans are stably sorted by begin, in tree order).
template <class Keep>
const LayerSpan* innermost_at(const std::vector<LayerSpan>& by_begin, Ns ts, Ns floor, Keep&& keep) {
  auto it = std::upper_bound(by_begin.begin(), by_begin.end(), ts, [](Ns v, const LayerSpan& x) { return v < x.begin; });
  while (it != by_begin.begin() && (it - 1)->begin >= floor) {
    --it;
    if (ts < it->end && keep(*it)) return &*it;
  }
  return nullptr;
}

// Charges `c` to `weights` (name, weight) in proportion, merging repeats of a name; equal
// shares when no weight is known. A layer of weight 0 among others is left out: a share of
// nothing is noise in the list.
void charge(RankData::Collective& c, const std::vector<std::pair<uint32_t, Ns>>& weights, CommAttribution how) {
  std::vector<std::pair<uint32_t, Ns>> merged;
  Ns total = 0;
  for (const auto& [name, w] : weights) {
    const uint32_t id = name;  // clang before 16 cannot capture a structured binding
    auto it = std::find_if(merged.begin(), merged.end(), [id](auto& x) { return x.first == id; });
    if (it == merged.end()) merged.push_back({id, w});
    else it->second += w;
    total += w;
  }
  for (auto [name, w] : merged)
    if (total == 0 || w > 0) c.layers.push_back({name, total > 0 ? double(w) / double(total) : 1.0 / double(merged.size())});
  c.attribution = how;
  c.estimated = c.layers.size() > 1;
}

}  // namespace

void attribute_collectives(RankData& r, std::vector<LayerSpan> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const LayerSpan& x, const LayerSpan& y) { return x.begin < y.begin; });
  auto first_after = [&](Ns ts) {
    return std::upper_bound(spans.begin(), spans.end(), ts, [](Ns v, const LayerSpan& x) { return v < x.begin; });
  };
  std::vector<size_t> by_launch(r.collectives.size());
  for (size_t i = 0; i < by_launch.size(); ++i) by_launch[i] = i;
  std::stable_sort(by_launch.begin(), by_launch.end(),
                   [&](size_t x, size_t y) { return r.collectives[x].launch < r.collectives[y].launch; });
  std::unordered_map<uint32_t, Ns> prev_bucket;  // per process group (each has its own buckets): the last one's launch
  for (size_t i : by_launch) {
    RankData::Collective& c = r.collectives[i];
    c.layers.clear();
    c.attribution = CommAttribution::Phase;
    c.estimated = false;
    const RankData::PhaseSpan* ph = phase_at(r, c.launch);
    const std::string& kind = r.names[c.kind];
    std::vector<std::pair<uint32_t, Ns>> weights;
    if (c.phase == PhaseKind::Backward && (kind == "allreduce" || kind == "reducescatter")) {
      // Buckets fill in gradient-ready order and each is launched when its last gradient is
      // ready: its layers are those whose backward finished since the previous bucket's
      // launch, and the one running at its launch (whose gradient filled it). So: the
      // layers whose backward began since the previous launch, within this backward.
      auto prev = prev_bucket.try_emplace(c.group, INT64_MIN).first;
      const Ns since = std::max(prev->second, ph ? ph->begin : INT64_MIN);
      prev->second = c.launch;
      for (auto it = first_after(since), end = first_after(c.launch); it != end; ++it)
        if (it->gradients) weights.push_back({it->name, it->gpu});
      // None began: one layer's gradients fill several buckets, and it is still running.
      if (weights.empty() && ph)
        if (const LayerSpan* running = innermost_at(spans, c.launch, ph->begin, [](const LayerSpan& s) { return s.gradients; }))
          weights.push_back({running->name, running->gpu});
      if (!weights.empty()) charge(c, weights, CommAttribution::Bucket);
      continue;
    }
    // A kernel without its host launch (not in the trace) has no phase or layer to go by.
    if (!ph || ph->phase != c.phase) continue;
    if (const LayerSpan* in = innermost_at(spans, c.launch, ph->begin, [](const LayerSpan&) { return true; })) {
      charge(c, {{in->name, 0}}, CommAttribution::Overlap);
      continue;
    }
    for (auto next = first_after(c.launch); next != spans.end() && next->begin < ph->end; ++next)
      if (next->phase == ph->phase) {
        charge(c, {{next->name, 0}}, CommAttribution::NextLayer);
        break;
      }
  }
}

RankData rank_data(const TraceModel& m, const Annotation& a, int64_t rank) {
  RankData r;
  r.rank = rank;
  r.world_size = m.distributed.world_size;
  r.file = m.path;
  const AnnotationTree& t = a.tree;
  const Analyses& an = a.analyses;
  std::unordered_map<std::string, uint32_t> name_ids;  // intern() is linear: fine for the few, not for every kernel
  auto id_of = [&](std::string_view s) {
    auto [it, added] = name_ids.try_emplace(std::string(s), uint32_t(r.names.size()));
    if (added) r.names.emplace_back(s);
    return it->second;
  };
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    const Iteration& it = a.iterations[i];
    r.iterations.push_back({it.step >= 0 ? it.step : int64_t(i), it.begin, it.end, it.partial});
  }
  for (NodeId n = 0; n < t.size(); ++n) {
    if (t.kind[n] != NodeKind::Phase) continue;
    NodeId it = t.ancestor(n, NodeKind::Iteration);
    int64_t step = -1;
    for (size_t i = 0; i < a.iterations.size() && step < 0; ++i)
      if (a.iterations[i].node == it) step = r.iterations[i].step;
    r.phases.push_back({step, t.phase[n], t.begin[n], t.end[n]});
  }
  r.iter_mean = an.iter_mean;
  r.iter_median = an.iter_median;
  r.window = an.window_end - an.window_begin;
  r.compute = an.compute;
  r.communication = an.communication;
  r.overlap = an.compute_comm_overlap;
  double util = 0;
  int devices = 0;
  for (const DeviceUtil& u : an.utilization)
    if (u.stream < 0 && u.elapsed > 0) util += double(u.busy) / double(u.elapsed), ++devices;
  r.utilization = devices ? util / devices : 0;

  // The GPU ops: collectives, and compute kernels with their leaf layer and phase.
  std::vector<NodeId> leaf(t.size(), kNoNode);  // per node: its leaf layer (a layer of ops) or none
  std::vector<Ns> leaf_gpu(t.size(), 0);        // per leaf layer: its own compute kernels' time
  for (NodeId n = 0; n < t.size(); ++n) {
    bool is_leaf = t.kind[n] == NodeKind::Layer && t.first_child(n) != kNoNode && t.kind[t.first_child(n)] == NodeKind::Op;
    leaf[n] = is_leaf ? n : t.parent[n] != kNoNode ? leaf[t.parent[n]] : kNoNode;
  }
  std::vector<EventId> compute;
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::GpuStream) continue;
    for (EventId g = tr.events.begin; g < tr.events.end; ++g)
      if (m.ev.category(g) == Cat::Kernel && !is_communication_kernel(m.name_of(g))) compute.push_back(g);
  }
  std::sort(compute.begin(), compute.end(), [&](EventId x, EventId y) { return by_start(m, x, y); });
  const std::vector<EventId> comms = collective_kernels(m);
  std::vector<Interval> busy;  // compute kernels' union
  for (EventId g : compute) busy.push_back({m.ev.start[g], m.ev.end(g)});
  merge_intervals(busy);
  auto busy_within = [&](Ns s, Ns e) {
    Ns sum = 0;
    auto it = std::upper_bound(busy.begin(), busy.end(), s, [](Ns v, const Interval& x) { return v < x.second; });
    for (; it != busy.end() && it->first < e; ++it) sum += std::min(e, it->second) - std::max(s, it->first);
    return sum;
  };
  auto node_of = [&](EventId e) { return e < a.node_of_event.size() ? a.node_of_event[e] : kNoNode; };
  auto iteration_at = [&](Ns ts) -> int64_t {
    auto it = std::upper_bound(a.iterations.begin(), a.iterations.end(), ts, [](Ns v, const Iteration& x) { return v < x.begin; });
    if (it == a.iterations.begin()) return -1;
    --it;
    return ts < it->end ? it - a.iterations.begin() : -1;
  };

  // The collectives.
  std::unordered_map<uint64_t, uint32_t> next_index;  // (group, step) → next index
  for (EventId g : comms) {
    RankData::Collective c;
    c.kind = id_of(collective_kind(m, g));
    std::string_view group = m.args().text(g, Arg::ProcessGroupName);
    c.group = id_of(group.empty() ? "default" : group);
    int64_t gs = m.args().integer(g, Arg::GroupSize);
    c.group_size = uint32_t(gs > 0 ? gs : std::max<int64_t>(m.distributed.world_size, 0));
    EventId launch = m.launch_of(g);
    c.launch = launch != kNoEvent ? m.ev.start[launch] : m.ev.start[g];
    c.start = m.ev.start[g];
    c.end = m.ev.end(g);
    int64_t it = iteration_at(c.launch);
    c.step = it < 0 ? -1 : r.iterations[size_t(it)].step;
    c.index = next_index[uint64_t(c.group) << 32 | uint32_t(c.step + 1)]++;
    c.bytes = collective_bytes(m, g);
    NodeId n = launch != kNoEvent ? node_of(launch) : node_of(g);
    c.phase = n != kNoNode ? t.phase[n] : PhaseKind::Other;
    c.exposed = (c.end - c.start) - busy_within(c.start, c.end);
    r.collectives.push_back(std::move(c));
  }

  // Before each collective: from the previous one's end to its start.
  Windows w;
  Ns first = a.iterations.empty() ? m.time_begin : a.iterations.front().begin;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    Ns b = i ? std::max(w.e.back(), r.collectives[i - 1].end) : first;
    Ns e = std::max(b, r.collectives[i].start);
    w.b.push_back(b);
    w.e.push_back(e);
  }
  for (NodeId n = 0; n < t.size(); ++n) {
    if (t.kind[n] == NodeKind::Phase)
      w.each(t.begin[n], t.end[n], [&](size_t i, Ns o) { r.collectives[i].before.phase_cpu[size_t(t.phase[n])] += o; });
    else if (leaf[n] == n) {
      uint32_t name = id_of(without_iteration(t.path(n)));
      w.each(t.begin[n], t.end[n], [&](size_t i, Ns o) { add_part(r.collectives[i].before.layers, name, o, 0); });
    }
  }
  for (EventId g : compute) {
    NodeId n = node_of(g);
    PhaseKind ph = n != kNoNode ? t.phase[n] : PhaseKind::Other;
    NodeId lf = n != kNoNode ? leaf[n] : kNoNode;
    if (lf != kNoNode) leaf_gpu[lf] += m.ev.dur[g];
    uint32_t kname = UINT32_MAX, lname = UINT32_MAX;
    w.each(m.ev.start[g], m.ev.end(g), [&](size_t i, Ns o) {
      RankData::Breakdown& bd = r.collectives[i].before;
      bd.phase_gpu[size_t(ph)] += o;
      if (kname == UINT32_MAX) kname = id_of(m.name_of(g));
      add_part(bd.kernels, kname, 0, o);
      if (lf != kNoNode) {
        if (lname == UINT32_MAX) lname = id_of(without_iteration(t.path(lf)));
        add_part(bd.layers, lname, 0, o);
      }
    });
  }
  for (size_t i = 0; i < r.collectives.size(); ++i) r.collectives[i].before.gpu_compute = busy_within(w.b[i], w.e[i]);
  for (const IdleGap& gap : an.idle.gaps)
    w.each(gap.begin, gap.end, [&](size_t i, Ns o) { r.collectives[i].before.idle[size_t(gap.cause)] += o; });
  for (RankData::Collective& c : r.collectives) {
    keep_top(c.before.layers);
    keep_top(c.before.kernels);
  }

  // The leaf layers, each named by the forward layer it is or differentiates.
  std::vector<LayerSpan> spans;
  for (NodeId n = 0; n < t.size(); ++n) {
    if (leaf[n] != n) continue;
    const NodeId fwd = t.mirror[n];
    const bool differentiates = fwd != kNoNode && t.kind[fwd] == NodeKind::Layer;
    const std::string path = t.path(differentiates ? fwd : n);
    std::string_view p = without_iteration(path);  // "Forward/…": the phase goes too
    size_t slash = p.find('/');
    spans.push_back({id_of(slash == std::string_view::npos ? p : p.substr(slash + 1)), t.phase[n], t.begin[n], t.end[n],
                     leaf_gpu[n], differentiates && t.phase[n] == PhaseKind::Backward});
  }
  attribute_collectives(r, std::move(spans));
  return r;
}

}  // namespace strata
