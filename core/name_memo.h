// A test of events' names answered once per distinct name: a pass over millions of events
// otherwise tests the same few hundred names again and again (string searches, each a scan).
#pragma once

#include "core/trace_model.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace strata {

class NameMemo {
 public:
  NameMemo(const TraceModel& m, bool (*test)(std::string_view)) : m_(m), test_(test), known_(m.strings.size(), -1) {}
  bool operator()(EventId e) {
    int8_t& k = known_[m_.ev.name[e]];
    if (k < 0) k = int8_t(test_(m_.name_of(e)));
    return k != 0;
  }

 private:
  const TraceModel& m_;
  bool (*test_)(std::string_view);
  std::vector<int8_t> known_;  // per string id: -1 not asked yet, else the answer
};

}  // namespace strata
