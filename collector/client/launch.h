// Launching a job with the agent loaded (`strata record`).
#pragma once

#include <sys/types.h>

#include "core/base/status.h"

#include <string>
#include <vector>

namespace strata::collector {

// libstrata_agent.so: $STRATA_AGENT, next to the executable, in the build tree
// (build/collector/), or in ../lib. NotFound, explaining, when none exists.
Result<std::string> find_agent();

// Starts argv with the agent injected (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH).
// `record_request` is a "start ..." protocol line the agent runs as soon as CUDA starts;
// empty leaves it dormant. Returns the child's pid, or why there is none (e.g. no such program).
Result<pid_t> launch_with_agent(const std::vector<std::string>& argv, const std::string& agent,
                                const std::string& record_request);

// Waits for the child; returns its exit status, or 128+signal when it was killed.
int wait_child(pid_t pid);

}  // namespace strata::collector
