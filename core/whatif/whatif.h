// `strata whatif`: the graph replayed unchanged (against the measured iterations) and under
// each scenario, as a report in JSON (docs/whatif.md) or words.
#pragma once

#include "core/whatif/graph.h"
#include "core/whatif/replay.h"
#include "core/whatif/scenarios.h"
#include "core/whatif/verdict.h"

#include <string>
#include <vector>

namespace strata::whatif {

// A scenario's iteration is the unchanged replay's median iteration scaled by how much the
// replayed span of all iterations shrinks (or grows): a change can move work from one
// iteration into the next (a host that runs ahead waits later), so single iterations, and
// their median, do not compare; the span does, and it never grows when work only gets faster.
struct ScenarioResult {
  Scenario scenario;
  Ns predicted = 0;     // iteration (jobs: the slowest rank's)
  double speedup = 1;   // the unchanged replay's prediction over this one
  uint64_t changed = 0; // vertices whose work changed
  std::vector<std::vector<Ns>> iterations;  // per part, per iteration, as replayed
  std::vector<Ns> part_predicted;           // per part: its iteration
  std::vector<PhasePrediction> phases;      // per phase name, per iteration: unchanged and with the change
  std::vector<std::string> notes;
};

struct Report {
  std::string file;
  bool job = false;
  Ns measured = 0;   // median measured iteration (jobs: the slowest rank's)
  Ns predicted = 0;  // the unchanged replay's
  ReplayResult baseline;
  std::vector<ScenarioResult> scenarios;
  double replay_seconds = 0;  // one replay of the graph
  std::vector<std::string> notes;
  Status status;  // Cancelled when the run was: the scenarios after it are missing
};

// `progress` (optional): a cancelled run stops before its next replay (`Report::status`).
Report what_if(const Graph& g, const std::vector<Scenario>& scenarios, std::string file, const Progress* progress = nullptr);
std::string report_json(const Graph& g, const Report& r);
std::string report_text(const Graph& g, const Report& r);

}  // namespace strata::whatif
