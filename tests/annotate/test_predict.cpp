// Batch size: memory and time fitted against the batch, the largest batch that fits, and the
// one-trace estimate's stated scaling.
#include "core/predict.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace strata;

namespace {

constexpr int64_t MiB = 1 << 20;

BatchPoint point(int64_t batch, int64_t weights, int64_t activations, Ns iteration, Ns gpu_busy) {
  BatchPoint b;
  b.file = "b" + std::to_string(batch);
  b.batch = batch;
  b.iteration = iteration;
  b.gpu_busy = gpu_busy;
  b.at_peak[size_t(MemoryCategory::Weights)] = weights;
  b.at_peak[size_t(MemoryCategory::Activations)] = activations;
  b.peak_allocated = weights + activations;
  b.peak_reserved = b.peak_allocated + 100 * MiB;
  b.capacity = 10240 * MiB;
  return b;
}

}  // namespace

TEST_CASE("predict: two batch sizes give exact linear fits and the largest batch that fits") {
  // 1 GiB of weights; 64 MiB of activations per sample; the GPU takes 1 ms per sample.
  BatchPrediction p = predict_batch({point(32, 1024 * MiB, 32 * 64 * MiB, 40'000'000, 36'000'000),
                                     point(8, 1024 * MiB, 8 * 64 * MiB, 10'000'000, 9'000'000)});
  REQUIRE(p.points.size() == 2);
  CHECK(p.points.front().batch == 8);
  CHECK_FALSE(p.estimate);
  CHECK(p.category[size_t(MemoryCategory::Weights)].a == doctest::Approx(double(1024 * MiB)));
  CHECK(p.category[size_t(MemoryCategory::Weights)].b == doctest::Approx(0).epsilon(1e-6));
  CHECK(p.category[size_t(MemoryCategory::Activations)].b == doctest::Approx(double(64 * MiB)));
  CHECK(p.reserved_slack == 100 * MiB);
  // usable = 10 GiB - 512 MiB = 9728 MiB; 9728 - 100 - 1024 = 8604 MiB of activations: 134 samples.
  CHECK(p.largest_batch == 134);
  CHECK(p.reserved_at(134) <= p.usable);
  CHECK(p.reserved_at(135) > p.usable);
  // GPU-bound (90% busy): 1.125 ms of GPU time per sample, the iteration that / 0.9.
  CHECK(p.iteration_at(64) == doctest::Approx(80'000'000).epsilon(1e-6));  // 64 × 1.125 ms / 0.9
  bool fits64 = false, fits256 = true;
  for (const BatchPrediction::Row& r : p.curve) {
    if (r.batch == 64) fits64 = r.fits;
    if (r.batch == 256) fits256 = r.fits;
  }
  CHECK(fits64);
  CHECK_FALSE(fits256);
  // 134 is beyond 4x the largest measured batch (32): 128 is what the traces support.
  CHECK(p.largest_extrapolated);
  CHECK(p.largest_lower_bound == 128);
}

TEST_CASE("predict: a largest batch far beyond the measured ones is a lower bound and an estimate, never to the sample") {
  // Batch 16 with 1 MiB of activations per sample on a 10 GiB device: 9 GiB of room is ~9,000 samples.
  BatchPrediction p = predict_batch({point(16, 512 * MiB, 16 * MiB, 20'000'000, 19'000'000)});
  REQUIRE(p.largest_batch > 1000);
  CHECK(p.largest_extrapolated);
  CHECK(p.largest_measured == 16);
  CHECK(p.largest_lower_bound == 64);  // what the trace supports: 4x the measured batch
  const std::string text = largest_batch_text(p);
  CAPTURE(text);
  CHECK(text.find("at least 64") != std::string::npos);
  CHECK(text.find("about ") != std::string::npos);
  CHECK(text.find(std::to_string(p.largest_batch)) == std::string::npos);  // not to five digits
  CHECK(text.find("extrapolated") != std::string::npos);
  for (const BatchPrediction::Row& r : p.curve) CHECK(r.extrapolated == (r.batch > 64));
  // Within reach (256 MiB per sample: 35 fit), the figure is said to the sample.
  BatchPrediction near = predict_batch({point(16, 512 * MiB, 16 * 256 * MiB, 20'000'000, 19'000'000)});
  CHECK_FALSE(near.largest_extrapolated);
  CHECK(near.largest_batch == 35);
  CHECK(largest_batch_text(near) == "the largest batch that fits the device (10.0 GiB): 35");
}

TEST_CASE("predict: one trace is an estimate; a host-bound iteration stays as long until the GPU catches up") {
  // Host-bound: 20 ms per iteration, the GPU busy 2 ms of it at batch 16.
  BatchPrediction p = predict_batch({point(16, 512 * MiB, 16 * MiB, 20'000'000, 2'000'000)});
  CHECK(p.estimate);
  CHECK(p.category[size_t(MemoryCategory::Activations)].a == 0);
  CHECK(p.category[size_t(MemoryCategory::Activations)].b == doctest::Approx(double(MiB)));
  CHECK(p.category[size_t(MemoryCategory::Weights)].b == 0);
  CHECK(p.host == 20'000'000);
  CHECK(p.iteration_at(16) == 20'000'000);
  CHECK(p.iteration_at(64) == 20'000'000);     // the GPU's 8 ms still hides under the host's 20
  CHECK(p.iteration_at(320) == 40'000'000);    // 40 ms of GPU work: the GPU's now
  CHECK(!p.notes.empty());
}

TEST_CASE("predict: without a capacity the largest batch is unknown, and every row fits") {
  BatchPoint b = point(8, MiB, MiB, 1'000'000, 900'000);
  b.capacity = 0;
  BatchPrediction p = predict_batch({b});
  CHECK(p.largest_batch == -1);
  for (const BatchPrediction::Row& r : p.curve) CHECK(r.fits);
}

TEST_CASE("predict: traces whose forwards differ in ops are said to be of different models") {
  BatchPoint a = point(8, MiB, 8 * MiB, 1'000'000, 900'000), b = point(16, MiB, 16 * MiB, 2'000'000, 1'800'000);
  a.forward_ops = 120;
  b.forward_ops = 120;
  auto said = [](const BatchPrediction& p) {
    return std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) { return n.find("not be of one model") != std::string::npos; });
  };
  CHECK_FALSE(said(predict_batch({a, b})));
  b.forward_ops = 300;
  CHECK(said(predict_batch({a, b})));
}
