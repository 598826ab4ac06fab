// What a recording records, as named in the `start` request (`kinds=kernel,runtime,...`)
// and by `strata record/attach --kinds`. CUDA-free: shared by the agent and the client.
#pragma once

#include "core/base/status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::collector {

enum KindBit : uint32_t {
  kKindKernel = 1u << 0,       // CONCURRENT_KERNEL
  kKindMemcpy = 1u << 1,       // MEMCPY
  kKindMemset = 1u << 2,       // MEMSET
  kKindRuntime = 1u << 3,      // only launches, copies, syncs, allocations, graphs (an allowlist)
  kKindRuntimeAll = 1u << 4,   // every runtime API but the noisy ones (the RUNTIME kind)
  kKindDriver = 1u << 5,       // direct driver launches/copies/syncs (Triton, NCCL, graphs)
  kKindSync = 1u << 6,         // SYNCHRONIZATION
  kKindNvtx = 1u << 7,         // MARKER: NVTX ranges and marks
  kKindOverhead = 1u << 8,     // OVERHEAD: CUPTI's own buffer and instrumentation time
  kKindExternal = 1u << 9,     // EXTERNAL_CORRELATION
};

// What a recording holds unless told otherwise: every kind (the `runtime` allowlist is
// subsumed by runtime-all). Measured on an H100 (collector/README.md): kinds beyond
// kernel + runtime cost nothing measurable per launch, so nothing is left out by default;
// `--kinds kernel,runtime-all` is CUPTI's floor for a trace with launches and kernels.
inline constexpr uint32_t kDefaultKinds = kKindKernel | kKindMemcpy | kKindMemset | kKindRuntimeAll | kKindDriver |
                                          kKindSync | kKindNvtx | kKindOverhead | kKindExternal;
inline constexpr uint32_t kAllKinds = kDefaultKinds;

// "kernel,runtime,nvtx" -> mask. Also accepts "default" and "all" as members, and
// "+name" / "-name" edits relative to the default ("-nvtx", "+overhead").
// Invalid, naming the unknown word, otherwise.
Result<uint32_t> parse_kinds(std::string_view text);
std::string kinds_text(uint32_t mask);  // the canonical comma list

}  // namespace strata::collector
