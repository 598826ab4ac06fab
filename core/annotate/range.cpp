// A stretch of time a person measures: what falls inside it, per name, clipped to it.
#include "core/annotate/internal.h"
#include "core/intervals.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <unordered_map>

namespace strata {

namespace {

// Per-name totals of clipped time, at most `keep`, longest first.
struct Totals {
  std::unordered_map<std::string, size_t> at;
  std::vector<NameStat> list;
  void add(std::string_view name, Ns clipped, EventId e, Ns dur) {
    auto [it, fresh] = at.try_emplace(std::string(name), list.size());
    if (fresh) list.push_back({std::string(name)});
    NameStat& s = list[it->second];
    ++s.count;
    s.total += clipped;
    if (s.longest == kNoEvent || dur > s.max) s.longest = e, s.max = dur;
  }
  std::vector<NameStat> top(size_t keep) {
    std::sort(list.begin(), list.end(), [](auto& x, auto& y) { return x.total != y.total ? x.total > y.total : x.name < y.name; });
    if (list.size() > keep) list.resize(keep);
    return std::move(list);
  }
};

}  // namespace

RangeFigures range_figures(const TraceModel& m, const Annotation& a, Ns t0, Ns t1) {
  RangeFigures r;
  r.begin = std::min(t0, t1);
  r.end = std::max(t0, t1);
  auto clip = [&](Ns s, Ns e) { return std::max<Ns>(0, std::min(e, r.end) - std::max(s, r.begin)); };
  // GPU ops: per name, and busy per device.
  Totals kernels;
  std::vector<std::pair<int32_t, std::vector<Interval>>> per_device;
  auto st = m.ev.start.begin();
  for (const Track& tr : m.tracks) {
    if (tr.kind != TrackKind::GpuStream) continue;
    const Track& base = tr.overflow_of != kNoTrack ? m.tracks[tr.overflow_of] : tr;
    int32_t dev = m.processes[base.process].device;
    auto dit = std::find_if(per_device.begin(), per_device.end(), [&](auto& d) { return d.first == dev; });
    if (dit == per_device.end()) per_device.push_back({dev, {}}), dit = per_device.end() - 1;
    for (const IndexRange& level : tr.levels) {
      // Start-sorted and not overlapping: the first one to look at is the one before t0.
      auto lo = EventId(std::upper_bound(st + level.begin, st + level.end, r.begin) - st);
      if (lo > level.begin) --lo;
      for (EventId g = lo; g < level.end && m.ev.start[g] < r.end; ++g) {
        Ns c = clip(m.ev.start[g], m.ev.end(g));
        if (c <= 0 || !is_gpu_op_cat(m.ev.category(g))) continue;
        kernels.add(m.name_of(g), c, g, m.ev.dur[g]);
        dit->second.push_back({std::max(m.ev.start[g], r.begin), std::min(m.ev.end(g), r.end)});
      }
    }
  }
  for (auto& [dev, spans] : per_device) {
    if (spans.empty()) continue;
    merge_intervals(spans);
    Ns busy = 0;
    for (auto [s, e] : spans) busy += e - s;
    r.utilization.push_back({dev, -1, busy, r.end - r.begin, spans.size()});
  }
  std::sort(r.utilization.begin(), r.utilization.end(), [](auto& x, auto& y) { return x.device < y.device; });
  r.kernels = kernels.top(50);
  // Ops (the annotation's outermost CPU ops) and leaf layers, from the tree.
  Totals ops, layers;
  const AnnotationTree& t = a.tree;
  for (NodeId n = 0; n < t.size(); ++n) {
    if (t.end[n] <= r.begin || t.begin[n] >= r.end) continue;
    Ns c = clip(t.begin[n], t.end[n]);
    if (t.kind[n] == NodeKind::Op && t.event[n] != kNoEvent) {
      ops.add(t.name_of(n), c, t.event[n], t.duration(n));
    } else if (t.kind[n] == NodeKind::Layer && t.first_child(n) != kNoNode && t.kind[t.first_child(n)] == NodeKind::Op) {
      std::string p = t.path(n);
      size_t slash = p.find('/');
      layers.add(slash == std::string::npos ? p : std::string_view(p).substr(slash + 1), c, t.event[n], t.duration(n));
    }
  }
  r.ops = ops.top(50);
  r.layers = layers.top(50);
  return r;
}

std::string range_json(const RangeFigures& r) {
  JsonWriter w;
  w.begin_object();
  write_range_fields(w, r);
  w.end_object();
  return w.str() + "\n";
}

void write_range_fields(JsonWriter& w, const RangeFigures& r) {
  w.field("begin_ns", r.begin).field("end_ns", r.end).field("duration_ns", r.end - r.begin);
  w.key("utilization").begin_array();
  for (const DeviceUtil& u : r.utilization)
    w.begin_object().field("device", int64_t(u.device)).field("busy_ns", u.busy).field("utilization", u.elapsed ? double(u.busy) / double(u.elapsed) : 0.0)
        .end_object();
  w.end_array();
  for (auto [key, list] : {std::pair{"kernels", &r.kernels}, std::pair{"ops", &r.ops}, std::pair{"layers", &r.layers}}) {
    w.key(key).begin_array();
    for (const NameStat& s : *list) w.begin_object().field("name", s.name).field("count", s.count).field("time_ns", s.total).end_object();
    w.end_array();
  }
}

std::string range_text(const RangeFigures& r) {
  std::string o = strprintf("range of %s\n", format_duration(r.end - r.begin).c_str());
  for (const DeviceUtil& u : r.utilization)
    o += strprintf("  GPU %d busy %s (%.1f%%)\n", u.device, format_duration(u.busy).c_str(),
                   u.elapsed ? 100.0 * double(u.busy) / double(u.elapsed) : 0.0);
  for (auto [title, list] : {std::pair{"GPU ops", &r.kernels}, std::pair{"CPU ops", &r.ops}, std::pair{"layers", &r.layers}}) {
    if (list->empty()) continue;
    o += std::string("  ") + title + " inside it:\n";
    for (size_t i = 0; i < list->size() && i < 10; ++i)
      o += strprintf("    %12s %6llux  %s\n", format_duration((*list)[i].total).c_str(), (unsigned long long)(*list)[i].count,
                     (*list)[i].name.substr(0, 90).c_str());
  }
  return o;
}

}  // namespace strata
