// Large column buffers: ask the kernel for transparent huge pages before first touch.
// Page faults on fresh memory dominate building a multi-GB model on small VMs; 2 MiB
// pages cut their number by 512.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

void advise_huge_pages(const void* p, size_t bytes);

template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// A vector of n default values whose pages are huge where possible.
template <class T>
void assign_huge(std::vector<T>& v, size_t n, const T& value) {
  std::vector<T>().swap(v);
  reserve_huge(v, n);
  v.assign(n, value);
}

}  // namespace strata
