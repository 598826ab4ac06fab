// The efficiency figures as the summary shows them: a text block and the `efficiency` JSON
// object (docs/summary-json.md, docs/efficiency.md).
#include "core/annotate/annotation.h"
#include "core/efficiency/efficiency.h"
#include "core/json_writer.h"
#include "core/text_format.h"

#include <cinttypes>
#include <limits>

namespace strata {

namespace {

constexpr double kNull = std::numeric_limits<double>::quiet_NaN();

std::string tflops(double flop_per_s) { return strprintf("%.1f", flop_per_s / 1e12); }

std::string roofline_text(const DevicePeaks& p) {
  std::string o = p.name + ": " + tflops(p.fp32) + " TFLOP/s fp32";
  if (p.fp32_matrix != p.fp32) o += ", " + tflops(p.fp32_matrix) + " fp32 matrix";
  if (p.tf32 > 0) o += ", " + tflops(p.tf32) + " tf32";
  o += ", " + tflops(p.fp16) + (p.bf16 == p.fp16 ? " fp16/bf16" : " fp16");
  if (p.bf16 > 0 && p.bf16 != p.fp16) o += ", " + tflops(p.bf16) + " bf16";
  if (p.fp8 > 0) o += ", " + tflops(p.fp8) + " fp8";
  return o + strprintf("; %.2f TB/s (%s)", p.bandwidth / 1e12, p.source.c_str());
}

std::string share_text(double s) { return s < 0 ? std::string("-") : strprintf("%.0f%%", 100 * s); }

std::string row(const EfficiencyStat& s, size_t width) {
  const char* bound = s.roofline_time > 0 ? (s.compute_bound() ? "compute" : "memory") : "-";
  return strprintf("      %s %10s %7" PRIu64 " %8.1f %7.2f %8.1f  %-8s %5s\n", fit_column(s.name, width).c_str(),
                   format_duration(s.time).c_str(), s.kernels, s.flop_per_s() / 1e12, s.bytes_per_s() / 1e12,
                   s.intensity(), bound, share_text(s.roofline_share()).c_str());
}

std::string header(const char* what, size_t width) {
  return strprintf("      %s %10s %7s %8s %7s %8s  %-8s %5s\n", fit_column(what, width).c_str(), "time", "kernels", "TFLOP/s",
                   "TB/s", "FLOP/B", "bound", "roof");
}

void write_stat(JsonWriter& w, const EfficiencyStat& s) {
  w.field("kernels", s.kernels).field("modelled_kernels", s.modelled).field("time_ns", s.time)
      .field("modelled_time_ns", s.modelled_time).field("flops", s.flops).field("bytes", s.bytes)
      .field("flop_per_s", s.modelled_time ? s.flop_per_s() : kNull).field("bytes_per_s", s.modelled_time ? s.bytes_per_s() : kNull)
      .field("intensity", s.bytes > 0 ? s.intensity() : kNull);
  if (s.roofline_time > 0) w.field("bound", s.compute_bound() ? "compute" : "memory");
  else w.field("bound", nullptr);
  w.field("roofline_time_ns", s.roofline_time).field("roofline_ns", s.roofline_ns)
      .field("compute_bound_time_ns", s.compute_bound_time).field("roofline_share", s.roofline_time ? s.roofline_share() : kNull);
}

template <class T, class F>
void write_list(JsonWriter& w, const char* key, const std::vector<T>& v, size_t limit, F&& fields) {
  w.key(key).begin_array();
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    w.begin_object();
    fields(v[i]);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string efficiency_text(const Efficiency& e) {
  if (e.kernels.empty()) return {};
  std::string o = "  hardware efficiency (work from op shapes, an op's kernels sharing it by time; docs/efficiency.md):\n";
  std::vector<std::string> seen;
  for (const DeviceRoofline& d : e.devices) {
    std::string line = d.peaks.known() ? d.trace_name + " = " + roofline_text(d.peaks) : d.trace_name + ": not in the roofline table";
    if (std::find(seen.begin(), seen.end(), line) != seen.end()) continue;
    o += "    roofline: " + line + "\n";
    seen.push_back(std::move(line));
  }
  const EfficiencyStat& t = e.total;
  o += strprintf("    work known for %" PRIu64 " of %" PRIu64 " kernels (%.1f%% of kernel time): %s, %.2f GB moved; %.1f TFLOP/s, "
                 "%.2f TB/s; %s of the roofline\n",
                 t.modelled, t.kernels, t.time ? 100.0 * double(t.modelled_time) / double(t.time) : 0.0,
                 format_flops(t.flops).c_str(), t.bytes / 1e9, t.flop_per_s() / 1e12, t.bytes_per_s() / 1e12,
                 share_text(t.roofline_share()).c_str());
  for (const PhaseEfficiency& p : e.phases) o += "    " + p.sentence + "\n";
  o += header("class", 14);
  for (const EfficiencyStat& c : e.classes) o += row(c, 14);
  o += header("kernel", 50);
  for (size_t i = 0; i < e.kernel_names.size() && i < 8; ++i) o += row(e.kernel_names[i], 50);
  if (!e.layers.empty()) o += header("layer", 50);
  for (size_t i = 0; i < e.layers.size() && i < 8; ++i) o += row(e.layers[i], 50);
  if (!e.unmodelled.empty()) {
    o += "    no work known for the kernels of:";
    for (size_t i = 0; i < e.unmodelled.size() && i < 6; ++i) {
      const UnmodelledOp& u = e.unmodelled[i];
      o += strprintf("%s %s (%s, %" PRIu64 " kernels, %s)", i ? "," : "", u.name.c_str(),
                     u.why == WorkModel::NoShapes ? "no shapes" : "no model", u.kernels, format_duration(u.time).c_str());
    }
    o += e.unmodelled.size() > 6 ? strprintf(", and %zu more ops\n", e.unmodelled.size() - 6) : "\n";
  }
  if (e.ops_estimated)
    for (const std::string& s : e.assumptions) o += strprintf("    estimated (%" PRIu64 " ops in all): %s\n", e.ops_estimated, s.c_str());
  for (const std::string& n : e.notes) o += "    note: " + n + "\n";
  return o;
}

void write_efficiency_fields(JsonWriter& w, const Efficiency& e) {
  w.field("work_split", "by time");  // an op's kernels share its work in proportion to their time
  write_list(w, "devices", e.devices, SIZE_MAX, [&](const DeviceRoofline& d) {
    w.field("device", int64_t(d.device)).field("name", d.trace_name);
    if (!d.peaks.known()) return void(w.field("roofline", nullptr));
    w.field("roofline", d.peaks.name).field("source", d.peaks.source);
    w.key("peak_flop_per_s").begin_object().field("fp32", d.peaks.fp32).field("fp32_matrix", d.peaks.fp32_matrix)
        .field("tf32", d.peaks.tf32).field("fp16", d.peaks.fp16).field("bf16", d.peaks.bf16).field("fp8", d.peaks.fp8).end_object();
    w.field("bandwidth_bytes_per_s", d.peaks.bandwidth);
  });
  w.key("total").begin_object();
  write_stat(w, e.total);
  w.end_object();
  w.field("ops_modelled", e.ops_modelled).field("ops_estimated", e.ops_estimated)
      .field("kernels_from_counters", e.kernels_from_counters).field("kernels_without_op", e.kernels_without_op);
  w.key("assumptions").begin_array();
  for (const std::string& s : e.assumptions) w.value(s);
  w.end_array();
  write_list(w, "classes", e.classes, SIZE_MAX, [&](const EfficiencyStat& s) {
    w.field("class", s.name);
    write_stat(w, s);
  });
  write_list(w, "phases", e.phases, SIZE_MAX, [&](const PhaseEfficiency& p) {
    w.field("phase", p.stat.name).field("kind", phase_name(p.kind));
    write_stat(w, p.stat);
    w.field("sentence", p.sentence);
  });
  write_list(w, "layers", e.layers, 50, [&](const EfficiencyStat& s) {
    w.field("path", s.name);
    write_stat(w, s);
  });
  write_list(w, "kernels", e.kernel_names, 50, [&](const EfficiencyStat& s) {
    w.field("name", s.name);
    write_stat(w, s);
  });
  write_list(w, "unmodelled_ops", e.unmodelled, 50, [&](const UnmodelledOp& u) {
    w.field("name", u.name).field("why", u.why == WorkModel::NoShapes ? "no shapes" : "no model").field("calls", u.calls)
        .field("kernels", u.kernels).field("time_ns", u.time);
  });
  w.key("notes").begin_array();
  for (const std::string& n : e.notes) w.value(n);
  w.end_array();
}

}  // namespace strata
