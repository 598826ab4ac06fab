// Replaying a dependency graph (graph.h) with scaled durations: the predicted timeline, each
// iteration's predicted length and the critical path.
#pragma once

#include "core/whatif/graph.h"

#include <vector>

namespace strata::whatif {

struct PartReplay {
  std::vector<Ns> iterations;  // predicted length of each iteration
  std::vector<Ns> phases;      // predicted length of each phase node (as Part::phases)
  Ns median = 0;               // over complete iterations (all when none is complete)
  Ns window = 0;               // from the first iteration's start to the last one's end
};

struct ReplayResult {
  std::vector<Ns> start, end;        // per vertex, predicted, on the graph's clock
  std::vector<PartReplay> parts;     // per part (rank)
  Ns iteration = 0;                  // the predicted median iteration (jobs: the slowest rank's)
  Ns window = 0;                     // the predicted span of all iterations (jobs: the slowest rank's)
  Point last = kNoPoint;             // the point that ends last
  std::vector<Vertex> critical_path; // what the last point waited for, back to a fixed time, in time order
};

// `scale[v]` multiplies vertex v's work (1: as measured, 0.5: twice as fast, 0: no time);
// empty: all 1. An iteration ends where the training loop's thread reaches its end, or later
// when the GPU work issued before that runs further past it than it did in the trace.
// `progress` (optional) is checked as it goes: a cancelled replay stops early, its result partial.
ReplayResult replay(const Graph& g, const std::vector<double>& scale = {}, const Progress* progress = nullptr);

}  // namespace strata::whatif
