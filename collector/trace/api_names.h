// Names of CUDA runtime/driver API calls as the trace shows them, and which are noise.
#pragma once

#include <string_view>

namespace strata::collector {

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (CUPTI's callback names carry the version).
std::string_view strip_api_version(std::string_view name);

// Calls made so often, and so cheap, that recording them costs more than they tell
// (device/attribute queries, error polling, capture checks). Takes a stripped name.
bool is_noisy_api(std::string_view name);

// Driver calls worth recording besides the runtime's: launches and copies made directly
// through the driver (Triton, CUDA graphs, NCCL) and explicit synchronization.
bool is_recorded_driver_api(std::string_view name);

// Runtime calls recorded by the `runtime` kind (the rest are never instrumented, which is
// what keeps a launch cheap): launches, copies, memsets, synchronization, allocations,
// graph capture and launch.
bool is_recorded_runtime_api(std::string_view name);

}  // namespace strata::collector
