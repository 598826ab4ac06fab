// Accuracy floors against Hotline's hid= ground truth (just under what is measured; see
// bench/annotate_accuracy.cpp for the figures).
#include "helpers.h"

#include "core/annotate/accuracy.h"

using namespace strata;
using namespace strata::test;

TEST_CASE("hotline accuracy: hid= annotations stripped and visible") {
  struct Case { const char* file; double phase, f1; };
  // Measured (stripped): resnet50 99.98% / 100.00%, transformer 99.88% / 96.82%, gnn 100.00% / 100.00%.
  for (Case c : {Case{"hotline-resnet50-rtx3090.pt.trace.json.gz", 0.997, 0.995},
                 Case{"hotline-transformer-rtx3090.pt.trace.json.gz", 0.997, 0.965},
                 Case{"hotline-gnn-rtx3090.pt.trace.json.gz", 0.997, 0.995}}) {
    std::string p = shared_trace(c.file);
    if (!exists(p)) continue;
    CAPTURE(c.file);
    auto full = load(p);
    GroundTruth truth = ground_truth(*full);
    REQUIRE(truth.present());
    CHECK(truth.source == GroundTruth::Source::Ranges);
    std::string bytes = strip_events(*full, kStripTruthRanges | kStripModules | kStripStacks);
    LoadResult bare = load_trace_bytes("stripped", bytes);
    REQUIRE(bare.model);
    CHECK(ground_truth(*bare.model).ranges.empty());
    Annotation a = annotate(*bare.model);
    AccuracyScore s = score_against(*bare.model, a, truth);
    CHECK(s.phase_agreement >= c.phase);
    CHECK(s.kernel_phase_agreement >= 0.999);
    CHECK(s.layer_f1 >= c.f1);
    CHECK(s.layer_f1 >= s.baseline_f1);
    CHECK(s.forward_kernels > 200);
    Annotation v = annotate(*full);
    AccuracyScore sv = score_against(*full, v, truth);
    CHECK(sv.phase_agreement >= 0.999);
    CHECK(sv.layer_f1 >= 0.999);
  }
}

TEST_CASE("module ground truth: nn.Module frames are the layers when there are no hid= ranges") {
  auto full = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  GroundTruth truth = ground_truth(*full);
  CHECK(truth.source == GroundTruth::Source::Modules);
  CHECK_FALSE(truth.has_phases());
  CHECK(std::none_of(truth.ranges.begin(), truth.ranges.end(), [](auto& r) { return r.name.find("Loss") != std::string::npos; }));
  // Stripped of its modules and stacks, the trace has no truth left and layers are inferred.
  LoadResult bare = load_trace_bytes("bare", strip_events(*full, kStripModules | kStripStacks));
  REQUIRE(bare.model);
  CHECK_FALSE(ground_truth(*bare.model).present());
  Annotation a = annotate(*bare.model);
  CHECK(a.layer_source == LayerSource::Heuristic);
  AccuracyScore s = score_against(*bare.model, a, truth);
  CHECK(s.phase_agreement < 0);
  CHECK(s.forward_kernels > 50);
  CHECK(s.baseline_f1 > 0);
  // With the modules kept, the layers are the truth.
  Annotation v = annotate(*full);
  CHECK(score_against(*full, v, truth).layer_f1 >= 0.99);
}
