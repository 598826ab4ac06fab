// Progress and cancellation shared between a worker and whoever watches it (the UI, the CLI).
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {

struct Progress {
  std::atomic<uint64_t> done{0};   // units of work finished (bytes, for loading)
  std::atomic<uint64_t> total{0};
  std::atomic<int> stage{0};       // what is running now; meaning is the worker's
  std::atomic<bool> cancel{false};

  bool cancelled() const { return cancel.load(std::memory_order_relaxed); }
  double fraction() const {
    uint64_t t = total.load(std::memory_order_relaxed);
    return t ? double(done.load(std::memory_order_relaxed)) / double(t) : 0.0;
  }
};

}  // namespace strata
