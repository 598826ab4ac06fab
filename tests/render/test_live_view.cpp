// The live view of a recording: the trace read again after it grew keeps the user's place —
// the visible range (or the whole trace, when all of it was in view) and the selection.
#include "core/loader.h"
#include "render/drill.h"
#include "render/tiers.h"
#include "render/timeline.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace strata;
using namespace strata::render;

namespace {

// The events of a growing trace; the first read ends after `n` of them, mid-array, as a
// file does while the agent's streaming writer still appends to it.
const char* kEvents[] = {
    R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000})",
    R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":7}})",
    R"({"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":30,"dur":300,"args":{"correlation":7,"device":0,"stream":7}})",
    R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000})",
    R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1020,"dur":5,"args":{"correlation":8}})",
    R"({"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":1030,"dur":300,"args":{"correlation":8,"device":0,"stream":7}})",
    R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":2000,"dur":1000})",
    R"({"ph":"X","cat":"kernel","name":"relu_kernel","pid":0,"tid":7,"ts":2030,"dur":100,"args":{"device":0,"stream":7}})",
};

struct Read {
  std::string json;
  std::unique_ptr<TraceModel> model;
  Annotation annotation;
  Timeline timeline;
};

std::unique_ptr<Read> read_first(size_t n) {
  auto r = std::make_unique<Read>();
  r->json = "{\"traceEvents\": [";
  for (size_t i = 0; i < n; ++i) r->json += std::string(i ? ",\n  " : "\n  ") + kEvents[i];
  if (n == std::size(kEvents)) r->json += "\n]}";
  LoadResult lr = load_trace_bytes("growing.json", r->json);
  REQUIRE_MESSAGE(lr.model, lr.error());
  r->model = std::move(lr.model);
  r->annotation = annotate(*r->model);
  r->timeline.build(*r->model);
  r->timeline.set_annotation(&r->annotation);
  return r;
}

EventId find(const TraceModel& m, std::string_view name) {
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name) return e;
  return kNoEvent;
}

}  // namespace

TEST_CASE("live view: the selection is found again in the grown trace, or let go when gone") {
  auto early = read_first(6);
  auto later = read_first(std::size(kEvents));
  CHECK(early->model->warning_count > 0);  // the first read was cut off mid-array

  // An event: same name and start, whatever its id became.
  const EventId k = find(*early->model, "gemm_kernel");
  REQUIRE(k != kNoEvent);
  const ItemRef again = find_again(early->timeline, ItemRef::event(k), later->timeline);
  REQUIRE(again.kind == ItemRef::Event);
  CHECK(later->model->name_of(again.index) == "gemm_kernel");
  CHECK(later->model->ev.start[again.index] == early->model->ev.start[k]);

  // A tier span: "Iteration 2" in the Iterations tier.
  const Tier& its = early->timeline.tiers().tiers.at(0);
  uint32_t span = 0;
  while (span < its.size() && its.name_of(span) != "Iteration 2") ++span;
  REQUIRE(span < its.size());
  const ItemRef it2 = find_again(early->timeline, ItemRef::span(0, span), later->timeline);
  REQUIRE(it2.kind == ItemRef::TierSpan);
  CHECK(later->timeline.name_of(it2) == "Iteration 2");
  CHECK(later->timeline.start_of(it2) == early->timeline.start_of(ItemRef::span(0, span)));

  // Nothing to find: an item the other trace does not have, or no item.
  const ItemRef relu = ItemRef::event(find(*later->model, "relu_kernel"));
  CHECK_FALSE(find_again(later->timeline, relu, early->timeline).valid());
  CHECK_FALSE(find_again(early->timeline, ItemRef{}, later->timeline).valid());
}

TEST_CASE("live view: a view of the whole trace grows with it; a zoomed view stays put") {
  TimeView whole;
  whole.width_px = 1000;
  whole.set_extent(0, 1000);
  whole.fit(0, 1000);
  TimeView zoomed = whole;
  zoomed.fit(200, 300, 0);

  whole.follow_extent(0, 3000);
  CHECK(whole.t0 <= 0);
  CHECK(whole.t1() >= 3000);
  CHECK(whole.limit_end == 3000);

  zoomed.follow_extent(0, 3000);
  CHECK(zoomed.t0 == doctest::Approx(200));
  CHECK(zoomed.t1() == doctest::Approx(300));
  CHECK(zoomed.limit_end == 3000);
}
