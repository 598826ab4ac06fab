// `strata summary`: the annotation's findings as readable text or JSON (docs/summary-json.md).
#include "core/annotate/summary_rows.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace strata {

namespace {

double pct(Ns a, Ns b) { return b > 0 ? 100.0 * double(a) / double(b) : 0.0; }
double share(Ns a, Ns b) { return b > 0 ? double(a) / double(b) : 0.0; }

// A phase's verdict from the replays (Annotation::verdicts), else the bound most of its time had.
const PhaseVerdict* verdict_of(const Annotation& a, const SummaryPhaseRow& r) {
  for (const PhaseVerdict& v : a.verdicts)
    if (v.phase == r.name && v.kind == r.phase) return &v;
  return nullptr;
}

Bound main_bound(const Annotation& a, const SummaryPhaseRow& r) {
  if (const PhaseVerdict* v = verdict_of(a, r)) return v->bound;
  Bound best = Bound::Unknown;
  Ns bt = -1;
  for (auto& [b, tm] : r.bound)
    if (tm > bt) {
      bt = tm;
      best = b;
    }
  return best;
}

}  // namespace

Ns exposed_communication(const Analyses& r) {
  Ns sum = 0;
  for (auto [s, e] : r.exposed_communication) sum += std::max<Ns>(0, std::min(e, r.window_end) - std::max(s, r.window_begin));
  return sum;
}

SummaryRows summary_rows(const Annotation& a) {
  const AnnotationTree& t = a.tree;
  SummaryRows d;
  d.iterations = std::max<size_t>(1, a.iterations.size());
  std::map<std::pair<PhaseKind, std::string>, SummaryPhaseRow> ph;
  std::unordered_map<std::string, SummaryLayerRow> ly;
  for (NodeId i = 0; i < t.size(); ++i) {
    if (t.kind[i] == NodeKind::Phase) {
      SummaryPhaseRow& r = ph[{t.phase[i], std::string(t.name_of(i))}];
      r.phase = t.phase[i];
      r.name = t.name_of(i);
      r.time += t.duration(i);
      r.cpu += std::max<Ns>(0, t.duration(i) - t.sync[i]);
      r.gpu_busy += t.gpu_busy[i];
      r.kernels += t.kernels[i];
      r.bound[t.bound[i]] += t.duration(i);
      ++r.count;
    } else if (t.kind[i] == NodeKind::Layer && t.first_child(i) != kNoNode && t.kind[t.first_child(i)] == NodeKind::Op) {
      // Leaf layers (their children are ops), keyed by phase and layer path.
      std::string p = t.path(i);
      size_t slash = p.find('/');
      if (slash != std::string::npos) p = p.substr(slash + 1);
      SummaryLayerRow& r = ly[p];
      r.path = p;
      r.time += t.duration(i);
      r.cpu += std::max<Ns>(0, t.duration(i) - t.sync[i]);
      r.gpu_busy += t.gpu_busy[i];
      r.kernels += t.kernels[i];
      r.bound = t.bound[i];
      ++r.count;
    }
  }
  for (auto& [k, r] : ph) d.phases.push_back(r);
  for (auto& [k, r] : ly) d.layers.push_back(r);
  std::sort(d.layers.begin(), d.layers.end(), [](auto& x, auto& y) {
    Ns ax = std::max(x.gpu_busy, x.time / 100), ay = std::max(y.gpu_busy, y.time / 100);
    return ax != ay ? ax > ay : x.path < y.path;
  });
  return d;
}

std::string summary_text(const TraceModel& m, const Annotation& a) {
  const Analyses& r = a.analyses;
  const SummaryRows d = summary_rows(a);
  std::string o = m.path + "\n";
  size_t partial = 0;
  for (auto& it : a.iterations) partial += it.partial;
  o += strprintf("  iterations: %zu (from %s)%s\n", a.iterations.size(), iteration_source_name(a.iteration_source),
           partial ? strprintf(", %zu partial", partial).c_str() : "");
  if (!a.iterations.empty())
    o += strprintf("  iteration time: mean %s, median %s, p95 %s, min %s, max %s\n", format_duration(r.iter_mean).c_str(),
             format_duration(r.iter_median).c_str(), format_duration(r.iter_p95).c_str(), format_duration(r.iter_min).c_str(), format_duration(r.iter_max).c_str());
  if (r.batch_size > 0)
    o += strprintf("  throughput: batch %" PRId64 ", %.1f samples/s\n", r.batch_size, r.samples_per_s);
  o += "  phases (per iteration):\n";
  Ns iter_total = 0;
  for (auto& p : d.phases) iter_total += p.time;
  int width = 15;
  for (auto& p : d.phases) width = std::max(width, int(p.name.size()));
  for (auto& p : d.phases)
    o += strprintf("    %-*s %12s %5.1f%%   GPU busy %12s   %6.1f kernels   bound: %s\n", width, p.name.c_str(),
             format_duration(p.time / Ns(d.iterations)).c_str(), pct(p.time, iter_total), format_duration(p.gpu_busy / Ns(d.iterations)).c_str(),
             double(p.kernels) / double(d.iterations), bound_name(main_bound(a, p)));
  for (auto& p : d.phases)
    if (const PhaseVerdict* v = verdict_of(a, p); v && !v->detail.empty())
      o += strprintf("      %s: %s, %s\n", p.name.c_str(), bound_name(v->bound), v->detail.c_str());
  o += strprintf("  layers (from %s), top by GPU time per iteration:\n", layer_source_name(a.layer_source));
  for (size_t i = 0; i < d.layers.size() && i < 10; ++i) {
    auto& l = d.layers[i];
    o += strprintf("    %s CPU %10s  GPU %10s  %5.1f kernels  %s\n", fit_column(l.path, 60).c_str(),
             format_duration(l.time / Ns(d.iterations)).c_str(), format_duration(l.gpu_busy / Ns(d.iterations)).c_str(),
             double(l.kernels) / double(d.iterations), bound_name(l.bound));
  }
  if (a.backward_ops) {
    const uint64_t mapped = a.backward_mapped_links + a.backward_mapped_order;
    o += strprintf("  backward ops: %" PRIu64 ", mapped to forward layers %.1f%%: via links %" PRIu64 ", by op order %" PRIu64
                   " (%" PRIu64 " with no forward op, after the op before them); unmapped %" PRIu64 "\n",
                   a.backward_ops, 100.0 * double(mapped) / double(a.backward_ops), a.backward_mapped_links,
                   a.backward_mapped_order, a.backward_no_forward, a.backward_ops - mapped);
  }
  o += "  top GPU ops:\n";
  for (size_t i = 0; i < r.kernels.size() && i < 10; ++i) {
    auto& k = r.kernels[i];
    std::string nm = k.name.size() > 70 ? k.name.substr(0, 67) + "..." : k.name;
    o += strprintf("    %5.1f%% %12s %7" PRIu64 "x  %s%s\n", pct(k.total, r.gpu_op_total), format_duration(k.total).c_str(), k.count, nm.c_str(),
             k.tensor_core ? "  [tensor cores]" : "");
  }
  if (r.flops.total.ranges) {
    o += "  FLOPs (range profiler): " + flops_text(r.flops.total) + "\n";
    for (size_t i = 0; i < r.flops.kernels.size() && i < 10; ++i) {
      const FlopStat& k = r.flops.kernels[i];
      o += strprintf("    %-70s %s\n", k.name.size() > 70 ? (k.name.substr(0, 67) + "...").c_str() : k.name.c_str(),
                     flops_text(k).c_str());
    }
    if (!r.flops.layers.empty()) o += "    per layer:\n";
    for (size_t i = 0; i < r.flops.layers.size() && i < 10; ++i)
      o += strprintf("      %-68s %s\n", r.flops.layers[i].name.c_str(), flops_text(r.flops.layers[i]).c_str());
  }
  o += efficiency_text(r.efficiency);
  if (!r.cpu_ops.empty()) o += "  top CPU ops (outermost, share of the window):\n";
  for (size_t i = 0; i < r.cpu_ops.size() && i < 10; ++i) {
    auto& op = r.cpu_ops[i];
    std::string nm = op.name.size() > 70 ? op.name.substr(0, 67) + "..." : op.name;
    o += strprintf("    %5.1f%% %12s %7" PRIu64 "x  %s\n", pct(op.total, r.window_end - r.window_begin), format_duration(op.total).c_str(),
                   op.count, nm.c_str());
  }
  o += strprintf("  GPU utilization over %s:\n", format_duration(r.window_end - r.window_begin).c_str());
  for (auto& u : r.utilization) {
    if (u.stream < 0) o += strprintf("    GPU %d: %5.1f%% busy (%" PRIu64 " ops)\n", u.device, pct(u.busy, u.elapsed), u.ops);
    else o += strprintf("      stream %" PRId64 ": %5.1f%% busy (%" PRIu64 " ops)\n", u.stream, pct(u.busy, u.elapsed), u.ops);
  }
  if (r.idle.count) {
    o += strprintf("  GPU idle: %s in %" PRIu64 " gaps:", format_duration(r.idle.total).c_str(), r.idle.count);
    for (size_t k = 0; k < size_t(IdleCause::Count); ++k)
      o += strprintf("%s %s %.1f%%", k ? "," : "", idle_cause_name(IdleCause(k)), pct(r.idle.by_cause[k], r.idle.total));
    o += "\n";
  }
  if (r.kernel_total)
    o += strprintf("  compute %s, communication %s (overlapped with compute %s, exposed %s), memory ops %s; tensor-core "
             "kernels %.1f%% of kernel time\n",
             format_duration(r.compute).c_str(), format_duration(r.communication).c_str(), format_duration(r.compute_comm_overlap).c_str(),
             format_duration(exposed_communication(r)).c_str(), format_duration(r.memory_ops).c_str(), pct(r.tensor_core, r.kernel_total));
  o += memory_text(r.memory);
  o += strprintf("  annotated %" PRIu64 " of %" PRIu64 " GPU ops; %zu annotation nodes (%zu after noise reduction); %.3f s\n",
           a.gpu_ops_annotated, a.gpu_ops, a.tree.size(), a.reduced.size(), a.seconds);
  for (auto& n : a.notes) o += "  note: " + n + "\n";
  return o;
}

void write_summary_panel_fields(JsonWriter& w, const Annotation& a) {
  const Analyses& r = a.analyses;
  w.key("iterations").begin_object();
  w.field("count", uint64_t(a.iterations.size())).field("source", iteration_source_name(a.iteration_source));
  w.field("mean_ns", r.iter_mean).field("median_ns", r.iter_median).field("p95_ns", r.iter_p95);
  w.field("min_ns", r.iter_min).field("max_ns", r.iter_max);
  w.key("list").begin_array();
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    const Iteration& it = a.iterations[i];
    w.begin_object().field("name", it.name).field("begin_ns", it.begin).field("end_ns", it.end).field("partial", it.partial);
    if (i < r.iteration_gpu_busy.size()) w.field("gpu_busy_ns", r.iteration_gpu_busy[i]);
    w.end_object();
  }
  w.end_array().end_object();
  w.key("utilization").begin_array();
  for (auto& u : r.utilization)
    w.begin_object().field("device", int64_t(u.device)).field("stream", u.stream).field("busy_ns", u.busy)
        .field("elapsed_ns", u.elapsed).field("ops", u.ops).field("utilization", u.elapsed ? double(u.busy) / double(u.elapsed) : 0.0)
        .end_object();
  w.end_array();
  w.key("idle").begin_object().field("gaps", r.idle.count).field("total_ns", r.idle.total);
  for (size_t k = 0; k < size_t(IdleCause::Count); ++k)
    w.field(std::string(idle_cause_key(IdleCause(k))) + "_ns", r.idle.by_cause[k]);
  w.end_object();
  w.key("kernels").begin_array();
  for (size_t i = 0; i < r.kernels.size() && i < 50; ++i) {
    auto& k = r.kernels[i];
    w.begin_object().field("name", k.name).field("count", k.count).field("total_ns", k.total).field("max_ns", k.max)
        .field("share", share(k.total, r.gpu_op_total)).field("kind", gpu_work_name(k.kind)).field("tensor_core", k.tensor_core)
        .end_object();
  }
  w.end_array();
  w.key("cpu_ops").begin_array();
  for (auto& o : r.cpu_ops)
    w.begin_object().field("name", o.name).field("count", o.count).field("total_ns", o.total).field("max_ns", o.max)
        .field("share", share(o.total, r.window_end - r.window_begin)).end_object();
  w.end_array();
  w.key("work").begin_object().field("compute_ns", r.compute).field("communication_ns", r.communication)
      .field("memory_ops_ns", r.memory_ops).field("compute_communication_overlap_ns", r.compute_comm_overlap)
      .field("exposed_communication_ns", exposed_communication(r))
      .field("kernel_time_ns", r.kernel_total).field("tensor_core_ns", r.tensor_core).field("gpu_op_time_ns", r.gpu_op_total)
      .end_object();
  w.key("memory").begin_object();
  write_memory_fields(w, r.memory);
  w.end_object();
}

std::string summary_json(const TraceModel& m, const Annotation& a) {
  JsonWriter w;
  w.begin_object();
  write_summary_fields(w, m, a);
  w.end_object();
  return w.str() + "\n";
}

void write_summary_fields(JsonWriter& w, const TraceModel& m, const Annotation& a) {
  const Analyses& r = a.analyses;
  const SummaryRows d = summary_rows(a);
  w.field("file", m.path).field("schema", "strata.summary/1");
  w.field("window_begin_ns", r.window_begin).field("window_end_ns", r.window_end);
  write_summary_panel_fields(w, a);
  w.key("throughput").begin_object().field("batch_size", r.batch_size).field("samples_per_s", r.samples_per_s).end_object();
  w.key("phases").begin_array();
  for (auto& p : d.phases)
    w.begin_object().field("phase", p.name).field("kind", phase_name(p.phase)).field("total_ns", p.time).field("cpu_ns", p.cpu).field("per_iteration_ns", p.time / Ns(d.iterations))
        .field("gpu_busy_ns", p.gpu_busy).field("kernels", p.kernels).field("segments", p.count)
        .field("bound", bound_name(main_bound(a, p)))
        .field("bound_detail", verdict_of(a, p) ? verdict_of(a, p)->detail : std::string()).end_object();
  w.end_array();
  w.field("layer_source", layer_source_name(a.layer_source));
  w.key("layers").begin_array();
  for (size_t i = 0; i < d.layers.size() && i < 50; ++i) {
    auto& l = d.layers[i];
    w.begin_object().field("path", l.path).field("total_ns", l.time).field("cpu_ns", l.cpu).field("gpu_busy_ns", l.gpu_busy).field("kernels", l.kernels)
        .field("occurrences", l.count).field("bound", bound_name(l.bound)).end_object();
  }
  w.end_array();
  const FlopFigures& fl = r.flops;
  w.key("flops").begin_object();
  write_flop_fields(w, fl.total);
  w.field("with_counters", fl.with_counters).field("attributed", fl.attributed);
  w.key("kernels").begin_array();
  for (size_t i = 0; i < fl.kernels.size() && i < 50; ++i) {
    w.begin_object().field("name", fl.kernels[i].name);
    write_flop_fields(w, fl.kernels[i]);
    w.end_object();
  }
  w.end_array();
  w.key("layers").begin_array();
  for (size_t i = 0; i < fl.layers.size() && i < 50; ++i) {
    w.begin_object().field("path", fl.layers[i].name);
    write_flop_fields(w, fl.layers[i]);
    w.end_object();
  }
  w.end_array().end_object();
  w.key("efficiency").begin_object();
  write_efficiency_fields(w, r.efficiency);
  w.end_object();
  const uint64_t bwd_mapped = a.backward_mapped_links + a.backward_mapped_order;
  w.key("backward").begin_object().field("ops", a.backward_ops).field("mapped_by_links", a.backward_mapped_links)
      .field("mapped_by_order", a.backward_mapped_order).field("no_forward_op", a.backward_no_forward)
      .field("mapped_share", a.backward_ops ? double(bwd_mapped) / double(a.backward_ops) : 0.0)
      .field("unmapped", a.backward_ops - bwd_mapped).end_object();
  w.key("annotation").begin_object().field("nodes", uint64_t(a.tree.size())).field("reduced_nodes", uint64_t(a.reduced.size()))
      .field("gpu_ops", a.gpu_ops).field("gpu_ops_annotated", a.gpu_ops_annotated).field("seconds", a.seconds).end_object();
  w.key("notes").begin_array();
  for (auto& n : a.notes) w.value(n);
  w.end_array();
}

}  // namespace strata
