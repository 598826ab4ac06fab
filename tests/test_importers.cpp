// The importer registry: each format's sniffer, the one chosen for each kind of real trace,
// and an unknown format said so.
#include "core/import/importer.h"
#include "core/loader.h"
#include "test_util.h"

#include <doctest/doctest.h>

#include <filesystem>

using namespace strata;
using namespace strata::test;

TEST_CASE("importers: each sniffs its own variant of Chrome-trace JSON, the surest one reads") {
  CHECK(importer_for(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})")->name == "kineto");
  CHECK(importer_for(R"([{"ph": "X", "cat": "Operator", "name": "aten::mm", "ts": 1, "dur": 2}])")->name == "tensorboard-2021");
  CHECK(importer_for(R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions"}])")->name ==
        "autograd-legacy");
  CHECK(importer_for(R"([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "1704161511420306.491", "dur": 2}])")->name ==
        "torch_npu");
  // Not JSON at all: the JSON importer still answers, to say what is wrong at which byte.
  const Importer* any = importer_for("PK\x03\x04 a zip file");
  REQUIRE(any);
  CHECK(any->name == "kineto");
  LoadResult r = load_trace_bytes("archive.zip", "PK\x03\x04 a zip file");
  CHECK_FALSE(r.model);
  CHECK(r.error().find("archive.zip") != std::string::npos);
  CHECK(r.error().find("byte 0") != std::string::npos);
  CHECK(importers().size() == 4);
}

TEST_CASE("importers: the real traces of each format are read by their own importer, with typed arguments") {
  struct Case { const char* file; std::string_view importer; };
  const Case cases[] = {Case{"torch113-cpu-resnet18-autograd-legacy.json.gz", "autograd-legacy"},
                        Case{"mstt-mlp-train-ascend-npu.json.gz", "torch_npu"},
                        Case{"kineto-resnet50-v100-legacy2021.pt.trace.json.gz", "tensorboard-2021"},
                        Case{"hta-nccl-a100-2ranks.pt.trace.json.gz", "kineto"}};
  for (Case c : cases) STRATA_SKIP_UNLESS(!find_trace(c.file).empty(), std::string("real trace not found: ") + c.file);
  for (Case c : cases) {
    const std::filesystem::path p = find_trace(c.file);
    CAPTURE(c.file);
    LoadResult r = load_trace(p.string());
    REQUIRE(r.model);
    CHECK(r.model->stats.importer == c.importer);
  }
  // Analyses read arguments through the model, not the JSON: a collective's size and group.
  const std::filesystem::path nccl = find_trace("hta-nccl-a100-2ranks.pt.trace.json.gz");
  LoadResult r = load_trace(nccl.string());
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  uint64_t sized = 0;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.ev.category(e) == Cat::Kernel && m.name_of(e).starts_with("ncclKernel") && m.args().integer(e, Arg::InMsgNelems) > 0 &&
        !m.args().text(e, Arg::Dtype).empty())
      ++sized;
  CHECK(sized > 0);
  CHECK(m.args().integer(0, Arg::Bytes) == -1);  // an op without it: absent
}

TEST_CASE("importers: in the legacy export, a custom autograd Function's call is an op, a record_function range an annotation") {
  // Neither has a category there. The Function's backward node is its name and "Backward".
  const char* json = R"([
{"name": "forward", "ph": "X", "ts": 1, "dur": 50, "tid": 1, "pid": "CPU functions"},
{"name": "SparsemaxFunction", "ph": "X", "ts": 2, "dur": 10, "tid": 1, "pid": "CPU functions"},
{"name": "aten::sort", "ph": "X", "ts": 3, "dur": 2, "tid": 1, "pid": "CPU functions"},
{"name": "SparsemaxFunctionBackward", "ph": "X", "ts": 60, "dur": 5, "tid": 1, "pid": "CPU functions"}])";
  LoadResult r = load_trace_bytes("legacy.json", json);
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  REQUIRE(m.stats.importer == "autograd-legacy");
  auto category_of = [&](std::string_view name) {
    for (EventId e = 0; e < m.ev.size(); ++e)
      if (m.name_of(e) == name) return m.ev.category(e);
    return Cat::Trace;
  };
  CHECK(category_of("forward") == Cat::UserAnnotation);
  CHECK(category_of("SparsemaxFunction") != Cat::UserAnnotation);
  CHECK(category_of("SparsemaxFunction") == category_of("aten::sort"));
}
