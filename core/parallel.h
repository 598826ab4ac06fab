// Running independent work on a few threads: the loader's chunks, the model's tracks, the
// annotation's iterations.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

namespace strata {

// Calls f(i) for every i in [0, n) on up to `threads` threads. Each thread takes the next
// index as it finishes one, so items of uneven size balance out.
template <class F>
void parallel_for(unsigned threads, size_t n, const F& f) {
  size_t k = std::min<size_t>(threads, n);
  if (k <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < k; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// Runs a and b, on two threads when `parallel` (below some size a thread costs more than
// it saves).
template <class A, class B>
void in_two_threads(bool parallel, A&& a, B&& b) {
  if (!parallel) {
    a();
    b();
    return;
  }
  std::thread helper(std::forward<A>(a));
  b();
  helper.join();
}

}  // namespace strata
