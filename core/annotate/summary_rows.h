// The phase and layer rows of `strata summary` (text and JSON) and of the viewer's Summary tab,
// and its exposed communication: one computation for both, so the tab and the command line
// never disagree.
#pragma once

#include "core/annotate/annotation.h"

#include <map>
#include <string>
#include <vector>

namespace strata {

// Every node of one phase kind and name ("sparse_data_dist") over the iterations.
struct SummaryPhaseRow {
  PhaseKind phase{};
  std::string name;  // the phase's own name, or the program's for its time
  Ns time = 0;       // its spans on the host, summed (wall time)
  Ns cpu = 0;        // of that, the time not in calls that wait for the GPU
  Ns gpu_busy = 0;
  uint64_t kernels = 0, count = 0;
  std::map<Bound, Ns> bound;  // time by each node's own bound
};

// Every leaf layer (a layer whose children are ops) of one path without the iteration.
struct SummaryLayerRow {
  std::string path;  // "Backward/ResNet_0/Sequential_0/BasicBlock_0/Conv2d_1"
  Ns time = 0, cpu = 0, gpu_busy = 0;  // as for phases
  uint64_t kernels = 0, count = 0;
  Bound bound = Bound::Unknown;
};

struct SummaryRows {
  std::vector<SummaryPhaseRow> phases;  // by kind, then name
  std::vector<SummaryLayerRow> layers;  // by GPU busy time (at least a hundredth of the span), then path
  size_t iterations = 1;
};

SummaryRows summary_rows(const Annotation& a);

// Communication no compute kernel hides: the exposed stretches the timeline draws, within the
// window the other work figures cover.
Ns exposed_communication(const Analyses& r);

}  // namespace strata
