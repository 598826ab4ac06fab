// What-if scenarios: named changes ("kernels-2x", "no-launch-overhead", …) and scaling rules
// ("kernel:*gemm*=2"), each turned into a per-vertex factor on the graph's work.
#pragma once

#include "core/whatif/graph.h"

#include <string>
#include <string_view>
#include <vector>

namespace strata::whatif {

struct Effect {
  enum class Kind : uint8_t {
    Kernels,           // compute kernels `value`× faster
    NoLaunchOverhead,  // launch calls cost no CPU time (CUDA graphs)
    NoDataLoading,     // the data-loading phase's CPU time is hidden
    Communication,     // collectives and peer-to-peer copies `value`× faster
    Bandwidth,         // collectives and peer-to-peer copies re-timed at `value` GB/s from their sizes
    Amp,               // GEMM / convolution kernels not on tensor cores `value`× faster
    FusedOptimizer,    // the optimizer's launches cost one launch per iteration
    Kernel,            // GPU ops whose name matches the glob `pattern`: `value`× faster
    Layer,             // what runs in the layer at `pattern` (CPU and GPU): `value`× faster
    Phase,             // what runs in phase `phase` (CPU and GPU): `value`× faster
  };
  Kind kind = Kind::Kernels;
  double value = 2;  // a speed-up (durations are divided by it; inf: no time), or GB/s
  std::string pattern;
  PhaseKind phase = PhaseKind::Other;
};

struct Scenario {
  std::string name;  // as asked for ("kernels-2x", "kernel:*gemm*=2", "kernels-2x,comm-2x")
  std::vector<Effect> effects;
};

// One scenario from a spec: names and rules joined by ','. `amp_factor` is the speed-up the
// `amp` scenario assumes. Invalid, saying what is wrong, on a bad spec.
Result<Scenario> parse_scenario(std::string_view spec, double amp_factor);
Scenario bandwidth_scenario(double gb_per_s);
// kernels-2x, no-launch-overhead, no-data-loading, comm-2x.
std::vector<Scenario> default_scenarios();

// What a scenario changes, in words, with its assumptions.
std::string describe(const Scenario& s);
// A short phrase for ranking ("CUDA graphs", "2x faster kernels").
std::string phrase(const Scenario& s);

struct ScenarioScale {
  std::vector<double> scale;  // per vertex: its work's multiplier
  uint64_t changed = 0;       // vertices whose work changes
  std::vector<std::string> notes;
};
ScenarioScale scenario_scale(const Graph& g, const Scenario& s);

}  // namespace strata::whatif
