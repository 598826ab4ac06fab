// Resolving the relations between events into index columns: CPU launch ↔ GPU op,
// GPU annotation ↔ CPU annotation, forward op ↔ backward op, Python frame → parent frame.
#pragma once

#include "core/kineto_parse.h"
#include "core/progress.h"
#include "core/trace_model.h"

#include <vector>

namespace strata {

struct LinkInputs {
  std::vector<SeqRec> seqs;        // event indices are final
  std::vector<PythonRec> pythons;  // event indices are final
  std::vector<FlowRec> flows;      // tracks and categories are global
};

// Stops early (the model then half linked) when `progress` is cancelled.
void resolve_links(TraceModel& m, LinkInputs& in, const Progress* progress = nullptr);

}  // namespace strata
