// Interned strings: every name in the model is a 32-bit id into one table.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace strata {

using StrId = uint32_t;
inline constexpr StrId kNoStr = UINT32_MAX;

uint64_t hash_bytes(const void* data, size_t len);

// Owns a copy of each distinct string; ids are dense and stable.
class StringTable {
 public:
  StringTable();
  StrId intern(std::string_view s);
  StrId find(std::string_view s) const;  // kNoStr when absent
  std::string_view view(StrId id) const { return id < views_.size() ? views_[id] : std::string_view(); }
  size_t size() const { return views_.size(); }
  size_t bytes() const;

 private:
  void grow();
  std::vector<std::string_view> views_;
  std::vector<uint64_t> hashes_;
  std::vector<StrId> slots_;  // open addressing, kNoStr = empty
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0, block_size_ = 0, arena_capacity_ = 0;
};

}  // namespace strata
