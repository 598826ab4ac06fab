// Whole-trace findings for the summary panel, computed once on a worker thread after load:
// GPU busy share per device, iteration times, top kernels and CPU ops, GPU idle-gap causes,
// memory peaks. (The annotation adds phases and layers; until then this is what the raw trace
// tells.)
#pragma once

#include "render/timeline.h"

#include <string>
#include <vector>

namespace strata::render {

struct NameTotal {
  StrId name = kNoStr;
  uint64_t count = 0;
  Ns total = 0;
  EventId longest = kNoEvent;
};

struct DeviceBusy {
  int device = -1;
  Ns busy = 0;          // union of GPU op time on the device
  Ns span = 0;          // first op start to last op end
  Ns idle_host = 0;     // gaps where the next op's launch came after the gap began (CPU too slow)
  Ns idle_short = 0;    // gaps shorter than 10 µs (launch latency between dependent ops)
  Ns idle_other = 0;    // the rest (synchronisation, data waits)
};

struct IterationStat {
  Ns start = 0, dur = 0, gpu_busy = 0;
  std::string name;
};

struct Summary {
  Ns span = 0;
  std::vector<DeviceBusy> devices;
  std::vector<IterationStat> iterations;
  std::vector<NameTotal> top_kernels;  // by total time, at most 12
  std::vector<NameTotal> top_ops;      // CPU ops at depth 0 on the main thread... by total time, at most 12
  std::vector<std::pair<std::string, double>> memory_peaks;  // counter title, peak bytes
  Ns gpu_total = 0;                    // summed GPU op durations
};

Summary summarize(const Timeline& tl);

}  // namespace strata::render
