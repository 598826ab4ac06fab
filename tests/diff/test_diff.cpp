// strata diff on pairs recorded for it (tests/data/diff-pairs: each pair's truth is how it was
// made, see its truth.json) and on the real traces.
#include "annotated_run.h"
#include "core/diff/diff.h"
#include "core/loader.h"
#include "test_data.h"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

using namespace strata;
using namespace strata::test;

namespace {

using Run = test::AnnotatedRun;
Run open(const std::filesystem::path& p) { return test::open_annotated(p); }

std::filesystem::path pairs_dir() { return test_data_dir() / "diff-pairs"; }

Diff diff_pair(const std::string& pair) {
  Run a = open(pairs_dir() / (pair + "-a.json.gz")), b = open(pairs_dir() / (pair + "-b.json.gz"));
  return diff_runs(*a.model, a.annotation, *b.model, b.annotation);
}

const DiffRow* phase_row(const Diff& d, std::string_view name) {
  for (const DiffRow& r : d.phases)
    if (r.name_a == name || r.name_b == name) return &r;
  return nullptr;
}

bool starts(const std::string& path, std::string_view prefix) { return path.starts_with(prefix); }

// The last component of a layer path, its number aside ("Forward/Model/Conv 3" → "Conv").
std::string kind_of(const std::string& path) {
  std::string last = path.substr(path.rfind('/') + 1);
  return last.substr(0, last.find(' '));
}

}  // namespace

TEST_CASE("diff: a trace against itself changes nothing and aligns everything") {
  const std::filesystem::path p = find_trace("hotline-resnet50-rtx3090.pt.trace.json.gz");
  STRATA_SKIP_UNLESS(!p.empty(), "real trace not found: hotline-resnet50-rtx3090.pt.trace.json.gz");
  Run a = open(p), b = open(p);
  Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
  CHECK(d.time_basis == "gpu");
  CHECK(d.iteration_a == d.iteration_b);
  CHECK(d.layers_a > 10);
  CHECK(d.layers_aligned == d.layers_a);
  CHECK(d.aligned_share == 1.0);
  CHECK(d.same_model);
  for (auto* rows : {&d.phases, &d.layers, &d.ops, &d.kernels, &d.other})
    for (const DiffRow& r : *rows) {
      CAPTURE(r.name_a);
      CHECK(r.a.has_value());
      CHECK(r.b.has_value());
      CHECK(r.delta() == 0);
      CHECK(r.self_delta() == 0);
    }
  CHECK(d.notes.empty());
}

TEST_CASE("diff: GPU work lines up by the op that launched it, whatever the kernels are called") {
  // One vendor's kernels against another's for the same ops: the same run with every kernel
  // renamed (a cuBLAS gemm on one side, a differently named gemm on the other).
  const std::filesystem::path p = find_trace("hotline-resnet50-rtx3090.pt.trace.json.gz");
  STRATA_SKIP_UNLESS(!p.empty(), "real trace not found: hotline-resnet50-rtx3090.pt.trace.json.gz");
  Run a = open(p);
  LoadResult r = load_trace(p.string());
  REQUIRE(r.model);
  TraceModel& m = *r.model;
  size_t renamed = 0;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (is_gpu_op_cat(m.ev.category(e))) {
      m.ev.name[e] = m.strings.intern("other_vendor_" + std::to_string(m.ev.name[e]));
      ++renamed;
    }
  REQUIRE(renamed > 100);
  Run b{std::move(r.model), {}};
  b.annotation = annotate(*b.model);
  Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
  CHECK(d.aligned_share >= 0.9);
  REQUIRE(!d.kernels.empty());
  for (const DiffRow& k : d.kernels) {
    CAPTURE(k.name_a);
    CHECK(k.name_a == k.name_b);  // every launching op on both sides
    CHECK(k.delta() == 0);
    CHECK(k.detail.find("other_vendor_") != std::string::npos);  // says which kernels on each side
  }
}

TEST_CASE("diff: ResNet-18 on an NVIDIA GPU against ResNet-18 on an AMD one: its layers align") {
  // Two recordings made apart: torch 2 on an H100, and TraceLens's MI300X run of the same model
  // under DDP with activation checkpointing (wrappers and recomputation that only B has).
  const std::filesystem::path a = test_data_dir() / "torch2" / "resnet18-train-h100.pt.trace.json.gz",
                              b = find_trace("tracelens-resnet18-actckpt-ddp-train-mi300x.json.gz");
  STRATA_SKIP_UNLESS(std::filesystem::exists(a) && !b.empty(), "the two ResNet-18 traces are not here");
  Run ra = open(a), rb = open(b);
  Diff d = diff_runs(*ra.model, ra.annotation, *rb.model, rb.annotation);
  CHECK(d.time_basis == "gpu");
  CHECK(d.same_model);
  CHECK(double(d.layers_aligned) >= 0.9 * double(d.layers_a));  // the model's layers (A has no wrappers)
  bool vendors_said = false;
  for (const std::string& n : d.notes) vendors_said |= n.find("matched by the ops that launched it") != std::string::npos;
  CHECK(vendors_said);
  size_t conv_rows = 0;  // the convolutions' GPU work lines up by aten::conv2d / convolution backward
  for (const DiffRow& k : d.kernels) conv_rows += k.a && k.b && k.name_a.find("conv") != std::string::npos;
  CHECK(conv_rows >= 1);
}

TEST_CASE("diff: one model at two batch sizes aligns every layer; forward and backward slow down") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  Diff d = diff_pair("batch");
  CHECK(d.time_basis == "wall");
  CHECK(d.layers_a > 50);
  CHECK(d.aligned_share == 1.0);
  CHECK(d.same_model);
  CHECK(d.iteration_b > d.iteration_a);
  for (const char* phase : {"Forward", "Backward"}) {
    const DiffRow* r = phase_row(d, phase);
    REQUIRE(r);
    CHECK(double(*r->b) >= 1.3 * double(*r->a));  // truth: 1.7x (4x the batch, noisy)
  }
  for (const DiffRow& r : d.layers) CHECK(r.detail.empty());  // nothing on one side only
}

TEST_CASE("diff: work injected inside one module is the top layer row") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  SUBCASE("with the module's own ranges: the module, by name") {
    Diff d = diff_pair("stall-truth");
    CHECK(d.aligned_share == 1.0);
    REQUIRE(!d.layers.empty());
    const DiffRow& top = d.layers.front();
    CAPTURE(top.name_b);
    CHECK(top.name_b.find(" layers.1.mlp ") != std::string::npos);  // truth: the module that sleeps
    CHECK(top.self_delta() >= 15'000'000);
    CHECK(starts(top.name_b, "Forward/"));
    REQUIRE(d.explain.size() >= 2);
    CHECK(d.explain[1].find("layers.1.mlp") != std::string::npos);
  }
  SUBCASE("inferred layers: the layer where the extra ops are") {
    Run a = open(pairs_dir() / "stall-a.json.gz"), b = open(pairs_dir() / "stall-b.json.gz");
    Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
    CHECK(d.aligned_share >= 0.85);
    REQUIRE(!d.layers.empty());
    const DiffRow& top = d.layers.front();
    CAPTURE(top.name_b);
    CHECK(top.self_delta() >= 15'000'000);
    CHECK(starts(top.name_b, "Forward/"));
    // The injected ops (matmul and tanh on a detached copy, only in B) are in the top row's layer.
    const AnnotationTree& t = b.annotation.tree;
    bool holds_injected = false;
    for (NodeId n = 0; n < t.size(); ++n) {
      if (t.kind[n] != NodeKind::Layer || t.path(n).find(top.name_b) == std::string::npos) continue;
      for (NodeId k = n; k < t.subtree_end[n]; ++k) holds_injected |= t.name_of(k) == "aten::tanh";
    }
    CHECK(holds_injected);
    // The layer doing the extra work is the stack's second layer (the matmuls and torch.tanh
    // are its own ops, the stall before them its own time), and every other layer keeps its
    // name: A's and B's forward layers align under the same names.
    CHECK(top.name_b.find("Layer 2: attention + MLP") != std::string::npos);
    for (const DiffRow& r : d.layers)
      if (r.a && r.b && starts(r.name_a, "Forward/")) CHECK(r.name_a == r.name_b);
    REQUIRE(d.explain.size() >= 2);
    CHECK(d.explain[1].find("Layer 2: attention + MLP") != std::string::npos);
  }
}

TEST_CASE("diff: an added layer shows on one side only, and the rest still line up") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  Diff d = diff_pair("added-layer");
  CHECK(d.same_model);
  // Truth: b inserts Conv-BatchNorm-ReLU (features.2), inferred as one Conv-Norm layer around
  // its three units; a's layers are all in b.
  std::map<std::string, int> only_b_forward;
  for (const DiffRow& r : d.layers) {
    CAPTURE(r.name_a);
    CAPTURE(r.name_b);
    if (starts(r.name_a, "Forward/")) CHECK(r.b.has_value());  // nothing of a's forward is lost
    if (!r.a && starts(r.name_b, "Forward/")) ++only_b_forward[kind_of(r.name_b)];
  }
  CHECK(only_b_forward == std::map<std::string, int>{{"BatchNorm", 1}, {"Conv", 1}, {"Conv-Norm", 1}, {"ReLU", 1}});
  CHECK(d.layers_aligned == d.layers_a);
  const DiffRow* forward = phase_row(d, "Forward");
  REQUIRE(forward);
  CHECK(forward->delta() > 0);
  bool said = false;
  for (const std::string& s : d.explain) said |= s.starts_with("Forward") && s.find("(added)") != std::string::npos;
  CHECK(said);
}

TEST_CASE("diff: another optimizer changes the optimizer step, not the model") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  Diff d = diff_pair("optimizer");
  CHECK(d.aligned_share == 1.0);
  REQUIRE(!d.phases.empty());
  CHECK(d.phases.front().name_a == "Optimizer step");  // the largest change
  CHECK(double(*d.phases.front().b) >= 1.5 * double(*d.phases.front().a));
}

TEST_CASE("diff: two runs of one setup align fully and differ by noise only") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  Diff d = diff_pair("same");
  CHECK(d.aligned_share == 1.0);
  CHECK(d.same_model);
  CHECK(double(std::abs(d.iteration_b - d.iteration_a)) < 0.2 * double(d.iteration_a));
}

TEST_CASE("diff: different models are said to be, and what matched is still shown") {
  const std::filesystem::path a = find_trace("hotline-resnet50-rtx3090.pt.trace.json.gz"),
                              b = find_trace("hotline-transformer-rtx3090.pt.trace.json.gz");
  STRATA_SKIP_UNLESS(!a.empty() && !b.empty(), "hotline traces not found");
  Run ra = open(a), rb = open(b);
  Diff d = diff_runs(*ra.model, ra.annotation, *rb.model, rb.annotation);
  CHECK(!d.same_model);
  CHECK(d.aligned_share < 0.5);
  bool said = false;
  for (const std::string& n : d.notes) said |= n.find("different models") != std::string::npos;
  CHECK(said);
  CHECK(!d.phases.empty());
  CHECK(diff_text(d).find("aligned") != std::string::npos);
}

TEST_CASE("diff JSON: the documented fields, null on the side that lacks a row") {
  STRATA_SKIP_UNLESS(std::filesystem::exists(pairs_dir() / "truth.json"), "tests/data/diff-pairs is not here");
  Diff d = diff_pair("added-layer");
  const std::string json = diff_json(d);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  REQUIRE(parser.parse(json).get(root) == simdjson::SUCCESS);
  CHECK(std::string_view(root["schema"].get_string().value()) == "strata.diff/1");
  CHECK(std::string_view(root["time_basis"].get_string().value()) == "wall");
  CHECK(root["iteration"]["delta_ns"].get_int64().value() == d.iteration_b - d.iteration_a);
  size_t only_b = 0;
  for (simdjson::dom::element row : root["layers"].get_array()) {
    CHECK(row["delta_ns"].is_int64());
    if (row["path_a"].is_null()) {
      ++only_b;
      CHECK(row["a_ns"].is_null());
      CHECK(row["b_ns"].is_int64());
    }
  }
  CHECK(only_b >= 3);
  for (simdjson::dom::element row : root["phases"].get_array()) CHECK(row["phase"].is_string());
  CHECK(root["alignment"]["aligned_share"].is_double());
  CHECK(root["explain"].get_array().size() >= 2);
}

TEST_CASE("diff: every real trace against its neighbour in the list: no crash, alignment said" * doctest::timeout(900)) {
  std::vector<std::filesystem::path> traces;
  for (const std::filesystem::path& p : real_traces())
    if (std::filesystem::file_size(p) < (8u << 20)) traces.push_back(p);
  STRATA_SKIP_UNLESS(traces.size() >= 2, "fewer than two real traces here");
  std::unique_ptr<Run> previous;
  for (const std::filesystem::path& p : traces) {
    CAPTURE(p.string());
    LoadResult r = load_trace(p.string());
    if (!r.model) continue;
    auto run = std::make_unique<Run>(Run{std::move(r.model), {}});
    run->annotation = annotate(*run->model);
    if (previous) {
      Diff d = diff_runs(*previous->model, previous->annotation, *run->model, run->annotation);
      const std::string text = diff_text(d);
      CHECK(text.find("aligned (") != std::string::npos);
      CHECK((d.same_model || !d.notes.empty()));
      CHECK(!diff_json(d).empty());
    }
    previous = std::move(run);
  }
}
