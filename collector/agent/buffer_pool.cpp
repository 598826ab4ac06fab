#include "buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace strata::agent {

bool BufferPool::init(size_t count, size_t bytes) {
  if (memory_ != nullptr) return true;
  bytes_ = (bytes + 7) & ~size_t{7};  // CUPTI wants 8-byte aligned buffers
  memory_ = static_cast<uint8_t*>(std::aligned_alloc(8, count * bytes_));
  if (memory_ == nullptr) return false;
  slots_ = std::make_unique<Slot[]>(count);
  count_ = count;
  return true;
}

uint8_t* BufferPool::acquire() {
  for (size_t i = 0; i < count_; ++i) {
    uint32_t expected = kFree;
    if (slots_[i].state.compare_exchange_strong(expected, kInUse, std::memory_order_acquire))
      return memory_ + i * bytes_;
  }
  exhausted_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void BufferPool::complete(uint8_t* buffer, size_t valid) {
  if (buffer < memory_ || buffer >= memory_ + count_ * bytes_) return;  // not ours
  Slot& s = slots_[static_cast<size_t>(buffer - memory_) / bytes_];
  s.valid = valid;
  s.seq = next_seq_.fetch_add(1, std::memory_order_relaxed);
  s.state.store(kDone, std::memory_order_release);
}

void BufferPool::drain(const std::function<void(uint8_t*, size_t)>& fn) {
  std::vector<size_t> done;
  for (size_t i = 0; i < count_; ++i)
    if (slots_[i].state.load(std::memory_order_acquire) == kDone) done.push_back(i);
  std::sort(done.begin(), done.end(), [&](size_t a, size_t b) { return slots_[a].seq < slots_[b].seq; });
  for (size_t i : done) {
    if (slots_[i].valid > 0) fn(memory_ + i * bytes_, slots_[i].valid);
    slots_[i].state.store(kFree, std::memory_order_release);
  }
}

}  // namespace strata::agent
