// libFuzzer target: any bytes through the Kineto loader, then a few model accessors.
#include "core/loader.h"
#include "core/trace_info.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::LoadOptions options;
  options.threads = size % 3 == 0 ? 2 : 1;  // exercise the chunked path too
  auto r = strata::load_trace_bytes("fuzz.json", std::string_view(reinterpret_cast<const char*>(data), size), nullptr,
                                    options);
  if (!r.model) {
    if (r.error().empty()) __builtin_trap();  // a failed load must say why
    return 0;
  }
  const strata::TraceModel& m = *r.model;
  size_t step = m.ev.size() / 64 + 1;
  for (strata::EventId e = 0; e < m.ev.size(); e += strata::EventId(step)) {
    uint32_t t = m.track_of(e);
    if (t == strata::kNoTrack) __builtin_trap();  // every event lies on a track
    strata::EventId p = m.parent_of(e);
    if (p != strata::kNoEvent && (m.ev.start[p] > m.ev.start[e] || m.ev.end(p) < m.ev.end(e))) __builtin_trap();
    (void)m.event_at(t, m.ev.start[e]);
    (void)m.source_of(e);
    (void)m.name_of(e);
  }
  (void)strata::info_json(m);
  (void)strata::info_text(m);
  return 0;
}
