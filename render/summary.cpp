#include "render/summary.h"

#include <algorithm>
#include <unordered_map>

namespace strata::render {

namespace {

std::vector<NameTotal> top_by_total(std::unordered_map<StrId, NameTotal>& agg, size_t n, const TraceModel& m) {
  std::vector<NameTotal> v;
  v.reserve(agg.size());
  for (auto& [k, t] : agg) v.push_back(t);
  std::sort(v.begin(), v.end(), [&](const NameTotal& a, const NameTotal& b) {
    return a.total != b.total ? a.total > b.total : m.strings.view(a.name) < m.strings.view(b.name);
  });
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace

Summary summarize(const Timeline& tl) {
  Summary s;
  const TraceModel& m = *tl.model();
  s.span = m.time_end - m.time_begin;
  std::unordered_map<StrId, NameTotal> kernels, ops;
  // GPU ops per device: intervals for the busy union and idle gaps.
  std::unordered_map<int, std::vector<EventId>> per_device;
  for (uint32_t t = 0; t < m.tracks.size(); ++t) {
    const Track& tr = m.tracks[t];
    if (tr.kind == TrackKind::GpuStream) {
      int dev = m.processes[tr.process].device;
      auto& v = per_device[dev];
      for (uint32_t e = tr.events.begin; e < tr.events.end; ++e) {
        Cat c = m.ev.category(e);
        if (c != Cat::Kernel && c != Cat::GpuMemcpy && c != Cat::GpuMemset) continue;
        v.push_back(e);
        s.gpu_total += m.ev.dur[e];
        NameTotal& k = kernels[m.ev.name[e]];
        k.name = m.ev.name[e];
        ++k.count;
        k.total += m.ev.dur[e];
        if (k.longest == kNoEvent || m.ev.dur[e] > m.ev.dur[k.longest]) k.longest = e;
      }
    } else if (tr.kind == TrackKind::CpuThread) {
      for (uint32_t e = tr.events.begin; e < tr.events.end; ++e) {
        if (m.ev.category(e) != Cat::CpuOp) continue;
        NameTotal& k = ops[m.ev.name[e]];
        k.name = m.ev.name[e];
        ++k.count;
        k.total += m.ev.dur[e];
        if (k.longest == kNoEvent || m.ev.dur[e] > m.ev.dur[k.longest]) k.longest = e;
      }
    }
  }
  s.top_kernels = top_by_total(kernels, 12, m);
  s.top_ops = top_by_total(ops, 12, m);

  // Iterations (the first tier's level 0).
  const Tiers& tiers = tl.tiers();
  std::vector<std::pair<Ns, Ns>> iters;
  if (!tiers.tiers.empty() && !tiers.tiers[0].levels.empty()) {
    const Tier& t = tiers.tiers[0];
    for (uint32_t i = t.levels[0].begin; i < t.levels[0].end; ++i) {
      s.iterations.push_back({t.start[i], t.dur[i], 0, std::string(t.name_of(i))});
    }
  }

  std::vector<int> devs;
  for (auto& [d, v] : per_device) devs.push_back(d);
  std::sort(devs.begin(), devs.end());
  for (int d : devs) {
    auto& v = per_device[d];
    std::sort(v.begin(), v.end(), [&](EventId a, EventId b) { return m.ev.start[a] < m.ev.start[b]; });
    DeviceBusy db;
    db.device = d;
    if (v.empty()) continue;
    Ns cur_s = m.ev.start[v[0]], cur_e = m.ev.end(v[0]);
    Ns first = cur_s, last = cur_e;
    size_t it = 0;
    auto credit = [&](Ns a, Ns b) {  // busy interval [a, b) to iterations
      while (it < s.iterations.size() && s.iterations[it].start + s.iterations[it].dur <= a) ++it;
      for (size_t k = it; k < s.iterations.size() && s.iterations[k].start < b; ++k) {
        Ns lo = std::max(a, s.iterations[k].start), hi = std::min(b, s.iterations[k].start + s.iterations[k].dur);
        if (hi > lo) s.iterations[k].gpu_busy += hi - lo;
      }
    };
    for (size_t i = 1; i < v.size(); ++i) {
      EventId e = v[i];
      Ns a = m.ev.start[e], b = m.ev.end(e);
      if (a <= cur_e) {
        cur_e = std::max(cur_e, b);
        continue;
      }
      db.busy += cur_e - cur_s;
      credit(cur_s, cur_e);
      Ns gap = a - cur_e;
      EventId launch = m.ev.link[e];
      if (gap < 10'000) db.idle_short += gap;
      else if (launch != kNoEvent && m.ev.start[launch] > cur_e) db.idle_host += gap;
      else db.idle_other += gap;
      cur_s = a;
      cur_e = b;
      last = std::max(last, b);
    }
    db.busy += cur_e - cur_s;
    credit(cur_s, cur_e);
    last = std::max(last, cur_e);
    db.span = last - first;
    s.devices.push_back(db);
  }
  for (const CounterTrack& c : tl.counters)
    if (c.bytes) s.memory_peaks.push_back({c.title, c.max_value});
  return s;
}

}  // namespace strata::render
