// Union length of time intervals: how long something was busy when its parts overlap (GPU
// ops on several streams, sync calls on several threads).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata {

// The union of intervals added in start order, kept in two numbers so that it can also live
// in two columns of a table (the annotation tree's per-node GPU busy time): `acc` is the
// closed intervals' total minus the open interval's start, `open_end` the open interval's
// end. Intervals that touch merge.
struct IntervalUnion {
  int64_t acc = 0, open_end = 0;
  bool any = false;

  // The same step on external storage; `first` says the union is still empty.
  static void add_to(int64_t& acc, int64_t& open_end, bool first, int64_t s, int64_t e) {
    if (first) {
      acc = -s;
      open_end = e;
    } else if (s > open_end) {
      acc += open_end - s;
      open_end = e;
    } else if (e > open_end) {
      open_end = e;
    }
  }
  static int64_t total_of(int64_t acc, int64_t open_end, bool any) { return any ? acc + open_end : 0; }

  void add(int64_t s, int64_t e) {
    add_to(acc, open_end, !any, s, e);
    any = true;
  }
  int64_t total() const { return total_of(acc, open_end, any); }
};

using Interval = std::pair<int64_t, int64_t>;

// Sorts and merges intervals in place (touching ones merge).
inline void merge_intervals(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  size_t w = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (w && v[i].first <= v[w - 1].second) v[w - 1].second = std::max(v[w - 1].second, v[i].second);
    else v[w++] = v[i];
  }
  v.resize(w);
}

}  // namespace strata
