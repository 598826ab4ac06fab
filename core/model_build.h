#pragma once

#include "core/kineto_parse.h"
#include "core/trace_model.h"

#include <vector>

namespace strata {

// Merges chunks (in file order; they are emptied) into `model`: strings, categories,
// processes and tracks, nesting, overflow tracks, then links (links.h).
// `legacy_autograd`: the legacy autograd profiler's export (import/importer.h, ChromeJsonRules).
void build_model(std::vector<ChunkOut>& chunks, TraceModel& model, Progress* progress, bool legacy_autograd = false);

// Sorts allocator events by time and completes what the trace left out: totals derived from
// Bytes, and the flags saying what was recorded (MemoryEvents). One of build_model's steps.
void complete_memory_events(MemoryEvents& m);

}  // namespace strata
