// Scoring the annotation against hand-made ground truth: the `hid=N Name` user annotations
// in Hotline's traces (phases: Load Data, Forward, Calc Loss, Zero Grad, Backward,
// Optimizer; the ranges nested inside Forward: layers).
#pragma once

#include "core/annotate/annotation.h"

#include <string>
#include <string_view>

namespace strata {

struct GroundTruth {
  struct TimeRange { Ns begin, end; int32_t id; PhaseKind phase; bool is_phase; std::string name; };
  std::vector<TimeRange> ranges;  // every hid= range (phase ranges have is_phase)
  Ns step_begin = 0, step_end = 0;
  bool present() const { return !ranges.empty(); }
};

// The hid= ranges of a loaded trace (names "hid=N Name").
GroundTruth hid_ground_truth(const TraceModel& m);

// The trace's JSON bytes without the hid= events (to annotate as if they were never there).
std::string strip_hid_events(const TraceModel& m);

struct AccuracyScore {
  double phase_agreement = 0;         // share of the annotated time whose phase equals the truth
  double kernel_phase_agreement = 0;  // share of kernel time (by launch) whose phase equals the truth
  double layer_f1 = 0, layer_precision = 0, layer_recall = 0;  // pairwise, forward kernels
  uint64_t forward_kernels = 0;
};

// Scores an annotation of `m` (which may be the stripped trace) against `truth`.
AccuracyScore score_against(const TraceModel& m, const Annotation& a, const GroundTruth& truth);

}  // namespace strata
