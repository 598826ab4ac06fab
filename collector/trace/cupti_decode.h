// CUPTI activity record -> compact Record. Uses the CUPTI headers for the struct layouts
// only (no libcupti calls), so tests can feed it records built by hand.
#pragma once

#include <cupti_activity.h>

#include <string_view>

#include "records.h"

namespace strata::collector {

// Resolves a runtime or driver callback id to the name shown in the trace.
using ApiNameFn = std::string_view (*)(RecordKind kind, uint32_t cbid);

// Fills `out` and returns true for the kinds the collector keeps; false for the others.
// String views in `out` point into `rec` (or static storage): use them before the
// buffer holding `rec` is handed back.
bool decode_activity(const CUpti_Activity& rec, ApiNameFn api_name, Record& out);

}  // namespace strata::collector
