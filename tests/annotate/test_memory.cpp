// Memory at a moment: each live allocation in its category, the categories summing to what
// was allocated, and the peak's breakdown on every real trace with allocator events.
#include "helpers.h"

#include <filesystem>

using namespace strata;
using namespace strata::test;

namespace {

// Two iterations of a loop marked with ranges named like its phases, on one thread, with
// allocator events (GPU 0) whose totals start at 5000 bytes allocated before the trace.
struct MemoryTrace {
  std::string json = R"({"traceEvents": [
)";
  int64_t total = 5000;
  void add(const std::string& line) { json += line + ",\n"; }
  void range(const char* name, int ts, int dur) {
    add(std::string(R"({"ph": "X", "cat": "user_annotation", "name": ")") + name + R"(", "pid": 7, "tid": 1, "ts": )" +
        std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "}");
  }
  void op(int ts) {
    add(R"({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 7, "tid": 1, "ts": )" + std::to_string(ts) + R"(, "dur": 2})");
  }
  void mem(int ts, int addr, int64_t bytes) {
    total += bytes;
    op(ts);
    add(R"({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 1, "ts": )" + std::to_string(ts) +
        R"(, "args": {"Addr": )" + std::to_string(addr) + R"(, "Bytes": )" + std::to_string(bytes) + R"(, "Total Allocated": )" +
        std::to_string(total) + R"(, "Total Reserved": 65536, "Device Type": 1, "Device Id": 0}})");
  }
};

std::unique_ptr<TraceModel> memory_trace() {
  MemoryTrace t;
  t.mem(10, 1, 1000);  // the model's weights, before the first iteration
  for (int it = 0; it < 2; ++it) {
    const int b = 100 + it * 300;
    t.range(("ProfilerStep#" + std::to_string(it)).c_str(), b, 290);
    t.range("forward", b + 10, 90);
    t.range("block", b + 15, 60);
    t.range("loss", b + 100, 20);
    t.range("backward", b + 120, 100);
    t.range("optimizer step", b + 220, 60);
  }
  // Iteration 0.
  t.mem(120, 2, 200);  // an activation…
  t.mem(130, 3, 50);   // a temporary of the forward
  t.mem(150, 3, -50);
  t.mem(230, 4, 300);  // a gradient, never freed
  t.mem(240, 2, -200);  // …freed in backward
  t.mem(250, 5, 70);   // a temporary of the backward
  t.mem(260, 5, -70);
  t.mem(330, 6, 400);  // optimizer state, never freed
  // Iteration 1: the peak is in its forward, at 430.
  t.mem(420, 7, 200);  // an activation, freed in backward
  t.mem(430, 8, 60);   // a temporary, freed in forward
  t.mem(450, 8, -60);
  t.mem(540, 7, -200);
  t.json += R"({"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "train"}}],
    "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 100000}]})";
  LoadResult r = load_trace_bytes("memory.json", t.json);
  REQUIRE_MESSAGE(r.model, r.error());
  return std::move(r.model);
}

}  // namespace

TEST_CASE("memory at the peak: each live allocation in its category, summing to the peak") {
  auto m = memory_trace();
  Annotation a = annotate(*m);
  REQUIRE(a.iterations.size() == 2);
  const MemoryUse& mu = a.analyses.memory;
  REQUIRE(mu.devices.size() == 1);
  const DeviceMemory& d = mu.devices[0];
  CHECK(d.peak_allocated == 5000 + 1000 + 300 + 400 + 200 + 60);
  CHECK(d.peak_ts == m->memory.ts[0] + 420'000);  // the event at 430 µs
  CHECK(d.capacity == 100000);
  const LiveMemory& l = d.at_peak;
  CHECK(l.of(MemoryCategory::Weights) == 6000);  // 1000 seen, 5000 from before the trace
  CHECK(l.before_trace == 5000);
  CHECK(l.before_trace_as == MemoryCategory::Weights);
  CHECK(l.of(MemoryCategory::Gradients) == 300);
  CHECK(l.of(MemoryCategory::OptimizerState) == 400);
  CHECK(l.of(MemoryCategory::Activations) == 200);
  CHECK(l.of(MemoryCategory::Temporaries) == 60);
  CHECK(l.of(MemoryCategory::Other) == 0);
  // Of what the trace saw allocated, the forward's block allocated the activation and the temporary.
  bool block = false;
  for (const LiveMemory::Layer& la : l.layers)
    if (la.node != kNoNode && a.tree.name_of(la.node) == "block") block = la.bytes == 260 && la.path.starts_with("Iteration 1");
  CHECK(block);
  // In the middle of iteration 0's backward: the forward's activation is freed, the
  // backward's temporary is alive.
  const uint32_t mid = memory_event_at(m->memory, 1, 0, m->memory.ts[0] + 235'000  /* 245 µs */);
  REQUIRE(mid != UINT32_MAX);
  LiveMemory b = live_memory(*m, a, mid);
  CHECK(b.of(MemoryCategory::Activations) == 0);
  CHECK(b.of(MemoryCategory::Gradients) == 300);
  CHECK(b.allocations.size() == 2);  // the weights and the gradient
  CHECK(b.allocated == 6300);
}

TEST_CASE("memory: the trace began mid-training, so what came before it is other") {
  MemoryTrace t;
  t.range("ProfilerStep#7", 100, 100);
  t.range("forward", 110, 50);
  t.mem(120, 2, 100);
  t.json += R"({"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "train"}}]})";
  LoadResult r = load_trace_bytes("mid.json", t.json);
  REQUIRE_MESSAGE(r.model, r.error());
  Annotation a = annotate(*r.model);
  const LiveMemory& l = a.analyses.memory.devices.at(0).at_peak;
  CHECK(l.before_trace == 5000);
  CHECK(l.before_trace_as == MemoryCategory::Other);
  CHECK(l.of(MemoryCategory::Other) == 5000);
  CHECK(l.of(MemoryCategory::Activations) == 100);
}

TEST_CASE("memory at the peak sums to the peak on every real trace with allocator events") {
  std::vector<std::string> paths;
  for (const auto& f : trace_folder_files(false))  // tests/data/traces and what only ../shared/traces has
    if (f.string().ends_with(".json.gz")) paths.push_back(f.string());
  for (const char* dir : {STRATA_TORCH2_DIR, STRATA_TORCH2_DIR "/../collector"}) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
      if (f.path().string().ends_with(".json.gz")) paths.push_back(f.path().string());
  }
  int with_memory = 0;
  for (const std::string& p : paths) {
    auto m = load(p);
    if (!m->memory.size()) continue;
    ++with_memory;
    Annotation a = annotate(*m);
    INFO(p);
    REQUIRE(a.analyses.memory.present);
    for (const DeviceMemory& d : a.analyses.memory.devices) {
      int64_t sum = 0;
      for (int64_t b : d.at_peak.bytes) sum += b;
      CHECK(sum == d.peak_allocated);
      CHECK(d.at_peak.allocated == d.peak_allocated);
      CHECK(d.at_peak.before_trace >= 0);
    }
  }
  CHECK(with_memory >= 3);
}
