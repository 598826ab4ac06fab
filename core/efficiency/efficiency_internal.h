// Shared by efficiency.cpp (each kernel's work) and efficiency_groups.cpp (its groups and
// sentences). Not part of the public API.
#pragma once

#include "core/efficiency/efficiency.h"

#include <vector>

namespace strata::efficiency {

// Counts the ops with work, and names those without (unknown, or no shapes): `ops` are the
// kernels' owners (sorted) with their `works`; per kernel its `owner` and the `innermost` op
// around its launch.
void count_ops(const TraceModel& m, const std::vector<EventId>& ops, const std::vector<OpWork>& works,
               const std::vector<EventId>& owner, const std::vector<EventId>& innermost, Efficiency& ef);
// Fills the groups (total, classes, kernel names, layers, phases with their sentences) and notes.
void group(const TraceModel& m, const Annotation& a, Efficiency& ef);

}  // namespace strata::efficiency
