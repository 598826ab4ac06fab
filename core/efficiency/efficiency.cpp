// Each kernel's work (efficiency.h): the op that launched it, that op's work from its shapes
// shared among its kernels by time, counters where the range profiler measured them, and the
// device's roofline. Grouping and the phase sentences: efficiency_groups.cpp.
#include "core/efficiency/efficiency.h"

#include "core/annotate/annotation.h"
#include "core/efficiency/efficiency_internal.h"
#include "core/name_memo.h"
#include "core/parallel.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <unordered_map>

namespace strata {

const char* work_source_name(WorkSource s) {
  switch (s) {
    case WorkSource::Shapes: return "shapes";
    case WorkSource::Counters: return "counters";
    case WorkSource::None: break;
  }
  return "none";
}

double KernelWork::roofline_ns() const {
  if (source == WorkSource::None || peak <= 0 || bandwidth <= 0) return -1;
  if (note == RoofNote::Cached || note == RoofNote::FastAlgorithm) return -1;
  return std::max(flops / peak, bytes / bandwidth) * 1e9;
}

double KernelWork::roofline_share() const {
  const double r = roofline_ns();
  return r < 0 || time <= 0 ? -1 : r / double(time);
}

void EfficiencyStat::add(const KernelWork& k) {
  ++kernels;
  time += k.time;
  if (k.source == WorkSource::None) return;
  ++modelled;
  modelled_time += k.time;
  flops += k.flops;
  bytes += k.bytes;
  const double r = k.roofline_ns();
  if (r < 0) return;
  roofline_time += k.time;
  roofline_ns += r;
  compute_ns += k.flops / k.peak * 1e9;
  memory_ns += k.bytes / k.bandwidth * 1e9;
  if (k.compute_bound()) compute_bound_time += k.time;
}

namespace {

// A convolution recorded without stride and padding (the 2021 format): the input of a following
// op that looks like its output (the batch first, then the conv's output channels): the next op
// at its depth, then at its parents' (a batch_norm after the conv2d that holds it).
std::vector<int64_t> next_op_output(const TraceModel& m, EventId op, int64_t batch, int64_t channels) {
  for (EventId e = op; e != kNoEvent && m.ev.category(e) == Cat::CpuOp; e = m.parent_of(e)) {
    const uint32_t t = m.track_of(e);
    if (t == kNoTrack) break;
    const EventId parent = m.parent_of(e);
    const Ns limit = parent == kNoEvent ? std::numeric_limits<Ns>::max() : m.ev.end(parent);
    const IndexRange& level = m.tracks[t].levels[m.ev.depth[e]];
    for (EventId n = e + 1; n < level.end && n <= e + 3 && m.ev.start[n] < limit; ++n) {
      if (m.ev.category(n) != Cat::CpuOp) continue;
      std::vector<int64_t> s = m.args().input_shape(n, 0);
      if (s.size() >= 3 && s[0] == batch && s[1] == channels) return s;
    }
  }
  return {};
}

OpWork work_of(const TraceModel& m, EventId op) {
  const std::string_view name = m.name_of(op);
  const std::vector<OpInput> in = m.args().op_inputs(op);
  OpWork w = op_work(name, in);
  if (w.model == WorkModel::NoShapes && is_convolution_forward(name) && in.size() > 1 && in[0].shapes.size() == 1 &&
      in[1].shapes.size() == 1 && in[0].shapes[0].size() >= 3 && !in[1].shapes[0].empty()) {
    const std::vector<int64_t> hint = next_op_output(m, op, in[0].shapes[0][0], in[1].shapes[0][0]);
    if (!hint.empty()) w = op_work(name, in, hint);
  }
  return w;
}

// Range-profiler ranges with FLOP counters, by the launch they pair with.
std::unordered_map<EventId, ProfilerRangeCounters> counters_by_launch(const TraceModel& m, std::vector<EventId>& lone) {
  std::unordered_map<EventId, ProfilerRangeCounters> out;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (m.ev.category(e) != Cat::ProfilerRange) continue;
    ProfilerRangeCounters c = m.args().counters(e);
    if (!c.has_flop_counters) continue;
    const EventId launch = m.host_side_of(e);
    const EventId gpu = launch == kNoEvent ? kNoEvent : m.gpu_op_of(launch);
    if (gpu != kNoEvent && m.ev.category(gpu) == Cat::Kernel) out.emplace(launch, c);
    else if (c.measured > 0) lone.push_back(e);  // stands for a kernel the trace does not hold
  }
  return out;
}

bool fast_algorithm(std::string_view kernel) {
  std::string lower(kernel);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find("winograd") != std::string::npos || lower.find("fft") != std::string::npos;
}

// Rooflines per device number.
std::unordered_map<int32_t, DevicePeaks> rooflines(const TraceModel& m, const RooflineOverride& o, Efficiency& ef) {
  std::unordered_map<int32_t, DevicePeaks> by_device;
  for (const DeviceInfo& d : m.devices) {
    DeviceRoofline r{int32_t(d.id), d.name, apply_override(device_peaks(d), o)};
    by_device.emplace(r.device, r.peaks);
    ef.devices.push_back(std::move(r));
  }
  return by_device;
}

// The kernels' ops: per kernel the innermost CPU op around its launch and the innermost one the
// model knows (its owner), and the owners' work read from their arguments.
struct Owners {
  std::vector<EventId> owner, innermost;  // per kernel; kNoEvent: none
  std::vector<EventId> ops;               // the owners, sorted
  std::vector<OpWork> works, remaining;   // per owner: its work, and that less its inner owners'
  std::vector<Ns> time;                   // per owner: its kernels' time
  std::vector<uint32_t> kernels;          // per owner: how many
  size_t index(EventId op) const { return size_t(std::lower_bound(ops.begin(), ops.end(), op) - ops.begin()); }
  bool has(EventId op) const { return std::binary_search(ops.begin(), ops.end(), op); }
};

Owners find_owners(const TraceModel& m, const std::vector<KernelWork>& kernels, std::span<const EventId> parent, unsigned threads) {
  Owners o;
  o.owner.assign(kernels.size(), kNoEvent);
  o.innermost.assign(kernels.size(), kNoEvent);
  NameMemo modelled(m, has_work_model);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const EventId launch = m.host_side_of(kernels[i].kernel);
    if (launch == kNoEvent) continue;
    for (EventId op = parent[launch]; op != kNoEvent; op = parent[op]) {  // the CPU ops around it, innermost first
      if (m.ev.category(op) != Cat::CpuOp) continue;
      if (o.innermost[i] == kNoEvent) o.innermost[i] = op;
      if (modelled(op)) {
        o.owner[i] = op;
        break;
      }
    }
  }
  o.ops = o.owner;
  std::sort(o.ops.begin(), o.ops.end());
  o.ops.erase(std::unique(o.ops.begin(), o.ops.end()), o.ops.end());
  if (!o.ops.empty() && o.ops.back() == kNoEvent) o.ops.pop_back();
  // Reading the arguments is the costly part: on several threads.
  o.works.resize(o.ops.size());
  parallel_for(threads, o.ops.size(), [&](size_t i) { o.works[i] = work_of(m, o.ops[i]); });
  // An op whose inner ops have work of their own keeps its work less theirs.
  o.remaining = o.works;
  for (size_t i = 0; i < o.ops.size(); ++i) {
    if (o.works[i].model != WorkModel::Modelled) continue;
    for (EventId p = parent[o.ops[i]]; p != kNoEvent; p = parent[p]) {
      if (m.ev.category(p) != Cat::CpuOp || !o.has(p)) continue;
      OpWork& r = o.remaining[o.index(p)];
      r.flops = std::max(0.0, r.flops - o.works[i].flops);
      r.bytes = std::max(0.0, r.bytes - o.works[i].bytes);
      break;
    }
  }
  o.time.assign(o.ops.size(), 0);
  o.kernels.assign(o.ops.size(), 0);
  for (size_t i = 0; i < kernels.size(); ++i)
    if (o.owner[i] != kNoEvent) o.time[o.index(o.owner[i])] += kernels[i].time, ++o.kernels[o.index(o.owner[i])];
  return o;
}

// A kernel's class and work: its op's share by time, or the range profiler's count.
void attribute(const TraceModel& m, const Owners& o, size_t i, const ProfilerRangeCounters* counted, bool communication,
               KernelWork& k) {
  if (communication) {
    k.cls = KernelClass::Communication;  // the network's time: not a roofline's
    return;
  }
  k.op = o.owner[i] != kNoEvent ? o.owner[i] : o.innermost[i];
  if (o.owner[i] != kNoEvent) {
    const size_t x = o.index(o.owner[i]);
    const OpWork& w = o.works[x];
    k.cls = w.cls;
    if (w.model == WorkModel::Modelled) {
      const double share = o.time[x] > 0 ? double(k.time) / double(o.time[x]) : 1.0 / o.kernels[x];
      k.source = WorkSource::Shapes;
      k.flops = o.remaining[x].flops * share;
      k.bytes = o.remaining[x].bytes * share;
      k.precision = w.precision;
      k.estimated = w.assumption != nullptr;
    }
  }
  // Counted FLOPs win over the shapes' (the bytes stay the shapes'), but the nine counters are
  // FP instructions on the CUDA cores: a tensor-core kernel's math is not among them.
  if (counted && !is_tensor_core_kernel(m.name_of(k.kernel))) {
    k.source = WorkSource::Counters;
    k.flops = counted->flops;
  }
}

// A kernel faster than its roof allows: the model's bytes or FLOPs overstate what it did. Where
// the trace shows why, it says so (RoofNote): two inputs of one shape and type read as one
// brings it under the roof; its op's inputs, as much as fits in the device's cache, served from
// there would; its op used a fast algorithm. `share`: its part of its op's work.
void explain_above_roof(KernelWork& k, const OpWork* w, double share, double cache, bool fast, Efficiency& ef) {
  if (k.roofline_share() <= 1) return;
  if (k.compute_bound()) {
    if (fast) k.note = RoofNote::FastAlgorithm, ++ef.fast_algorithm;
    return;
  }
  if (!w) return;
  auto fits = [&](double bytes) { return std::max(k.flops / k.peak, bytes / k.bandwidth) * 1e9 <= double(k.time); };
  const double same = std::min(w->same_input_bytes * share, k.bytes);
  if (same > 0 && fits(k.bytes - same)) {
    k.bytes -= same;
    k.note = RoofNote::SameInput;
    ++ef.same_input;
  } else if (cache > 0 && fits(k.bytes - std::min(w->read_bytes, cache) * share)) {
    k.note = RoofNote::Cached;
    ++ef.cached;
  }
}

// Each kernel's roof: its device's peaks for its class and number format. An op's kernels share
// one rate (its work by time), so they share one roof: the highest any of them may use (a TF32
// product's split-K reduction runs against the tensor cores' peak too), and a fast algorithm
// when any of them is one (a Winograd convolution's GEMM).
void set_roofs(const TraceModel& m, const Owners& o, const std::unordered_map<int32_t, DevicePeaks>& peaks,
               const DevicePeaks& given, Efficiency& ef) {
  std::vector<double> op_peak(o.ops.size(), 0);
  std::vector<uint8_t> op_fast(o.ops.size(), 0);
  std::vector<const DevicePeaks*> device(ef.kernels.size(), nullptr);
  for (size_t i = 0; i < ef.kernels.size(); ++i) {
    KernelWork& k = ef.kernels[i];
    auto pk = peaks.find(k.device);
    const DevicePeaks& p = pk != peaks.end() ? pk->second : given;
    if (!p.known()) continue;
    device[i] = &p;
    const std::string_view name = m.name_of(k.kernel);
    k.peak = peak_flops(p, k.cls, k.precision, name);
    k.bandwidth = p.bandwidth;
    if (o.owner[i] == kNoEvent || k.source != WorkSource::Shapes) continue;
    const size_t x = o.index(o.owner[i]);
    op_peak[x] = std::max(op_peak[x], k.peak);
    op_fast[x] |= fast_algorithm(name);
  }
  for (size_t i = 0; i < ef.kernels.size(); ++i) {
    KernelWork& k = ef.kernels[i];
    if (!device[i] || k.source == WorkSource::None) continue;
    if (o.owner[i] == kNoEvent || k.source != WorkSource::Shapes) {
      explain_above_roof(k, nullptr, 0, device[i]->cache, fast_algorithm(m.name_of(k.kernel)), ef);
      continue;
    }
    const size_t x = o.index(o.owner[i]);
    k.peak = op_peak[x];
    const double share = o.remaining[x].bytes > 0 ? k.bytes / o.remaining[x].bytes : 0;
    explain_above_roof(k, &o.works[x], share, device[i]->cache, op_fast[x], ef);
  }
}

}  // namespace

Efficiency hardware_efficiency(const TraceModel& m, const Annotation& a, const RooflineOverride& roofline,
                               std::span<const EventId> parents, unsigned threads) {
  Efficiency ef;
  const auto peaks = rooflines(m, roofline, ef);
  const DevicePeaks given = apply_override({}, roofline);  // for devices deviceProperties do not list
  std::vector<EventId> lone_ranges;
  const auto counters = counters_by_launch(m, lone_ranges);
  auto add_kernel = [&](EventId e, Ns time) {
    KernelWork k;
    k.kernel = e;
    k.time = time;
    const uint32_t t = m.track_of(e);
    k.device = t == kNoTrack ? -1 : m.processes[m.tracks[t].process].device;
    ef.kernels.push_back(k);
  };
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.ev.category(e) == Cat::Kernel) add_kernel(e, m.ev.dur[e]);
  for (EventId e : lone_ranges) add_kernel(e, m.args().counters(e).measured);

  const Owners o = find_owners(m, ef.kernels, parents, threads);
  NameMemo communication(m, is_communication_kernel);
  for (size_t i = 0; i < ef.kernels.size(); ++i) {
    KernelWork& k = ef.kernels[i];
    const EventId launch = m.host_side_of(k.kernel);
    const ProfilerRangeCounters* counted = nullptr;
    ProfilerRangeCounters own;
    if (m.ev.category(k.kernel) == Cat::ProfilerRange) counted = &(own = m.args().counters(k.kernel));
    else if (auto c = counters.find(launch); c != counters.end()) counted = &c->second;
    attribute(m, o, i, counted, communication(k.kernel), k);
    ef.kernels_from_counters += k.source == WorkSource::Counters;
    ef.kernels_without_op += k.cls != KernelClass::Communication && o.innermost[i] == kNoEvent;
  }
  set_roofs(m, o, peaks, given, ef);
  efficiency::count_ops(m, o.ops, o.works, o.owner, o.innermost, ef);
  efficiency::group(m, a, ef);
  return ef;
}

}  // namespace strata
