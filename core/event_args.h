// What analyses read of an event's arguments, whatever format the trace came in: typed
// accessors by key, provided by the importer that loaded the trace (TraceModel::args()). The
// model keeps as columns only what every pass needs; these are read when an analysis asks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

using EventId = uint32_t;
using Ns = int64_t;

// The arguments analyses ask for, by what they mean.
enum class Arg : uint8_t {
  Stream,                        // a stream sync record: the stream that waits
  WaitOnStream,                  // ... the stream it waits for
  WaitOnEventRecordCorrelation,  // ... the correlation id of the event record it waits for
  CollectiveName,                // a collective kernel: "allreduce", …
  InMsgNelems,                   // ... elements in its input message
  Dtype,                         // ... their type ("Float", "BFloat16")
  ProcessGroupName,              // ... its process group
  GroupSize,                     // ... how many ranks it joins
  Bytes,                         // a copy: its size
};

// The hardware counters of one profiled kernel (CUPTI's range profiler). FLOPs = Σ over
// p ∈ {d, f, h} of add_p + mul_p + 2·fma_p (those present; a fused multiply-add is two ops).
struct ProfilerRangeCounters {
  double flops = 0;
  bool has_flop_counters = false;  // at least one of the nine
  Ns measured = -1;                // the kernel's measured duration (ns); -1 when not recorded
};

// One input of an op as `record_shapes` wrote it: its shapes ("Input Dims": one for a tensor, one
// per tensor of a TensorList; `[]` gives one empty shape, a 0-d tensor's or a scalar's), its
// type ("Input type": "float", "c10::BFloat16", "TensorList", "Scalar", "") and its value where
// the profiler recorded one ("Concrete Inputs": "[1, 1]", "True", "0.1"; else empty).
struct OpInput {
  std::vector<std::vector<int64_t>> shapes;
  std::string type, value;
};

class EventArgs {
 public:
  virtual ~EventArgs() = default;
  // -1 when absent or not an integer.
  virtual int64_t integer(EventId e, Arg a) const = 0;
  // Empty when absent; valid while the model lives.
  virtual std::string_view text(EventId e, Arg a) const = 0;
  // The shape of an op's input `which` ("Input Dims"); empty when not recorded.
  virtual std::vector<int64_t> input_shape(EventId e, int which) const = 0;
  // Every input of an op, in order; empty when shapes were not recorded.
  virtual std::vector<OpInput> op_inputs(EventId e) const = 0;
  virtual ProfilerRangeCounters counters(EventId e) const = 0;
};

// A trace that recorded no arguments.
class NoEventArgs final : public EventArgs {
 public:
  int64_t integer(EventId, Arg) const override { return -1; }
  std::string_view text(EventId, Arg) const override { return {}; }
  std::vector<int64_t> input_shape(EventId, int) const override { return {}; }
  std::vector<OpInput> op_inputs(EventId) const override { return {}; }
  ProfilerRangeCounters counters(EventId) const override { return {}; }
};

}  // namespace strata
