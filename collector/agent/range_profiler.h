// Hardware metrics per kernel launch from CUPTI's range profiler (range_profiler.cpp): kernel
// replay, auto range, one range around each launch whose kernel name matches the recording's
// glob. Nothing here runs, and no range-profiler function is called, without --metrics.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../trace/records.h"

namespace strata::agent {

enum class MetricsSetup {
  Ready,        // launches matching the glob are profiled while the recording runs
  BadRequest,   // the start is refused: `why` names the metric, or the agent has no range profiler
  Unavailable,  // the recording goes on without metrics: `why` says why
};

// On the control thread, no recording running. With `defer_host_setup` (inside cuInit, where the
// driver cannot name its chip yet) the config image is built at the first profiled launch instead,
// and an unknown metric then stops metrics with a note rather than refusing the start.
MetricsSetup metrics_prepare(const std::vector<std::string>& metrics, bool defer_host_setup, std::string& why);
// From the CUPTI callback for a kernel-launch API (enter and exit), on the job's thread.
// `recording`: whether the recording was on when the launch entered (the launch gate's view).
void metrics_on_launch(const CUpti_CallbackData& data, bool recording);
// Counters read since the last call, oldest first (control thread).
void metrics_drain(const std::function<void(const collector::KernelCounters&)>& fn);
// Why metrics stopped during the recording (the recording went on without them); empty if they did not.
std::string metrics_failure();
const char* metrics_state();  // "collecting", "failed", "off"
uint64_t metrics_profiled();  // launches profiled in this recording
uint64_t metrics_skipped();   // matching launches not profiled (another thread's launch was being profiled, ...)
// After the recording, before CUPTI may be released: the range profiler off, its objects freed.
// Waits for a launch being profiled to finish (control thread only).
void metrics_release();

}  // namespace strata::agent
