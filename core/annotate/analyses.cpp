// Whole-trace analyses (the TBD suite's questions): GPU utilization per device and stream,
// idle-gap causes, kernel breakdown, compute / communication / memory and their overlap,
// tensor-core share, iteration time statistics, throughput, memory timeline.
#include "core/annotate/internal.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

namespace strata::annot {

namespace {

using Interval = std::pair<Ns, Ns>;

// Merges start-sorted intervals in place.
void merge(std::vector<Interval>& v) {
  size_t w = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (w && v[i].first <= v[w - 1].second) v[w - 1].second = std::max(v[w - 1].second, v[i].second);
    else v[w++] = v[i];
  }
  v.resize(w);
}

Ns total(const std::vector<Interval>& v) {
  Ns t = 0;
  for (auto& [b, e] : v) t += e - b;
  return t;
}

Ns overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  Ns t = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    Ns lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    (a[i].second < b[j].second ? i : j)++;
  }
  return t;
}

bool is_comm(std::string_view n) {
  return n.find("nccl") != std::string_view::npos || n.find("rccl") != std::string_view::npos ||
         n.find("NCCL") != std::string_view::npos;
}

bool is_tensor_core(std::string_view n) {
  static constexpr std::string_view keys[] = {"884", "1688", "16816", "hmma", "HMMA", "imma", "xmma", "wgmma", "gmma",
                                              "tensorop", "TensorOp", "nvjet", "_tc_", "mfma", "MFMA", "cudnn_infer_ampere",
                                              "sm80_", "sm90_", "bf16", "f16f16", "tf32"};
  for (std::string_view k : keys)
    if (n.find(k) != std::string_view::npos) return true;
  return false;
}

struct PhaseIndex {
  struct Span { Ns b, e; NodeId n; };
  std::vector<Span> spans;
  explicit PhaseIndex(const AnnotationTree& t) {
    for (NodeId i = 0; i < t.size(); ++i)
      if (t.kind[i] == NodeKind::Phase) spans.push_back({t.begin[i], t.end[i], i});
    std::sort(spans.begin(), spans.end(), [](auto& x, auto& y) { return x.b < y.b; });
  }
  NodeId at(Ns ts) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), ts, [](Ns v, const Span& s) { return v < s.b; });
    if (it == spans.begin()) return kNoNode;
    --it;
    return ts < it->e ? it->n : kNoNode;
  }
};

// The first dimension of input `which` in the op's "Input Dims" (record_shapes), or -1.
int64_t batch_from_source(std::string_view src, int which) {
  size_t p = src.find("\"Input Dims\"");
  if (p == std::string_view::npos) return -1;
  p = src.find('[', p);
  if (p == std::string_view::npos) return -1;
  ++p;
  for (int k = 0;; ++k) {
    while (p < src.size() && src[p] != '[' && src[p] != ']') ++p;
    if (p >= src.size() || src[p] == ']') return -1;  // fewer inputs
    size_t close = src.find(']', p);
    if (close == std::string_view::npos) return -1;
    if (k == which) {
      int64_t v = -1;
      size_t q = p + 1;
      while (q < close && src[q] == ' ') ++q;
      auto r = std::from_chars(src.data() + q, src.data() + close, v);
      return r.ec == std::errc() && v > 0 ? v : -1;
    }
    p = close + 1;
  }
}

}  // namespace

void run_analyses(Context& c, Annotation& a) {
  const TraceModel& m = c.m;
  const auto& ev = m.ev;
  const AnnotationTree& t = a.tree;
  Analyses& r = a.analyses;
  r.window_begin = a.iterations.empty() ? m.time_begin : a.iterations.front().begin;
  r.window_end = a.iterations.empty() ? m.time_end : a.iterations.back().end;
  if (r.window_end <= r.window_begin) {
    r.window_begin = m.time_begin;
    r.window_end = m.time_end;
  }
  Ns W0 = r.window_begin, W1 = r.window_end;

  // Busy intervals per device and per stream (overflow tracks count as their stream).
  std::map<int32_t, std::vector<Interval>> dev;
  std::map<std::pair<int32_t, int64_t>, std::vector<Interval>> streams;
  std::map<std::pair<int32_t, int64_t>, uint64_t> stream_ops;
  std::vector<Interval> compute, comm, memops;
  std::unordered_map<StrId, size_t> kidx;
  for (EventId g : c.gpu_ops) {
    uint32_t ti = c.track[g];
    const Track& tr = m.tracks[ti];
    const Track& base = tr.overflow_of != kNoTrack ? m.tracks[tr.overflow_of] : tr;
    int32_t d = m.processes[base.process].device;
    Ns s = ev.start[g], e = ev.end(g);
    Cat k = ev.category(g);
    std::string_view nm = m.name_of(g);
    // Kernel statistics cover the whole trace.
    auto [it, added] = kidx.emplace(ev.name[g], r.kernels.size());
    if (added) {
      KernelStat ks;
      ks.name = nm;
      ks.kind = k != Cat::Kernel ? 2 : is_comm(nm) ? 1 : 0;
      ks.tensor_core = k == Cat::Kernel && is_tensor_core(nm);
      r.kernels.push_back(std::move(ks));
    }
    KernelStat& ks = r.kernels[it->second];
    ++ks.count;
    ks.total += ev.dur[g];
    ks.max = std::max(ks.max, ev.dur[g]);
    if (k == Cat::Kernel) {
      r.kernel_total += ev.dur[g];
      if (ks.tensor_core) r.tensor_core += ev.dur[g];
    }
    s = std::max(s, W0);
    e = std::min(e, W1);
    if (e <= s) continue;
    dev[d].push_back({s, e});
    streams[{d, base.stream >= 0 ? base.stream : base.tid}].push_back({s, e});
    ++stream_ops[{d, base.stream >= 0 ? base.stream : base.tid}];
    (ks.kind == 2 ? memops : ks.kind == 1 ? comm : compute).push_back({s, e});
  }
  std::sort(r.kernels.begin(), r.kernels.end(), [](auto& x, auto& y) { return x.total > y.total; });
  for (auto* v : {&compute, &comm, &memops}) merge(*v);
  r.compute = total(compute);
  r.communication = total(comm);
  r.memory_ops = total(memops);
  r.compute_comm_overlap = overlap(compute, comm);
  for (auto& [d, v] : dev) {
    merge(v);
    uint64_t ops = 0;
    for (auto& [key, n] : stream_ops)
      if (key.first == d) ops += n;
    r.utilization.push_back({d, -1, total(v), W1 - W0, ops});
  }
  for (auto& [key, v] : streams) {
    merge(v);
    r.utilization.push_back({key.first, key.second, total(v), W1 - W0, stream_ops[key]});
  }

  // Idle gaps and their causes.
  PhaseIndex phases(t);
  std::vector<Interval> syncs;
  for (size_t ti = 0; ti < m.tracks.size(); ++ti) {
    if (m.tracks[ti].kind != TrackKind::CpuThread) continue;
    for (EventId e = m.tracks[ti].events.begin; e < m.tracks[ti].events.end; ++e) {
      Cat k = ev.category(e);
      if ((k == Cat::CudaRuntime || k == Cat::CudaDriver || k == Cat::CudaSync) && is_sync_call(m.name_of(e)))
        syncs.push_back({ev.start[e], ev.end(e)});
    }
  }
  std::sort(syncs.begin(), syncs.end());
  merge(syncs);
  // The launch time of the first GPU op starting at or after t on device d.
  std::map<int32_t, std::vector<EventId>> dev_ops;
  for (EventId g : c.gpu_ops) {
    const Track& tr = m.tracks[c.track[g]];
    const Track& base = tr.overflow_of != kNoTrack ? m.tracks[tr.overflow_of] : tr;
    dev_ops[m.processes[base.process].device].push_back(g);
  }
  for (auto& [d, v] : dev) {
    const auto& ops = dev_ops[d];
    Ns prev = W0;
    auto gap = [&](Ns gs, Ns ge) {
      if (ge <= gs) return;
      Ns len = ge - gs;
      ++r.idle.count;
      r.idle.total += len;
      NodeId ph = phases.at(gs + len / 2);
      if (ph != kNoNode && t.phase[ph] == PhaseKind::DataLoading) {
        r.idle.data_loading += len;
        return;
      }
      auto lo = std::lower_bound(syncs.begin(), syncs.end(), Interval{gs, INT64_MIN});
      if (lo != syncs.begin()) --lo;
      Ns in_sync = 0;
      for (auto it = lo; it != syncs.end() && it->first < ge; ++it)
        in_sync += std::max<Ns>(0, std::min(ge, it->second) - std::max(gs, it->first));
      if (in_sync * 2 >= len) {
        r.idle.sync += len;
        return;
      }
      auto nx = std::lower_bound(ops.begin(), ops.end(), ge, [&](EventId g, Ns tv) { return ev.start[g] < tv; });
      if (nx != ops.end()) {
        EventId l = ev.link[*nx];
        if (l != kNoEvent && ev.start[l] + ev.dur[l] / 2 >= gs) {
          r.idle.launch += len;
          return;
        }
      }
      r.idle.other += len;
    };
    for (auto& [b, e] : v) {
      gap(prev, b);
      prev = std::max(prev, e);
    }
    gap(prev, W1);
  }

  // Iteration times (complete iterations when there are any).
  std::vector<Ns> times;
  for (auto& it : a.iterations)
    if (!it.partial) times.push_back(it.end - it.begin);
  if (times.empty())
    for (auto& it : a.iterations) times.push_back(it.end - it.begin);
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    Ns sum = 0;
    for (Ns x : times) sum += x;
    r.iter_mean = sum / Ns(times.size());
    r.iter_median = times[times.size() / 2];
    r.iter_p95 = times[std::min(times.size() - 1, size_t(double(times.size()) * 0.95))];
    r.iter_min = times.front();
    r.iter_max = times.back();
  }
  // Batch size from the first forward op's input shapes (record_shapes).
  for (NodeId i = 0; i < t.size() && r.batch_size < 0; ++i) {
    if (t.kind[i] != NodeKind::Op || t.phase[i] != PhaseKind::Forward || t.event[i] == kNoEvent) continue;
    // Embedding tables come first in their inputs (then the indices); the others take the batch first.
    std::string_view nm = m.name_of(t.event[i]);
    if (!is_parametric(nm)) continue;
    r.batch_size = batch_from_source(m.source_of(t.event[i]), nm.find("embedding") != std::string_view::npos ? 1 : 0);
    if (r.batch_size < 0) break;  // no shapes recorded
  }
  if (r.batch_size > 0 && r.iter_mean > 0) r.samples_per_s = double(r.batch_size) * 1e9 / double(r.iter_mean);

  // Memory: peak, per phase, and what stays allocated across phases.
  const MemoryEvents& me = m.memory;
  MemoryUse& mu = r.memory;
  bool any_cuda = false;
  for (size_t i = 0; i < me.size(); ++i) any_cuda |= me.device_type[i] == 1;
  std::vector<size_t> idx;
  for (size_t i = 0; i < me.size(); ++i)
    if (!any_cuda || me.device_type[i] == 1) idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return me.ts[x] < me.ts[y]; });
  if (!idx.empty()) {
    mu.present = true;
    std::unordered_map<uint64_t, std::pair<PhaseKind, int64_t>> live;
    std::vector<MemoryUse::PhaseAlloc> per(static_cast<size_t>(PhaseKind::Count));
    for (size_t p = 0; p < per.size(); ++p) per[p].phase = PhaseKind(p);
    std::unordered_map<NodeId, MemoryUse::LayerAlloc> layers;
    for (size_t i : idx) {
      if (me.total_allocated[i] > mu.peak_allocated) {
        mu.peak_allocated = me.total_allocated[i];
        mu.peak_ts = me.ts[i];
      }
      mu.peak_reserved = std::max(mu.peak_reserved, me.total_reserved[i]);
      NodeId ph = phases.at(me.ts[i]);
      PhaseKind pk = ph == kNoNode ? PhaseKind::Other : t.phase[ph];
      int64_t bytes = me.bytes[i];
      if (bytes > 0) {
        per[size_t(pk)].allocated += bytes;
        live[me.addr[i]] = {pk, bytes};
      } else if (bytes < 0) {
        per[size_t(pk)].freed += -bytes;
        auto it = live.find(me.addr[i]);
        if (it != live.end()) {
          PhaseKind from = it->second.first;
          if (from == pk) mu.temporaries += it->second.second;
          else if (from == PhaseKind::Forward || from == PhaseKind::Loss) mu.activations += it->second.second;
          else mu.temporaries += it->second.second;
          live.erase(it);
        }
      }
      if (pk == PhaseKind::Forward && me.track[i] < m.tracks.size()) {
        EventId e = m.event_at(me.track[i], me.ts[i]);
        NodeId n = e != kNoEvent ? a.node_of_event[e] : kNoNode;
        while (n != kNoNode && t.kind[n] == NodeKind::Op) n = t.parent[n];
        if (n != kNoNode && t.kind[n] == NodeKind::Layer) {
          auto& la = layers[n];
          if (bytes > 0) la.allocated += bytes;
          la.net += bytes;
        }
      }
    }
    for (auto& [addr, v] : live) {
      if (v.first == PhaseKind::Optimizer) mu.optimizer_state += v.second;
      else mu.persistent += v.second;
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
    // Where the peak happened.
    for (size_t i : idx)
      if (me.ts[i] == mu.peak_ts && me.track[i] < m.tracks.size()) {
        EventId e = m.event_at(me.track[i], me.ts[i]);
        NodeId n = e != kNoEvent ? a.node_of_event[e] : kNoNode;
        if (n == kNoNode) n = phases.at(me.ts[i]);
        if (n != kNoNode) mu.peak_where = t.path(n);
        break;
      }
  }
}

}  // namespace strata::annot
