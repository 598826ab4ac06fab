// What a loaded trace holds, as text or JSON (`strata info`).
#pragma once

#include "core/trace_model.h"

#include <string>
#include <vector>

namespace strata {

struct StepInfo {
  std::vector<EventId> steps;  // ProfilerStep#N ranges on CPU threads, in time order
  Ns mean_ns = 0, min_ns = 0, max_ns = 0;
};
StepInfo profiler_steps(const TraceModel& m);

std::string info_text(const TraceModel& m);
std::string info_json(const TraceModel& m);

}  // namespace strata
