// The median of a sample (the mean of the middle two when there is an even number), 0 when empty.
#pragma once

#include <algorithm>
#include <vector>

namespace strata {

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

}  // namespace strata
