#include "core/predict.h"

#include "core/json_writer.h"
#include "core/median.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata {

namespace {

constexpr int64_t kContextBytes = 512ll << 20;  // the CUDA context and its kernels, outside the allocator
constexpr double kGpuBound = 0.8;               // GPU busy share above which an iteration is the GPU's

LinearFit least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double d = n * sxx - sx * sx;
  if (n == 0) return {};
  if (std::abs(d) < 1e-12) return {sy / n, 0};
  const double b = (n * sxy - sx * sy) / d;
  return {(sy - b * sx) / n, b};
}

bool scales_with_batch(MemoryCategory c) { return c == MemoryCategory::Activations || c == MemoryCategory::Temporaries; }

}  // namespace

Result<BatchPoint> batch_point(const TraceModel& m, const Annotation& a, int64_t batch) {
  const Analyses& r = a.analyses;
  BatchPoint out;
  out.file = m.path;
  out.batch = batch > 0 ? batch : r.batch_size;
  if (out.batch < 1)
    return Status::not_found("no batch size: the trace records no input shapes (record_shapes=True), give it with --batch");
  if (r.iter_median <= 0) return Status::not_found("no complete iteration");
  const DeviceMemory* d = r.memory.peak_device();
  if (!d) return Status::not_found("no [memory] events (record with profile_memory=True)");
  out.iteration = r.iter_median;
  // The forward's op count of the first complete iteration: the same model at another batch
  // size runs the same ops.
  const AnnotationTree& t = a.tree;
  for (const Iteration& it : a.iterations) {
    if (it.partial || it.node == kNoNode) continue;
    for (NodeId n = it.node; n < t.subtree_end[it.node]; ++n) out.forward_ops += t.kind[n] == NodeKind::Op && t.phase[n] == PhaseKind::Forward;
    break;
  }
  std::vector<double> busy;
  for (size_t i = 0; i < a.iterations.size() && i < r.iteration_gpu_busy.size(); ++i)
    if (!a.iterations[i].partial) busy.push_back(double(r.iteration_gpu_busy[i]));
  out.gpu_busy = Ns(median(busy));
  out.at_peak = d->at_peak.bytes;
  out.peak_allocated = d->peak_allocated;
  out.peak_reserved = r.memory.reserved_recorded ? d->peak_reserved : 0;
  out.capacity = d->capacity;
  return out;
}

int64_t BatchPrediction::peak_at(double batch) const {
  double sum = 0;
  for (const LinearFit& f : category) sum += std::max(0.0, f.at(batch));
  return int64_t(sum);
}

int64_t BatchPrediction::reserved_at(double batch) const { return peak_at(batch) + reserved_slack; }

Ns BatchPrediction::iteration_at(double batch) const {
  return Ns(std::max(double(host), gpu_busy.at(batch) * gpu_bound_share));
}

BatchPrediction predict_batch(std::vector<BatchPoint> points) {
  BatchPrediction p;
  std::sort(points.begin(), points.end(), [](auto& x, auto& y) { return x.batch < y.batch; });
  p.points = std::move(points);
  if (p.points.empty()) return p;
  const auto& pts = p.points;
  std::vector<double> x;
  for (const BatchPoint& b : pts) x.push_back(double(b.batch));
  p.estimate = pts.front().batch == pts.back().batch;

  // Memory at the peak, per category.
  for (size_t c = 0; c < p.category.size(); ++c) {
    std::vector<double> y;
    for (const BatchPoint& b : pts) y.push_back(double(b.at_peak[c]));
    if (!p.estimate) {
      p.category[c] = least_squares(x, y);
    } else {  // one batch size: activations and temporaries grow with it, the rest does not
      const double mean = std::accumulate(y.begin(), y.end(), 0.0) / double(y.size());
      p.category[c] = scales_with_batch(MemoryCategory(c)) ? LinearFit{0, mean / x[0]} : LinearFit{mean, 0};
    }
  }
  std::vector<double> slack;
  for (const BatchPoint& b : pts)
    if (b.peak_reserved > 0) slack.push_back(double(std::max<int64_t>(0, b.peak_reserved - b.peak_allocated)));
  if (!slack.empty()) p.reserved_slack = int64_t(median(slack));
  else p.notes.push_back("the traces record no reserved memory: whether a batch fits is judged on allocated memory alone");
  for (const BatchPoint& b : pts) p.capacity = std::max(p.capacity, b.capacity);
  if (p.capacity > 0) {
    p.usable = p.capacity - kContextBytes;
    double a_sum = 0, b_sum = 0;
    for (const LinearFit& f : p.category) a_sum += f.a, b_sum += f.b;
    if (b_sum <= 0) {
      p.largest_batch = INT64_MAX;
      p.notes.push_back("memory at the peak does not grow with the batch in these traces");
    } else {
      p.largest_batch = std::max<int64_t>(0, int64_t(std::floor((double(p.usable - p.reserved_slack) - a_sum) / b_sum)));
      while (p.largest_batch > 0 && p.reserved_at(double(p.largest_batch)) > p.usable) --p.largest_batch;  // categories clamped at 0
    }
  } else {
    p.notes.push_back("the traces give no device capacity (deviceProperties): the largest batch is unknown");
  }

  // Iteration time: the longer of the host's time and the GPU's, the GPU's growing with the batch.
  std::vector<double> busy, host_x, host_t, bound_share;
  for (const BatchPoint& b : pts) {
    busy.push_back(double(b.gpu_busy));
    const double share = double(b.gpu_busy) / double(b.iteration);
    if (share >= kGpuBound) bound_share.push_back(1.0 / share);
    else host_x.push_back(double(b.batch)), host_t.push_back(double(b.iteration));
  }
  if (!p.estimate) {
    p.gpu_busy = least_squares(x, busy);
  } else {
    const double mean = std::accumulate(busy.begin(), busy.end(), 0.0) / double(busy.size());
    p.gpu_busy = {0, mean / x[0]};
  }
  p.gpu_bound_share = bound_share.empty() ? 1.0 : median(bound_share);
  p.host = Ns(median(host_t));
  if (bound_share.empty())
    p.notes.push_back("no trace is GPU-bound: a GPU-bound iteration is assumed to keep the GPU busy all the time");
  if (p.estimate)
    p.notes.push_back("an estimate from one batch size: activations and temporaries are assumed to grow in proportion to "
                      "the batch, weights, gradients, optimizer state and other memory to stay, and the GPU's time per "
                      "iteration to grow in proportion while the host's stays; traces at two or more batch sizes give a fit");
  const auto [fewest, most] = std::minmax_element(pts.begin(), pts.end(), [](const BatchPoint& l, const BatchPoint& r) { return l.forward_ops < r.forward_ops; });
  if (fewest->forward_ops > 0 && double(most->forward_ops) > 1.1 * double(fewest->forward_ops))
    p.notes.push_back(strprintf("the traces may not be of one model: their forwards run %llu to %llu ops (%s, %s)",
                                (unsigned long long)fewest->forward_ops, (unsigned long long)most->forward_ops, fewest->file.c_str(),
                                most->file.c_str()));
  p.notes.push_back(strprintf("a batch fits when its peak allocated memory plus the allocator's measured cache (%s) is within the "
                              "capacity less %s for the CUDA context",
                              format_bytes(double(p.reserved_slack)).c_str(), format_bytes(double(kContextBytes)).c_str()));

  p.largest_measured = pts.back().batch;
  const double reach = kMeasuredReach * double(p.largest_measured);
  if (p.largest_batch > 0 && p.largest_batch != INT64_MAX && double(p.largest_batch) > reach) {
    p.largest_extrapolated = true;
    p.largest_lower_bound = int64_t(reach);
  }
  // The curve: powers of two around the measured batches and the largest that fits, and the measured ones.
  int64_t top = std::max<int64_t>(pts.back().batch * 4, 8);
  if (p.largest_batch > 0 && p.largest_batch != INT64_MAX) top = std::max(top, p.largest_batch * 2);
  top = std::min<int64_t>(top, int64_t(1) << 20);
  std::vector<int64_t> batches;
  for (int64_t b = 1; b <= top; b *= 2) batches.push_back(b);
  for (const BatchPoint& b : pts) batches.push_back(b.batch);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  for (int64_t b : batches) {
    BatchPrediction::Row row;
    row.batch = b;
    row.peak_allocated = p.peak_at(double(b));
    row.peak_reserved = p.reserved_at(double(b));
    row.iteration = p.iteration_at(double(b));
    row.samples_per_s = row.iteration > 0 ? double(b) * 1e9 / double(row.iteration) : 0;
    row.fits = p.largest_batch < 0 || b <= p.largest_batch;
    row.measured = std::any_of(pts.begin(), pts.end(), [&](const BatchPoint& q) { return q.batch == b; });
    row.extrapolated = double(b) > reach;
    p.curve.push_back(row);
  }
  return p;
}

namespace {

// n to two significant digits, digits grouped: 13945 -> "14,000".
std::string about(int64_t n) {
  const double scale = std::pow(10.0, std::max(0.0, std::floor(std::log10(double(std::max<int64_t>(n, 1)))) - 1));
  const auto rounded = int64_t(std::round(double(n) / scale) * scale);
  std::string digits = std::to_string(rounded), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string largest_batch_text(const BatchPrediction& p) {
  if (p.largest_batch == INT64_MAX) return "memory does not limit the batch";
  if (p.largest_batch < 0) return {};
  const std::string device = format_bytes(double(p.capacity));
  if (!p.largest_extrapolated) return strprintf("the largest batch that fits the device (%s): %lld", device.c_str(), (long long)p.largest_batch);
  return strprintf("a batch of at least %lld fits the device (%s); the largest is about %s, extrapolated %.0fx beyond the "
                   "largest measured batch (%lld): memory per sample is assumed to stay as measured, and the allocator's "
                   "fragmentation and workspaces at that size are not in the traces",
                   (long long)p.largest_lower_bound, device.c_str(), about(p.largest_batch).c_str(),
                   double(p.largest_batch) / double(std::max<int64_t>(p.largest_measured, 1)), (long long)p.largest_measured);
}

std::string prediction_text(const BatchPrediction& p) {
  std::string o;
  o += p.estimate ? "batch size (an estimate from one trace):\n" : strprintf("batch size (fitted to %zu traces):\n", p.points.size());
  for (const BatchPoint& b : p.points)
    o += strprintf("  measured batch %lld: iteration %s, %.1f samples/s, peak allocated %s (reserved %s)  %s\n", (long long)b.batch,
                   format_duration(b.iteration).c_str(), double(b.batch) * 1e9 / double(std::max<Ns>(b.iteration, 1)),
                   format_bytes(double(b.peak_allocated)).c_str(), format_bytes(double(b.peak_reserved)).c_str(), b.file.c_str());
  o += "  memory at the peak per sample:";
  for (size_t c = 0; c < p.category.size(); ++c)
    if (p.category[c].b > 0) o += strprintf(" %s %s", memory_category_name(MemoryCategory(c)), format_bytes(p.category[c].b).c_str());
  o += "\n";
  if (const std::string largest = largest_batch_text(p); !largest.empty()) o += "  " + largest + "\n";
  o += "  batch   peak allocated   reserved     iteration   samples/s\n";
  for (const BatchPrediction::Row& r : p.curve)
    o += strprintf("  %5lld   %14s   %8s   %11s   %9.1f%s%s\n", (long long)r.batch, format_bytes(double(r.peak_allocated)).c_str(),
                   format_bytes(double(r.peak_reserved)).c_str(), format_duration(r.iteration).c_str(), r.samples_per_s,
                   r.fits ? "" : "  does not fit", r.measured ? "  (measured)" : r.extrapolated ? "  (extrapolated)" : "");
  for (const std::string& n : p.notes) o += "  note: " + n + "\n";
  return o;
}

void write_prediction_fields(JsonWriter& w, const BatchPrediction& p) {
  w.field("estimate", p.estimate).field("capacity", p.capacity).field("usable", p.usable)
      .field("reserved_slack", p.reserved_slack)
      .field("largest_batch", p.largest_batch == INT64_MAX ? int64_t(-2) : p.largest_batch)
      .field("largest_batch_extrapolated", p.largest_extrapolated).field("largest_batch_lower_bound", p.largest_lower_bound)
      .field("largest_measured_batch", p.largest_measured).field("largest_batch_text", largest_batch_text(p));
  w.key("points").begin_array();
  for (const BatchPoint& b : p.points) {
    w.begin_object().field("file", b.file).field("batch", b.batch).field("iteration_ns", b.iteration).field("gpu_busy_ns", b.gpu_busy)
        .field("peak_allocated", b.peak_allocated).field("peak_reserved", b.peak_reserved).field("forward_ops", b.forward_ops);
    w.key("at_peak").begin_object();
    for (size_t c = 0; c < b.at_peak.size(); ++c) w.field(memory_category_key(MemoryCategory(c)), b.at_peak[c]);
    w.end_object().end_object();
  }
  w.end_array();
  w.key("memory_fit").begin_object();  // bytes = fixed + per_sample · batch
  for (size_t c = 0; c < p.category.size(); ++c)
    w.key(memory_category_key(MemoryCategory(c))).begin_object().field("fixed", p.category[c].a).field("per_sample", p.category[c].b).end_object();
  w.end_object();
  w.key("time_fit").begin_object().field("host_ns", p.host).field("gpu_busy_fixed_ns", p.gpu_busy.a)
      .field("gpu_busy_per_sample_ns", p.gpu_busy.b).field("gpu_bound_factor", p.gpu_bound_share).end_object();
  w.key("curve").begin_array();
  for (const BatchPrediction::Row& r : p.curve)
    w.begin_object().field("batch", r.batch).field("peak_allocated", r.peak_allocated).field("peak_reserved", r.peak_reserved)
        .field("iteration_ns", r.iteration).field("samples_per_s", r.samples_per_s).field("fits", r.fits).field("measured", r.measured).field("extrapolated", r.extrapolated)
        .end_object();
  w.end_array();
  w.key("notes").begin_array();
  for (const std::string& n : p.notes) w.value(n);
  w.end_array();
}

}  // namespace strata
