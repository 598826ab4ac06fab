// What bounds each phase, from the dependency graph's replays: one model for the summary, the
// viewer and `strata whatif`. A phase is GPU-bound when 2x faster kernels would shorten it,
// launch-bound when removing the launches' CPU time would, communication-bound when faster
// collectives would (each by at least `kSensitive`), host-blocked when its host sits in calls
// that wait for the GPU (a sync, a synchronous or pageable copy, aten::item), data loading by
// what it is, else bound by the CPU work it runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/whatif/graph.h"
#include "core/whatif/replay.h"

#include <string>
#include <vector>

namespace strata::whatif {

// The least saving a scenario must bring a phase for the phase to be called bound by what
// the scenario speeds up.
inline constexpr double kSensitive = 0.15;

// A phase (by name, as the summary lists phases) under one replay, per iteration.
struct PhasePrediction {
  std::string phase;
  PhaseKind kind = PhaseKind::Other;
  Ns measured = 0, predicted = 0;
};
// Per phase name: the unchanged replay's length (`measured`) and `r`'s, summed over the phase's
// segments and divided by the iterations.
std::vector<PhasePrediction> phase_predictions(const Graph& g, const ReplayResult& baseline, const ReplayResult& r);

// Judges every phase of `a` (Annotation::verdicts) and sets the phase nodes' `bound` in both
// trees. `progress` (optional) is checked between replays.
void judge_phases(const TraceModel& m, Annotation& a, const Progress* progress = nullptr);

}  // namespace strata::whatif
