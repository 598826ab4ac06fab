// A fixed pool of CUPTI activity buffers, handed out and returned without locks so the
// CUPTI callbacks never wait. When every buffer is in use the request gets none and
// CUPTI drops records, which it counts; memory stays bounded by the pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace strata::agent {

class BufferPool {
 public:
  // Allocates the pool once; later calls keep the first allocation.
  bool init(size_t count, size_t bytes);
  size_t buffer_bytes() const { return bytes_; }

  uint8_t* acquire();                           // nullptr when exhausted
  void complete(uint8_t* buffer, size_t valid);  // from CUPTI's buffer-completed callback
  // Single consumer: passes completed buffers, oldest first, then makes them free again.
  void drain(const std::function<void(uint8_t*, size_t)>& fn);
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }

 private:
  enum : uint32_t { kFree, kInUse, kDone };
  struct Slot {
    std::atomic<uint32_t> state{kFree};
    uint64_t seq = 0;
    size_t valid = 0;
  };
  std::unique_ptr<Slot[]> slots_;
  uint8_t* memory_ = nullptr;  // never freed: CUPTI may still hold a buffer at exit
  size_t count_ = 0;
  size_t bytes_ = 0;
  std::atomic<uint64_t> next_seq_{0};
  std::atomic<uint64_t> exhausted_{0};
};

}  // namespace strata::agent
