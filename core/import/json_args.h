// Event arguments read from the Chrome-trace JSON an event came from (its bytes in the
// source, TraceModel::source_of), when an analysis asks: the JSON importers' EventArgs.
#pragma once

#include "core/event_args.h"

#include <string_view>

namespace strata {

struct TraceModel;

class JsonEventArgs final : public EventArgs {
 public:
  explicit JsonEventArgs(const TraceModel& m) : m_(m) {}
  int64_t integer(EventId e, Arg a) const override;
  std::string_view text(EventId e, Arg a) const override;
  std::vector<int64_t> input_shape(EventId e, int which) const override;
  std::vector<OpInput> op_inputs(EventId e) const override;
  ProfilerRangeCounters counters(EventId e) const override;

 private:
  const TraceModel& m_;
};

// The same readings on one event's JSON text.
std::string_view arg_text(std::string_view event_json, std::string_view key);  // strings unquoted; empty if absent
int64_t arg_int(std::string_view event_json, std::string_view key);            // -1 if absent or no integer
std::vector<int64_t> input_shape_json(std::string_view event_json, int which);
std::vector<OpInput> op_inputs_json(std::string_view event_json);  // "Input Dims", "Input type", "Concrete Inputs"
ProfilerRangeCounters profiler_range_counters_json(std::string_view event_json);

}  // namespace strata
