// Batch size: from traces of one model at several batch sizes (or an estimate from one), the
// memory at the peak and the iteration time as functions of the batch, the largest batch that
// fits the device, and the throughput curve (Skyline's question, from traces).
#pragma once

#include "core/annotate/annotation.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

class JsonWriter;

// What one trace says about its batch size.
struct BatchPoint {
  std::string file;
  int64_t batch = -1;                 // samples per iteration
  Ns iteration = 0;                   // median iteration
  Ns gpu_busy = 0;                    // median GPU busy per iteration
  std::array<int64_t, size_t(MemoryCategory::Count)> at_peak{};  // the peak device's, by category
  int64_t peak_allocated = 0, peak_reserved = 0;
  int64_t capacity = 0;               // the device's memory; 0 unknown
  uint64_t forward_ops = 0;           // CPU ops in one complete iteration's forward: the model's shape
};
// The point of an annotated trace; `batch` < 1 takes the one the trace's shapes give. NotFound
// says why there is none (no iterations, no memory events, no batch size).
Result<BatchPoint> batch_point(const TraceModel& m, const Annotation& a, int64_t batch);

struct LinearFit {
  double a = 0, b = 0;  // y = a + b·x
  double at(double x) const { return a + b * x; }
};

struct BatchPrediction {
  std::vector<BatchPoint> points;  // by batch
  bool estimate = false;           // from one trace: assumed scaling, not a fit
  std::array<LinearFit, size_t(MemoryCategory::Count)> category;  // bytes at the peak against the batch
  int64_t reserved_slack = 0;      // reserved less allocated at the peak (median of the points): the allocator's cache
  int64_t capacity = 0;
  int64_t usable = 0;              // capacity less what the CUDA context takes outside the allocator
  LinearFit gpu_busy;              // GPU busy per iteration against the batch
  Ns host = 0;                     // the host's time per iteration (does not grow with the batch)
  double gpu_bound_share = 1;      // iteration time / GPU busy when GPU-bound
  int64_t largest_batch = -1;      // the largest that fits (-1: no capacity known; INT64_MAX: memory does not grow)
  // Beyond kMeasuredReach times the largest measured batch the fit is an extrapolation: memory
  // per sample, the allocator's fragmentation and workspaces there are assumed, not seen. Then
  // the largest batch is said as a lower bound (the largest within reach that fits) and an
  // estimate to two significant digits, never to the sample.
  int64_t largest_measured = 0;
  bool largest_extrapolated = false;
  int64_t largest_lower_bound = -1;  // with largest_extrapolated: what the traces support
  struct Row {
    int64_t batch = 0;
    int64_t peak_allocated = 0, peak_reserved = 0;
    Ns iteration = 0;
    double samples_per_s = 0;
    bool fits = true;
    bool measured = false;
    bool extrapolated = false;  // beyond kMeasuredReach times the largest measured batch
  };
  std::vector<Row> curve;  // powers of two, and the measured batches
  std::vector<std::string> notes;  // assumptions and caveats, in words
  int64_t peak_at(double batch) const;      // allocated
  int64_t reserved_at(double batch) const;
  Ns iteration_at(double batch) const;
};

inline constexpr double kMeasuredReach = 4;

// Fits the points (at least one, each with a batch); with one, estimates.
BatchPrediction predict_batch(std::vector<BatchPoint> points);
// The largest batch that fits, in words, as sure as the traces allow ("the largest batch that
// fits the device (80 GB): 134"; beyond reach "at least 64 … about 14,000 …"); empty when unknown.
std::string largest_batch_text(const BatchPrediction& p);
std::string prediction_text(const BatchPrediction& p);
void write_prediction_fields(JsonWriter& w, const BatchPrediction& p);  // into an open object

}  // namespace strata
