// What the CUPTI simulator's units share (cupti_sim.cpp, range_profiler_sim.cpp).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "sim_api.h"

namespace strata_sim {

// Counts a CUPTI call made from inside a subscriber callback (cupti_calls_in_callbacks).
void note_cupti_call();
// The one simulated context: current on every job thread, named in every callback.
CUcontext context();
// A kernel runs on the simulated GPU (inside its launch call): ranges for range profilers started on ctx.
void range_profiler_kernel_ran(CUcontext ctx, const char* kernel, uint64_t duration_ns);
// range_profiler_calls, ranges_decoded, range_profilers_enabled_at_end.
void range_profiler_counters(StrataSimCounters& out);

}  // namespace strata_sim
