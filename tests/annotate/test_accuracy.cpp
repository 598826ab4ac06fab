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
    GroundTruth truth = hid_ground_truth(*full);
    REQUIRE(truth.present());
    std::string bytes = strip_hid_events(*full);
    LoadResult bare = load_trace_bytes("stripped", bytes);
    REQUIRE(bare.model);
    CHECK(hid_ground_truth(*bare.model).ranges.empty());
    Annotation a = annotate(*bare.model);
    AccuracyScore s = score_against(*bare.model, a, truth);
    CHECK(s.phase_agreement >= c.phase);
    CHECK(s.kernel_phase_agreement >= 0.999);
    CHECK(s.layer_f1 >= c.f1);
    CHECK(s.forward_kernels > 200);
    Annotation v = annotate(*full);
    AccuracyScore sv = score_against(*full, v, truth);
    CHECK(sv.phase_agreement >= 0.999);
    CHECK(sv.layer_f1 >= 0.999);
  }
}
