// Hardware metrics on demand: the metric list and kernel glob of a `start` request
// (`metrics=A,B kernels=GLOB`) and of `strata record/attach --metrics LIST --kernels GLOB`.
// CUDA-free: the client checks what it sends, the agent what it receives.
#pragma once

#include "core/base/status.h"

#include <string>
#include <string_view>
#include <vector>

namespace strata::collector {

// Each metric adds counters, and counters add replay passes of every profiled kernel.
inline constexpr size_t kMaxMetrics = 16;
inline constexpr size_t kMaxMetricNameBytes = 128;
inline constexpr size_t kMaxKernelGlobBytes = 255;

// "a.sum,b.sum" -> names, in order. Names are CUPTI metric names: letters, digits, '_' and '.'.
// Invalid, saying why, for an empty list or name, a bad character, a duplicate, too many.
Result<std::vector<std::string>> parse_metrics(std::string_view text);
std::string metrics_text(const std::vector<std::string>& metrics);  // the comma list

// A kernel-name glob (fnmatch): non-empty, at most kMaxKernelGlobBytes, every '[' closed, no
// trailing '\'. Invalid, saying what is wrong, otherwise.
Status check_kernel_glob(std::string_view glob);

}  // namespace strata::collector
