// The flows into and out of an event, as the details panel lists them: what it came from (a
// GPU op's launch, a backward op's forward op, a GPU range's CPU range) and what it led to (a
// launch's GPU op, a forward op's backward op, a CPU range's GPU range). GUI-free; read through
// the trace model's typed link accessors.
#pragma once

#include "core/trace_model.h"

#include <vector>

namespace strata::render {

enum class FlowKind : uint8_t { Launch, GpuOp, ForwardOp, BackwardOp, CpuRange, GpuRange };
const char* flow_kind_name(FlowKind k);  // what the other end is: "launch", "GPU op", …

struct Flow {
  FlowKind kind;   // what `other` is
  bool preceding;  // `other` came first and the event followed from it
  EventId other;
};

// Preceding flows first, then following ones.
std::vector<Flow> flows_of(const TraceModel& m, EventId e);

}  // namespace strata::render
