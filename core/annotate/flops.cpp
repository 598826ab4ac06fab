// FLOPs from CUPTI range-profiler counters (cuda_profiler_range events), per kernel and layer.
#include "core/annotate/internal.h"
#include "core/json_scan.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

namespace strata {

namespace {


// "Iteration 3/Forward/model/fc" → "Forward/model/fc": a layer's path across iterations.
std::string path_across_iterations(const AnnotationTree& t, NodeId n) {
  std::string p = t.path(n);
  size_t slash = p.find('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void sort_by_flops(std::vector<FlopStat>& v) {
  std::sort(v.begin(), v.end(), [](const FlopStat& x, const FlopStat& y) {
    return x.flops != y.flops ? x.flops > y.flops : x.name < y.name;
  });
}

}  // namespace


void FlopStat::add(const ProfilerRangeCounters& r) {
  ++ranges;
  flops += r.flops;
  if (r.measured < 0) return;
  ++timed;
  timed_flops += r.flops;
  measured += r.measured;
}

std::string flops_text(const FlopStat& s) {
  std::string o = format_flops(s.flops) + " in " + std::to_string(s.ranges) + (s.ranges == 1 ? " range" : " ranges");
  if (s.timed)
    o += ", " + format_flops(s.flop_per_s()) + "/s over " + format_duration(s.measured) + " measured in " +
         std::to_string(s.timed);
  return o;
}

void write_flop_fields(JsonWriter& j, const FlopStat& s) {
  j.field("ranges", s.ranges).field("flops", s.flops).field("timed_ranges", s.timed).field("timed_flops", s.timed_flops);
  j.field("measured_ns", s.measured);
  // null without a measured duration: the event's own duration is made up.
  j.field("flop_per_s", s.timed ? s.flop_per_s() : std::numeric_limits<double>::quiet_NaN());
}

namespace annot {

void count_flops(const Context& c, Annotation& a) {
  const TraceModel& m = c.m;
  FlopFigures& f = a.analyses.flops;
  std::vector<uint32_t> kidx(m.strings.size(), UINT32_MAX);  // name → index into f.kernels
  std::map<std::string, FlopStat> layers;
  for (EventId e : c.profiler_ranges) {
    ProfilerRangeCounters r = m.args().counters(e);
    f.total.add(r);
    f.with_counters += r.has_flop_counters;
    uint32_t& ki = kidx[m.ev.name[e]];
    if (ki == UINT32_MAX) {
      ki = uint32_t(f.kernels.size());
      f.kernels.push_back({std::string(m.name_of(e))});
    }
    f.kernels[ki].add(r);
    NodeId n = e < a.node_of_event.size() ? a.node_of_event[e] : kNoNode;
    NodeId layer = n == kNoNode ? kNoNode : a.tree.ancestor(n, NodeKind::Layer);
    if (layer == kNoNode) continue;
    ++f.attributed;
    std::string path = path_across_iterations(a.tree, layer);
    FlopStat& ls = layers[path];
    if (ls.name.empty()) ls.name = path;
    ls.add(r);
  }
  for (auto& [path, s] : layers) f.layers.push_back(std::move(s));
  sort_by_flops(f.kernels);
  sort_by_flops(f.layers);
  if (f.total.ranges == 0) return;
  if (f.total.timed == 0)
    a.notes.push_back("no range holds gpu__time_duration.sum: achieved FLOP/s is not derived (range times are made up)");
  uint64_t paired = 0;
  for (EventId e : c.profiler_ranges) paired += m.host_side_of(e) != kNoEvent;
  if (paired < f.total.ranges)
    a.notes.push_back(std::to_string(f.total.ranges - paired) + " of " + std::to_string(f.total.ranges) +
                      " profiler ranges are in no layer: a range with a correlation id is paired with the launch of "
                      "that id; ranges without one (Kineto's) with kernel launches in order, only when their counts agree");
}

}  // namespace annot

}  // namespace strata
