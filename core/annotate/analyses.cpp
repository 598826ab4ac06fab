// Whole-trace analyses (the TBD suite's questions): GPU utilization per device and stream,
// idle-gap causes, kernel breakdown, compute / communication / memory and their overlap,
// tensor-core share, iteration time statistics, throughput, memory timeline.
#include "core/annotate/internal.h"
#include "core/intervals.h"
#include "core/name_memo.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace strata {

const char* idle_cause_name(IdleCause c) {
  switch (c) {
    case IdleCause::Launch: return "launch overhead";
    case IdleCause::DataLoading: return "data loading";
    case IdleCause::HostBlocked: return "host blocked";
    case IdleCause::Communication: return "communication";
    case IdleCause::CpuCompute: return "CPU compute";
    case IdleCause::Other: return "other";
    case IdleCause::Count: break;
  }
  return "?";
}

const char* idle_cause_key(IdleCause c) {
  switch (c) {
    case IdleCause::Launch: return "launch";
    case IdleCause::DataLoading: return "data_loading";
    case IdleCause::HostBlocked: return "host_blocked";
    case IdleCause::Communication: return "communication";
    case IdleCause::CpuCompute: return "cpu_compute";
    case IdleCause::Other: return "other";
    case IdleCause::Count: break;
  }
  return "?";
}

const char* gpu_work_name(GpuWork w) {
  switch (w) {
    case GpuWork::Compute: return "compute";
    case GpuWork::Communication: return "communication";
    case GpuWork::Memory: return "memory";
  }
  return "?";
}

bool is_communication_kernel(std::string_view n) {
  return n.find("nccl") != std::string_view::npos || n.find("rccl") != std::string_view::npos ||
         n.find("NCCL") != std::string_view::npos;
}

bool is_tensor_core_kernel(std::string_view n) {
  static constexpr std::string_view keys[] = {"884", "1688", "16816", "hmma", "HMMA", "imma", "xmma", "wgmma", "gmma",
                                              "tensorop", "TensorOp", "nvjet", "_tc_", "mfma", "MFMA", "cudnn_infer_ampere",
                                              "sm80_", "sm90_", "bf16", "f16f16", "tf32"};
  for (std::string_view k : keys)
    if (n.find(k) != std::string_view::npos) return true;
  return false;
}

namespace annot {
namespace {

// A gap this short before an op that was already issued is the GPU's own launch latency (as
// the what-if graph's kInferredMin: a longer delay is a wait the trace does not show).
constexpr Ns kLaunchLatency = 5'000;


// The batch size an op's inputs show, or -1. Most parametric ops take the batch first in
// their first input; aten::embedding takes its indices second, batch first unless they were
// flattened. Fused lookups (embedding_bag, fbgemm's tables) take flat index lists: no batch.
int64_t batch_of(const TraceModel& m, EventId e) {
  std::string_view name = m.name_of(e);
  bool embedding = name.find("embedding") != std::string_view::npos;
  if (embedding && name != "aten::embedding") return -1;
  std::vector<int64_t> dims = m.args().input_shape(e, embedding ? 1 : 0);
  if (dims.empty() || (embedding && dims.size() < 2)) return -1;
  return dims[0] > 0 ? dims[0] : -1;
}

}  // namespace

namespace {

// Busy time of one device or one stream (overflow tracks count as their stream), as a running
// union: the GPU ops come in start order, so no per-op interval lists are kept.
struct Lane {
  int32_t device;
  int64_t stream;  // -1: the whole device
  IntervalUnion busy;
  uint64_t ops = 0;          // in the window
  std::vector<EventId> all;  // device lanes: every GPU op, in start order (when there are several)
};

// The whole-trace analyses, one function per figure; what several share (the lanes, the GPU's
// merged busy time) is computed once, by the first that needs it.
struct Analyzer {
  Context& c;
  Annotation& a;
  const TraceModel& m;
  Analyses& r;
  Ns W0 = 0, W1 = 0;
  std::vector<Lane> devs, streams;
  std::vector<Interval> busy_all;  // every GPU op's busy time (any device), merged, in the window
  NameMemo communication;          // is_communication_kernel, per name

  Analyzer(Context& cx, Annotation& ax) : c(cx), a(ax), m(cx.m), r(ax.analyses), communication(cx.m, is_communication_kernel) {
    r.window_begin = a.iterations.empty() ? m.time_begin : a.iterations.front().begin;
    r.window_end = a.iterations.empty() ? m.time_end : a.iterations.back().end;
    if (r.window_end <= r.window_begin) {
      r.window_begin = m.time_begin;
      r.window_end = m.time_end;
    }
    W0 = r.window_begin;
    W1 = r.window_end;
  }

  void run() {
    gpu_work();
    exposed_communication();
    iteration_gpu_busy();
    top_cpu_ops();
    utilization();
    idle_gaps();
    iteration_times();
    batch_size();
    analyze_memory(m, a);
  }

  // Per device and stream: busy time; per kernel name: its time; compute, communication and
  // memory work and their overlap (|compute| + |comm| - |compute ∪ comm|).
  void gpu_work() {
    const auto& ev = m.ev;
    auto lane = [](std::vector<Lane>& v, int32_t d, int64_t s) {
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i].device == d && v[i].stream == s) return uint32_t(i);
      v.push_back({d, s, {}, 0, {}});
      return uint32_t(v.size() - 1);
    };
    std::vector<EventId> first_ev;            // GPU tracks' first events, to find an op's track
    std::vector<uint32_t> dev_of, stream_of;  // per GPU track: its lanes
    for (const Track& tr : m.tracks) {
      if (tr.kind != TrackKind::GpuStream || tr.events.empty()) continue;
      const Track& base = tr.overflow_of != kNoTrack ? m.tracks[tr.overflow_of] : tr;
      int32_t d = m.processes[base.process].device;
      first_ev.push_back(tr.events.begin);
      dev_of.push_back(lane(devs, d, -1));
      stream_of.push_back(lane(streams, d, base.stream >= 0 ? base.stream : base.tid));
    }
    IntervalUnion compute, comm, memops, compute_or_comm;
    std::vector<uint32_t> kidx(m.strings.size(), UINT32_MAX);  // name → index into r.kernels
    for (EventId g : c.gpu_ops) {
      size_t tk = size_t(std::upper_bound(first_ev.begin(), first_ev.end(), g) - first_ev.begin()) - 1;
      Lane& dl = devs[dev_of[tk]];
      if (devs.size() > 1) dl.all.push_back(g);
      Ns s = ev.start[g], e = ev.end(g);
      Cat k = ev.category(g);
      // Kernel statistics cover the whole trace.
      uint32_t& ki = kidx[ev.name[g]];
      if (ki == UINT32_MAX) {
        std::string_view nm = m.name_of(g);
        ki = uint32_t(r.kernels.size());
        NameStat ks;
        ks.name = nm;
        ks.kind = k != Cat::Kernel ? GpuWork::Memory : is_communication_kernel(nm) ? GpuWork::Communication : GpuWork::Compute;
        ks.tensor_core = k == Cat::Kernel && is_tensor_core_kernel(nm);
        r.kernels.push_back(std::move(ks));
      }
      NameStat& ks = r.kernels[ki];
      ++ks.count;
      ks.total += ev.dur[g];
      if (ks.longest == kNoEvent || ev.dur[g] > ks.max) ks.longest = g;
      ks.max = std::max(ks.max, ev.dur[g]);
      r.gpu_op_total += ev.dur[g];
      if (k == Cat::Kernel) {
        r.kernel_total += ev.dur[g];
        if (ks.tensor_core) r.tensor_core += ev.dur[g];
      }
      s = std::max(s, W0);
      e = std::min(e, W1);
      if (e <= s) continue;
      dl.busy.add(s, e);
      ++dl.ops;
      Lane& sl = streams[stream_of[tk]];
      sl.busy.add(s, e);
      ++sl.ops;
      (ks.kind == GpuWork::Memory ? memops : ks.kind == GpuWork::Communication ? comm : compute).add(s, e);
      if (ks.kind != GpuWork::Memory) compute_or_comm.add(s, e);
      if (!busy_all.empty() && s <= busy_all.back().second) busy_all.back().second = std::max(busy_all.back().second, e);
      else busy_all.push_back({s, e});
    }
    std::sort(r.kernels.begin(), r.kernels.end(), [](auto& x, auto& y) { return x.total != y.total ? x.total > y.total : x.name < y.name; });
    r.compute = compute.total();
    r.communication = comm.total();
    r.memory_ops = memops.total();
    r.compute_comm_overlap = r.compute + r.communication - compute_or_comm.total();
  }

  // Communication not hidden behind compute, over the whole trace.
  void exposed_communication() {
    const auto& ev = m.ev;
    std::vector<Interval> comp, com;
    for (EventId g : c.gpu_ops) {
      if (ev.category(g) != Cat::Kernel) continue;
      (communication(g) ? com : comp).push_back({ev.start[g], ev.end(g)});
    }
    merge_intervals(comp);
    merge_intervals(com);
    size_t k = 0;
    for (auto [s, e] : com) {
      while (k < comp.size() && comp[k].second <= s) ++k;
      for (size_t j = k; j < comp.size() && comp[j].first < e && s < e; ++j) {
        if (comp[j].first > s) r.exposed_communication.push_back({s, comp[j].first});
        s = std::max(s, comp[j].second);
      }
      if (s < e) r.exposed_communication.push_back({s, e});
    }
  }

  // GPU busy within each iteration (iterations are in time order and do not overlap).
  void iteration_gpu_busy() {
    r.iteration_gpu_busy.assign(a.iterations.size(), 0);
    for (size_t i = 0, j = 0; i < a.iterations.size(); ++i) {
      const Iteration& it = a.iterations[i];
      while (j < busy_all.size() && busy_all[j].second <= it.begin) ++j;
      for (size_t k = j; k < busy_all.size() && busy_all[k].first < it.end; ++k)
        r.iteration_gpu_busy[i] += std::min(busy_all[k].second, it.end) - std::max(busy_all[k].first, it.begin);
    }
  }

  // Outermost CPU ops that start in the window, per name.
  void top_cpu_ops() {
    const auto& ev = m.ev;
    std::vector<uint32_t> oidx(m.strings.size(), UINT32_MAX);
    for (const Track& tr : m.tracks) {
      if (tr.kind != TrackKind::CpuThread || tr.levels.empty()) continue;
      for (const IndexRange& level : tr.levels) {
        auto st = ev.start.begin();
        for (auto e = EventId(std::lower_bound(st + level.begin, st + level.end, W0) - st); e < level.end && ev.start[e] < W1; ++e) {
          if (!c.is_root(e)) continue;
          uint32_t& oi = oidx[ev.name[e]];
          if (oi == UINT32_MAX) {
            oi = uint32_t(r.cpu_ops.size());
            r.cpu_ops.push_back({std::string(m.name_of(e))});
          }
          NameStat& os = r.cpu_ops[oi];
          ++os.count;
          os.total += ev.dur[e];
          if (os.longest == kNoEvent || ev.dur[e] > os.max) os.longest = e;
          os.max = std::max(os.max, ev.dur[e]);
        }
      }
    }
    std::sort(r.cpu_ops.begin(), r.cpu_ops.end(), [](auto& x, auto& y) { return x.total != y.total ? x.total > y.total : x.name < y.name; });
    if (r.cpu_ops.size() > 50) r.cpu_ops.resize(50);
  }

  // Lanes with work in the window, by device then stream.
  void utilization() {
    auto by_key = [](const Lane& x, const Lane& y) { return std::pair(x.device, x.stream) < std::pair(y.device, y.stream); };
    std::sort(devs.begin(), devs.end(), by_key);
    std::sort(streams.begin(), streams.end(), by_key);
    for (auto* v : {&devs, &streams})
      for (const Lane& l : *v)
        if (l.ops) r.utilization.push_back({l.device, l.stream, l.busy.total(), W1 - W0, l.ops});
  }

  // Idle gaps and their causes (the phase verdicts' classes).
  void idle_gaps();

  // Iteration times (complete iterations when there are any).
  void iteration_times() {
    std::vector<Ns> times;
    for (auto& it : a.iterations)
      if (!it.partial) times.push_back(it.end - it.begin);
    if (times.empty())
      for (auto& it : a.iterations) times.push_back(it.end - it.begin);
    if (times.empty()) return;
    std::sort(times.begin(), times.end());
    Ns sum = 0;
    for (Ns x : times) sum += x;
    r.iter_mean = sum / Ns(times.size());
    size_t mid = times.size() / 2;
    r.iter_median = times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
    r.iter_p95 = times[std::min(times.size() - 1, size_t(double(times.size()) * 0.95))];
    r.iter_min = times.front();
    r.iter_max = times.back();
  }

  // Batch size from the first forward op's input shapes (record_shapes), and the throughput.
  void batch_size() {
    const AnnotationTree& t = a.tree;
    for (NodeId i = 0; i < t.size() && r.batch_size < 0; ++i) {
      if (t.kind[i] != NodeKind::Op || t.phase[i] != PhaseKind::Forward || t.event[i] == kNoEvent) continue;
      if (!is_parametric(m.name_of(t.event[i]))) continue;
      if (m.args().input_shape(t.event[i], 0).empty()) break;  // no shapes recorded
      r.batch_size = batch_of(m, t.event[i]);
    }
    if (r.batch_size > 0 && r.iter_mean > 0) r.samples_per_s = double(r.batch_size) * 1e9 / double(r.iter_mean);
  }
};

void Analyzer::idle_gaps() {
  const auto& ev = m.ev;
  const AnnotationTree& t = a.tree;
  // Gaps come in time order, so every lookup is a forward cursor.
  PhaseIndex phases(t);
  std::vector<Interval> syncs, launches, collectives;  // on CPU threads, merged
  NameMemo collective(m, is_host_collective);
  for (size_t ti = 0; ti < m.tracks.size(); ++ti) {
    if (m.tracks[ti].kind != TrackKind::CpuThread) continue;
    for (EventId e = m.tracks[ti].events.begin; e < m.tracks[ti].events.end; ++e) {
      if (c.is_sync(e)) syncs.push_back({ev.start[e], ev.end(e)});
      else if (m.gpu_op_of(e) != kNoEvent) launches.push_back({ev.start[e], ev.end(e)});
      if (!c.is_root(e) && ev.category(e) != Cat::UserAnnotation) continue;
      if (collective(e)) collectives.push_back({ev.start[e], ev.end(e)});
    }
  }
  for (auto* v : {&syncs, &launches, &collectives}) merge_intervals(*v);
  // Time of merged intervals `v` inside [gs, ge); `i` is the caller's cursor into `v`.
  auto overlap = [](const std::vector<Interval>& v, size_t& i, Ns gs, Ns ge) {
    while (i < v.size() && v[i].second <= gs) ++i;
    Ns in = 0;
    for (size_t k = i; k < v.size() && v[k].first < ge; ++k) in += std::min(ge, v[k].second) - std::max(gs, v[k].first);
    return in;
  };
  for (const Lane& l : devs) {
    if (!l.ops) continue;
    const auto& ops = devs.size() > 1 ? l.all : c.gpu_ops;
    size_t ph_i = 0, sy_i = 0, la_i = 0, co_i = 0, op_i = 0;  // cursors
    Ns prev = W0;
    auto cause_of = [&](Ns gs, Ns ge) {
      Ns len = ge - gs, mid = gs + len / 2;
      while (ph_i < phases.spans.size() && phases.spans[ph_i].b <= mid) ++ph_i;
      NodeId ph = ph_i && mid < phases.spans[ph_i - 1].e ? phases.spans[ph_i - 1].n : kNoNode;
      if (ph != kNoNode && t.phase[ph] == PhaseKind::DataLoading) return IdleCause::DataLoading;
      if (overlap(syncs, sy_i, gs, ge) * 2 >= len) return IdleCause::HostBlocked;
      if (overlap(collectives, co_i, gs, ge) * 2 >= len) return IdleCause::Communication;
      const Ns in_launch = overlap(launches, la_i, gs, ge);
      while (op_i < ops.size() && ev.start[ops[op_i]] < ge) ++op_i;
      EventId next = op_i < ops.size() ? ops[op_i] : kNoEvent;
      EventId ln = next != kNoEvent ? m.launch_of(next) : kNoEvent;
      if (ln != kNoEvent && ev.start[ln] + ev.dur[ln] / 2 < gs) {  // issued before the GPU went idle
        if (ev.category(next) == Cat::Kernel && communication(next))
          return IdleCause::Communication;  // a collective waiting for its peers
        if (len <= kLaunchLatency) return IdleCause::Launch;  // the GPU's own latency between queued ops
        // A second stage still submitting it (torch_npu's task queue: the op enqueued, a
        // runtime call on the queue's thread launches), or the host busy launching others.
        if (in_launch * 2 >= len) return IdleCause::Launch;
        return IdleCause::Other;  // a wait the trace does not show
      }
      // The GPU waited for the host to issue its next op (or the trace does not link it, or
      // there is none): the host's launches, else its own work (ops, Python).
      return in_launch * 2 >= len ? IdleCause::Launch : IdleCause::CpuCompute;
    };
    auto gap = [&](Ns gs, Ns ge) {
      if (ge <= gs) return;
      const Ns len = ge - gs;
      const IdleCause cause = cause_of(gs, ge);
      ++r.idle.count;
      r.idle.total += len;
      r.idle.by_cause[size_t(cause)] += len;
      r.idle.gaps.push_back({gs, ge, l.device, cause});
    };
    // The device's busy intervals again, merged as above; each new one ends a gap.
    bool open = false;
    Ns cur_e = 0;
    for (EventId g : ops) {
      Ns s = std::max(ev.start[g], W0), e = std::min(ev.end(g), W1);
      if (e <= s) continue;
      if (open && s <= cur_e) {
        cur_e = std::max(cur_e, e);
        continue;
      }
      if (open) prev = std::max(prev, cur_e);
      gap(prev, s);
      open = true;
      cur_e = e;
    }
    if (open) prev = std::max(prev, cur_e);
    gap(prev, W1);
  }
}

}  // namespace

void run_analyses(Context& c, Annotation& a) { Analyzer(c, a).run(); }

}  // namespace annot

}  // namespace strata
