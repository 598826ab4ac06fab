// Scoring the annotation against ground truth the recording itself wrote: the `hid=N Name`
// ranges of Hotline's traces and of Strata's corpus (a range per module, opened and closed by
// forward hooks; the phases as Hotline's Load Data, Forward, Calc Loss, Zero Grad, Backward,
// Optimizer or as plain forward, loss, zero_grad, backward, optimizer ranges), else the
// nn.Module frames of a trace recorded with_modules (layers only: no phase truth).
#pragma once

#include "core/annotate/annotation.h"

#include <string>
#include <string_view>

namespace strata {

struct GroundTruth {
  enum class Source : uint8_t { None, Ranges, Modules };
  struct TimeRange { Ns begin, end; int32_t id; PhaseKind phase; bool is_phase; std::string name; };
  std::vector<TimeRange> ranges;  // phase ranges have is_phase; layers the rest
  Source source = Source::None;
  bool present() const { return !ranges.empty(); }
  bool has_phases() const { return source == Source::Ranges; }
};

// The trace's ground truth: its hid= and phase ranges when it has them, else its nn.Module frames.
GroundTruth ground_truth(const TraceModel& m);

// What to strip before annotating, so that the annotation sees none of it.
enum StripFlags : unsigned {
  kStripTruthRanges = 1,  // hid= ranges and the truth's phase ranges
  kStripModules = 2,      // nn.Module python frames
  kStripStacks = 4,       // every python_function frame (the modules' included)
};
// The trace's JSON bytes without those events.
std::string strip_events(const TraceModel& m, unsigned flags);

struct AccuracyScore {
  double phase_agreement = 0;         // share of the annotated time whose phase equals the truth
  double kernel_phase_agreement = 0;  // share of kernel time (by launch) whose phase equals the truth
  double layer_f1 = 0, layer_precision = 0, layer_recall = 0;  // pairwise, forward kernels
  double baseline_f1 = 0;  // the same for "every top-level op is its own layer"
  uint64_t forward_kernels = 0;
};

// Scores an annotation of `m` (which may be the stripped trace) against `truth`.
AccuracyScore score_against(const TraceModel& m, const Annotation& a, const GroundTruth& truth);

}  // namespace strata
