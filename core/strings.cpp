#include "core/strings.h"

#include <algorithm>
#include <cstring>

namespace strata {

uint64_t hash_bytes(const void* data, size_t len) {
  // A short multiply-xorshift hash: names are short and hashed once per event.
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (len * 0xC2B2AE3D27D4EB4Full);
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
    p += 8;
    len -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, len);
  h = (h ^ w) * 0xFF51AFD7ED558CCDull;
  h ^= h >> 32;
  return h;
}

StringTable::StringTable() : slots_(64, kNoStr) {}

StrId StringTable::find(std::string_view s) const {
  uint64_t h = hash_bytes(s.data(), s.size());
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    StrId id = slots_[i];
    if (id == kNoStr) return kNoStr;
    if (hashes_[id] == h && views_[id] == s) return id;
  }
}

StrId StringTable::intern(std::string_view s) {
  uint64_t h = hash_bytes(s.data(), s.size());
  size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    StrId id = slots_[i];
    if (id == kNoStr) break;
    if (hashes_[id] == h && views_[id] == s) return id;
  }
  if (blocks_.empty() || block_used_ + s.size() > block_size_) {
    block_size_ = std::max<size_t>(64 * 1024, s.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    arena_capacity_ += block_size_;
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  auto id = StrId(views_.size());
  views_.emplace_back(dst, s.size());
  hashes_.push_back(h);
  slots_[i] = id;
  if (views_.size() * 2 > slots_.size()) grow();
  return id;
}

void StringTable::grow() {
  std::vector<StrId> slots(slots_.size() * 2, kNoStr);
  size_t mask = slots.size() - 1;
  for (StrId id = 0; id < views_.size(); ++id) {
    size_t i = hashes_[id] & mask;
    while (slots[i] != kNoStr) i = (i + 1) & mask;
    slots[i] = id;
  }
  slots_.swap(slots);
}

size_t StringTable::bytes() const {
  return arena_capacity_ + views_.capacity() * sizeof(std::string_view) +
         hashes_.capacity() * 8 + slots_.capacity() * sizeof(StrId);
}

}  // namespace strata
