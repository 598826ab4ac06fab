// Traces recorded by the agent on a real GPU (tests/data/collector/README.md): the
// structure the viewer relies on.
#include <doctest/doctest.h>

#include "json_check.h"

using namespace strata::collector;

namespace {

test::TraceSummary load(const char* name) {
  const std::string text = test::read_file(std::string(STRATA_COLLECTOR_DATA) + "/" + name);
  REQUIRE_MESSAGE(!text.empty(), "missing test data " << name);
  auto s = test::summarize(text);
  REQUIRE_MESSAGE(s.parsed, name << ": " << s.error);
  return s;
}

void check_common(const test::TraceSummary& s) {
  CHECK(s.devices >= 1);
  CHECK(s.categories.count("kernel") == 1);
  CHECK(s.categories.count("cuda_runtime") == 1);
  CHECK(!s.flow_starts.empty());
  CHECK(s.flow_starts == s.flow_ends);  // every ac2g arrow has both ends
  CHECK(s.durations_non_negative);
  CHECK(s.min_ts >= 0);                       // relative to baseTimeNanoseconds
  CHECK(s.max_end - s.min_ts < 3600e6);       // under an hour, in microseconds
  CHECK(s.metadata >= 3);
}

}  // namespace

TEST_CASE("recorded: a plain CUDA program") {
  const auto s = load("vector_add.pt.trace.json.gz");
  check_common(s);
  CHECK(s.categories.at("gpu_memcpy") >= 10);
  CHECK(s.categories.at("gpu_memset") == 5);
  CHECK(s.categories.at("kernel") == 10);
  CHECK(s.names.at("iteration") == 5);
  CHECK(s.categories.count("cuda_sync") == 1);
}

TEST_CASE("recorded: 5 NVTX iterations of a PyTorch MLP") {
  const auto s = load("mlp_5iter.pt.trace.json.gz");
  check_common(s);
  CHECK(s.names.at("iteration") == 5);
  CHECK(s.names.at("forward") == 5);
  CHECK(s.names.at("optimizer") == 5);
  CHECK(s.categories.at("kernel") > 100);
}

TEST_CASE("recorded: 200 ms attached to a running PyTorch job") {
  const auto s = load("mlp_attach_200ms.pt.trace.json.gz");
  check_common(s);
  CHECK(s.categories.at("kernel") > 1000);
  CHECK(s.max_end - s.min_ts < 1e6);  // the window, not the whole run
}

TEST_CASE("recorded: Kineto's own on-demand trace, fetched by strata attach --kineto") {
  // 100 ms of a PyTorch loop traced by Kineto itself after `strata attach --kineto PID
  // --duration 0.1`: CPU ops from the PyTorch profiler client and CUPTI's GPU activity.
  const auto s = load("kineto_ondemand_100ms.pt.trace.json.gz");
  CHECK(s.devices >= 1);
  CHECK(s.metadata >= 3);
  CHECK(s.categories.at("cpu_op") > 1000);
  CHECK(s.categories.at("kernel") > 500);
  CHECK(s.categories.at("cuda_runtime") > 500);
  CHECK(s.categories.count("gpu_memset") == 1);
  CHECK(s.names.at("Optimizer.step#AdamW.step") >= 10);
  size_t paired = 0;  // launch -> kernel arrows (flows cut by the window edges stay unpaired)
  for (uint64_t id : s.flow_starts) paired += s.flow_ends.count(id);
  CHECK(paired > 500);
  CHECK(s.durations_non_negative);
  CHECK(s.min_ts >= 0);
  CHECK(s.max_end - s.min_ts < 150e3);  // the 100 ms window, in microseconds
}
