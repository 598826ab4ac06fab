// Iterations, phases, layers and backward mapping on real traces.
#include "helpers.h"
#include "core/text_format.h"

#include <algorithm>

using namespace strata;
using namespace strata::test;

namespace {

std::vector<std::string> phases_of(const Annotation& a, size_t iteration) {
  REQUIRE(iteration < a.iterations.size());
  return child_names(a.tree, a.iterations[iteration].node);
}

}  // namespace

TEST_CASE("resnet18 train (nn.Module events): iterations, phases, module layers, backward mapping") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  check_tree(a.tree);
  REQUIRE(a.iterations.size() == 2);
  CHECK(a.iteration_source == IterationSource::ProfilerStep);
  CHECK(a.iterations[0].name == "Iteration 2");
  CHECK(a.iterations[1].name == "Iteration 3");
  CHECK(phases_of(a, 0) == std::vector<std::string>{"Data loading", "Zero grad", "Forward", "Loss", "Backward",
                                                    "Optimizer step", "Other"});
  CHECK(a.layer_source == LayerSource::Module);
  for (const char* n : {"ResNet_0", "Sequential_0", "BasicBlock_0", "Conv2d_0", "BatchNorm2d_19", "Linear_0"})
    CHECK_MESSAGE(has_layer(a.tree, n), n);
  CHECK(a.backward_ops == 268);
  CHECK(a.backward_mapped_links == 144);  // 140 in layers, 4 in the loss
  CHECK(a.gpu_ops == 724);
  CHECK(a.gpu_ops_annotated == 724);
  // Backward layers mirror forward ones.
  size_t mirrored = 0;
  for (NodeId i = 0; i < a.tree.size(); ++i)
    if (a.tree.mirror[i] != kNoNode) {
      ++mirrored;
      CHECK(a.tree.phase[i] == PhaseKind::Backward);
      CHECK(a.tree.name_of(i) == a.tree.name_of(a.tree.mirror[i]));
    }
  CHECK(mirrored > 50);
  // A backward conv kernel's path names the forward layer.
  bool found = false;
  for (EventId e = 0; e < m->ev.size() && !found; ++e) {
    if (m->ev.category(e) != Cat::Kernel || a.node_of_event[e] == kNoNode) continue;
    std::string p = a.tree.path(a.node_of_event[e]);
    found = p.starts_with("Iteration 2/Backward/ResNet_0/Sequential_0/BasicBlock_0/Conv2d_1/");
  }
  CHECK(found);
  CHECK(a.analyses.batch_size == 16);
  CHECK(a.analyses.memory.present);
  REQUIRE(a.analyses.memory.peak_device());
  CHECK(a.analyses.memory.peak_device()->peak_allocated > 100 * 1024 * 1024);
}

TEST_CASE("transformer train: module layers and fwdbwd mapping") {
  auto m = load(torch2_trace("transformer-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  check_tree(a.tree);
  REQUIRE(a.iterations.size() == 2);
  CHECK(phases_of(a, 1) == std::vector<std::string>{"Data loading", "Zero grad", "Forward", "Loss", "Backward",
                                                    "Optimizer step"});
  for (const char* n : {"TinyEncoder_0", "TransformerEncoderLayer_1", "MultiheadAttention_0", "LayerNorm_3"})
    CHECK_MESSAGE(has_layer(a.tree, n), n);
  CHECK(a.backward_ops == 302);
  CHECK(a.backward_mapped_links == 248);
  CHECK(a.gpu_ops_annotated == a.gpu_ops);
  CHECK(a.analyses.tensor_core > 0);  // nvjet GEMMs
  CHECK(a.analyses.batch_size == 8);  // from the embedding's indices, not its table
}

TEST_CASE("resnet18 inference: forward only") {
  auto m = load(torch2_trace("resnet18-infer-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  check_tree(a.tree);
  REQUIRE(a.iterations.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(phases_of(a, i) == std::vector<std::string>{"Data loading", "Forward"});
  CHECK(a.backward_ops == 0);
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](auto& n) { return n.find("inference") != std::string::npos; }));
}

TEST_CASE("no ProfilerStep: iterations from the optimizer's markers") {
  auto m = load(torch2_trace("mlp-train-nosteps-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  check_tree(a.tree);
  CHECK(a.iteration_source == IterationSource::OptimizerStep);
  REQUIRE(a.iterations.size() == 5);
  for (size_t i = 0; i < 5; ++i)
    CHECK(phases_of(a, i) == std::vector<std::string>{"Zero grad", "Data loading", "Forward", "Loss", "Backward",
                                                      "Optimizer step"});
  CHECK(a.layer_source == LayerSource::Heuristic);
  CHECK(a.backward_ops == 80);
  CHECK(a.backward_mapped_links == 50);
}

TEST_CASE("hotline traces: one step, reverse-order backward mapping") {
  struct Case { const char* file; uint64_t bwd, order; };
  // Mapped by order: the forward's ops and the loss's (its nodes are the backward's first).
  const Case cases[] = {Case{"hotline-resnet50-rtx3090.pt.trace.json.gz", 339, 339},
                        Case{"hotline-transformer-rtx3090.pt.trace.json.gz", 1058, 1058},
                        Case{"hotline-gnn-rtx3090.pt.trace.json.gz", 213, 213}};
  for (Case c : cases) STRATA_SKIP_UNLESS(exists(shared_trace(c.file)), std::string("real trace not found: ") + c.file);
  for (Case c : cases) {
    std::string p = shared_trace(c.file);
    CAPTURE(c.file);
    auto m = load(p);
    Annotation a = annotate(*m);
    check_tree(a.tree);
    REQUIRE(a.iterations.size() == 1);
    CHECK(a.iterations[0].name == "Iteration 38");
    auto ph = phases_of(a, 0);
    // The loop's order: data, forward, loss, zero_grad, backward, optimizer (with tiny gaps between).
    std::vector<std::string> main;
    for (auto& s : ph)
      if (s != "Other") main.push_back(s);
    CHECK(main == std::vector<std::string>{"Data loading", "Forward", "Loss", "Zero grad", "Backward", "Optimizer step"});
    CHECK(a.backward_ops == c.bwd);
    CHECK(a.backward_mapped_order == c.order);
    CHECK(a.gpu_ops_annotated == a.gpu_ops);
  }
}

TEST_CASE("iteration counts on every shared trace") {
  struct Case { const char* file; size_t iterations; };
  const Case cases[] = {
      Case{"hta-resnet-v100-fwdbwd.pt.trace.json.gz", 5}, Case{"hta-nccl-a100-2ranks.pt.trace.json.gz", 3},
      Case{"hta-memory-v100-rank1.pt.trace.json.gz", 5}, Case{"hta-a100-8ranks.pt.trace.json.gz", 6},
      Case{"kineto-resnet50-v100-legacy2021.pt.trace.json.gz", 6},
      Case{"torch113-cpu-resnet18-autograd-legacy.json.gz", 3}, Case{"hta-alexnet-a100.pt.trace.json.gz", 1},
      Case{"hta-cpu-only-gloo.pt.trace.json.gz", 1}, Case{"hta-rocm-mi250.pt.trace.json.gz", 2},
      Case{"hta-triton-a100.pt.trace.json.gz", 1}, Case{"hta-event-sync-multistream-a100.pt.trace.json.gz", 1}};
  for (Case c : cases) STRATA_SKIP_UNLESS(exists(shared_trace(c.file)), std::string("real trace not found: ") + c.file);
  for (Case c : cases) {
    std::string p = shared_trace(c.file);
    CAPTURE(c.file);
    auto m = load(p);
    Annotation a = annotate(*m);
    check_tree(a.tree);
    CHECK(a.iterations.size() == c.iterations);
    CHECK(a.gpu_ops_annotated == a.gpu_ops);
    CHECK(!summary_text(*m, a).empty());
  }
}

TEST_CASE("batch size: fused embedding lookups take flat index lists and are skipped") {
  STRATA_REQUIRE_TRACE(p, "hta-a100-8ranks.pt.trace.json.gz");
  auto m = load(p);
  Annotation a = annotate(*m);
  // fbgemm's table lookup comes first with 96000 indices; the first linear takes [1024, 1705].
  CHECK(a.analyses.batch_size == 1024);
}

TEST_CASE("Strata's own recordings: NVTX iteration ranges are the iterations") {
  auto m = load(torch2_trace("../collector/mlp_5iter.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  check_tree(a.tree);
  CHECK(a.iteration_source == IterationSource::IterationRanges);
  REQUIRE(a.iterations.size() == 5);  // recorded with --iterations 5
  CHECK(phases_of(a, 2) == std::vector<std::string>{"Forward", "Backward", "Optimizer step"});
  // Its backward phase comes from the job's own "backward" range: no note says it has none.
  CHECK(std::none_of(a.notes.begin(), a.notes.end(), [](const std::string& n) { return n.find("no backward") != std::string::npos; }));
  auto cut = load(torch2_trace("../collector/mlp_attach_200ms.pt.trace.json.gz"));
  CHECK(annotate(*cut).iterations.size() == 90);
}

TEST_CASE("a recording of runtime calls and NVTX ranges only: the loop's thread is the one with iteration ranges") {
  // As the agent records a job whose loop thread launches less than a helper thread: no CPU
  // ops to count, so the thread whose ranges name iterations is the loop's.
  std::string json = R"({"traceEvents": [
)";
  auto add = [&json](const std::string& line) { json += line + ",\n"; };
  int corr = 1;
  auto launch = [&](int tid, int ts) {
    const std::string c = std::to_string(corr++), t = std::to_string(ts);
    add(R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": )" + std::to_string(tid) +
        R"(, "ts": )" + t + R"(, "dur": 4, "args": {"correlation": )" + c + "}}");
    add(R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + std::to_string(ts + 5) +
        R"(, "dur": 3, "args": {"correlation": )" + c + R"(, "stream": 7, "device": 0}})");
  };
  for (int i = 0; i < 3; ++i) {
    const int t0 = 1000 + i * 100;
    add(R"({"ph": "X", "cat": "user_annotation", "name": "iteration", "pid": 7, "tid": 1, "ts": )" + std::to_string(t0) +
        R"(, "dur": 60})");
    launch(1, t0 + 10);
    for (int k = 0; k < 4; ++k) launch(2, t0 + 20 + k * 10);  // the helper thread launches more
  }
  json += R"({"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "job"}}]})";
  LoadResult r = load_trace_bytes("agent-style.json", json);
  REQUIRE_MESSAGE(r.model, r.error());
  Annotation a = annotate(*r.model);
  check_tree(a.tree);
  CHECK(a.iteration_source == IterationSource::IterationRanges);
  CHECK(a.iterations.size() == 3);
}

TEST_CASE("summary: shares of the top GPU ops add up to at most 100%") {
  auto m = load(torch2_trace("../collector/vector_add.pt.trace.json.gz"));  // memcpy-heavy
  Annotation a = annotate(*m);
  const Analyses& r = a.analyses;
  Ns sum = 0;
  for (const NameStat& k : r.kernels) sum += k.total;
  CHECK(sum == r.gpu_op_total);
  CHECK(r.kernels.front().total <= r.gpu_op_total);
}

TEST_CASE("kineto 2021 format: markers written as ops still give phases") {
  STRATA_REQUIRE_TRACE(p, "kineto-resnet50-v100-legacy2021.pt.trace.json.gz");
  auto m = load(p);
  Annotation a = annotate(*m);
  // torch's record_function allocates (aten::zeros) just before Optimizer.step# opens: the step's.
  CHECK(phases_of(a, 1) == std::vector<std::string>{"Data loading", "Forward", "Loss", "Zero grad", "Backward",
                                                    "Optimizer step"});
  // By Sequence number: each node to the last outermost op with its number (the one that made it).
  CHECK(a.backward_mapped_links == 1068);
}

TEST_CASE("compiled graph: layers from the ops inside CompiledFunction") {
  STRATA_REQUIRE_TRACE(p, "hta-memory-v100-rank1.pt.trace.json.gz");
  auto m = load(p);
  Annotation a = annotate(*m);
  CHECK(a.layer_source == LayerSource::Heuristic);
  CHECK(has_layer(a.tree, "CompiledFunction"));
  CHECK(has_layer(a.tree, "Linear 1"));
  CHECK(a.analyses.memory.present);
  CHECK(a.analyses.communication > 0);  // NCCL all-reduce
}

TEST_CASE("noise reduction keeps the tree valid and smaller") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  const AnnotationTree& r = a.reduced;
  REQUIRE(r.size() > 0);
  CHECK(r.size() < a.tree.size());
  size_t groups = 0, runs = 0;
  for (NodeId i = 1; i < r.size(); ++i) {
    REQUIRE(r.parent[i] < i);
    CHECK(r.subtree_end[i] <= r.subtree_end[r.parent[i]]);
    CHECK(r.origin[i] < a.tree.size());
    if (r.kind[i] == NodeKind::Group) {
      CHECK(r.members[i] >= 2);
      groups += r.name_of(i).find("(top: ") != std::string_view::npos;
      runs += r.name_of(i).find("\u00d7") != std::string_view::npos;
    }
  }
  CHECK(groups > 0);
  CHECK(runs > 0);
  // Thresholds are configurable: no reduction at all gives back the same number of nodes.
  ReduceOptions none;
  none.tiny_share = 0;
  none.hoist = false;
  none.collapse_runs = false;
  CHECK(reduce_tree(a.tree, none).size() == a.tree.size());
}

TEST_CASE("cancel reaches every stage of loading and annotating, and nothing runs after it") {
  const std::string path = torch2_trace("resnet18-train-h100.pt.trace.json.gz");
  // Uncancelled, every stage is entered in order.
  std::vector<Stage> all;
  {
    Progress p;
    p.on_stage = [&](Stage s) {
      if (all.empty() || all.back() != s) all.push_back(s);
    };
    LoadResult r = load_trace(path, &p);
    REQUIRE(r.model);
    Annotation a = annotate(*r.model, {}, &p);
    CHECK_FALSE(a.status.is_cancelled());
  }
  REQUIRE(all.size() == size_t(Stage::Analyses));  // Reading .. Analyses
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i] == Stage(i + 1));
  // Cancelled as stage `at` begins: the load or the annotation says so, and no later stage starts.
  for (Stage at : all) {
    CAPTURE(stage_name(at));
    Progress p;
    Stage last = Stage::Starting;
    p.on_stage = [&](Stage s) {
      last = std::max(last, s);
      if (s == at) p.cancel = true;
    };
    LoadResult r = load_trace(path, &p);
    if (at <= Stage::Building) {
      CHECK_FALSE(r.model);
      CHECK(r.error().find("cancelled") != std::string::npos);
    } else {
      REQUIRE(r.model);
      Annotation a = annotate(*r.model, {}, &p);
      CHECK(a.status.is_cancelled());
    }
    CHECK(last == at);
  }
}

TEST_CASE("a measured range: GPU busy, ops, kernels and layers inside it, clipped to it") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  REQUIRE(a.iterations.size() == 2);
  const Iteration& it = a.iterations[1];
  RangeFigures r = range_figures(*m, a, it.end, it.begin);  // either order
  CHECK(r.begin == it.begin);
  CHECK(r.end == it.end);
  // GPU busy over an iteration's time is the analyses' busy within it.
  REQUIRE(r.utilization.size() == 1);
  CHECK(r.utilization[0].busy == a.analyses.iteration_gpu_busy[1]);
  CHECK(!r.kernels.empty());
  CHECK(!r.ops.empty());
  CHECK(!r.layers.empty());
  CHECK(r.kernels.front().total <= r.end - r.begin);  // one stream here: no more than the range
  for (const NameStat& o : r.ops) CHECK(o.total <= it.end - it.begin);
  // Half of it: everything clipped to the half.
  RangeFigures h = range_figures(*m, a, it.begin, it.begin + (it.end - it.begin) / 2);
  for (const NameStat& o : h.ops) CHECK(o.total <= (it.end - it.begin) / 2);
  if (!h.utilization.empty()) CHECK(h.utilization[0].busy <= r.utilization[0].busy);
  CHECK(range_json(r).find("\"kernels\"") != std::string::npos);
  CHECK(range_text(r).find("GPU 0 busy") != std::string::npos);
}

TEST_CASE("figures a person reads: bound rules, CPU op shares, communication exposed, sizes, thread ids") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  // The data-loading phase is bound by data loading, whatever the few GPU ops in it do.
  for (NodeId n = 0; n < a.tree.size(); ++n)
    if (a.tree.kind[n] == NodeKind::Phase && a.tree.phase[n] == PhaseKind::DataLoading)
      CHECK(node_work(*m, a, n).bound == Bound::DataLoading);
  // A CUDA call only hands work over: not bound by anything; a GPU op has no host-side parent.
  for (EventId e = 0; e < m->ev.size(); ++e)
    if (m->gpu_op_of(e) != kNoEvent) {
      WorkFigures w = event_work(*m, a, e);
      CHECK(w.bound == Bound::Unknown);
      CHECK(event_work(*m, a, m->gpu_op_of(e)).parent.empty());
      break;
    }
  // Top CPU ops carry their share of the window.
  REQUIRE(!a.analyses.cpu_ops.empty());
  CHECK(summary_json(*m, a).find("\"cpu_ops\":[{\"name\":") != std::string::npos);
  CHECK(a.analyses.cpu_ops.front().total > 0);
  CHECK(format_bytes(307232768.0) == "293.0 MiB");
  CHECK(format_bytes(2411724.0) == "2.3 MiB");
  CHECK(format_bytes(640) == "640 B");
  CHECK(shown_thread_id(-549452224) == 3745515072);
  CHECK(shown_thread_id(445) == 445);
}

TEST_CASE("communication: exposed time is part of it, and no more than the item's own") {
  STRATA_REQUIRE_TRACE(p, "hta-nccl-a100-2ranks.pt.trace.json.gz");
  auto m = load(p);
  Annotation a = annotate(*m);
  const auto& exposed = a.analyses.exposed_communication;
  REQUIRE(!exposed.empty());
  Ns total = 0;
  for (size_t i = 0; i < exposed.size(); ++i) {
    CHECK(exposed[i].first < exposed[i].second);
    if (i) CHECK(exposed[i - 1].second <= exposed[i].first);
    total += exposed[i].second - exposed[i].first;
  }
  CHECK(total <= a.analyses.communication + 1);
  for (const Iteration& it : a.iterations) {
    WorkFigures w = node_work(*m, a, it.node);
    CHECK(w.communication > 0);
    CHECK(w.comm_exposed <= w.communication);
  }
}

TEST_CASE("text tables: a column is as wide in characters as asked, UTF-8 counted by character") {
  CHECK(fit_column("Conv 3", 8) == "Conv 3  ");
  CHECK(fit_column("MLP 1: Linear \xE2\x86\x92 ReLU", 21) == "MLP 1: Linear \xE2\x86\x92 ReLU ");  // the arrow is one column
  CHECK(fit_column("Forward/layer1/conv1", 10) == "\xE2\x80\xA6" "er1/conv1");
  CHECK(fit_column("a\xE2\x86\x92" "bcdef", 4) == "\xE2\x80\xA6" "def");  // never cuts inside a character
  CHECK(fit_column("", 3) == "   ");
}
