// Backward attribution: backward ops map to the forward layer the trace links them to.
#include "helpers.h"

#include "core/annotate/accuracy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

// Every trace file under the real-trace folders (rank folders too: tests/data/traces and what
// only ../shared/traces has) and the torch2 set.
std::vector<std::string> all_traces() {
  std::vector<std::string> out;
  auto add = [&out](const std::filesystem::path& f) {
    const std::string p = f.string();
    if (p.ends_with(".json.gz") || p.ends_with(".trace.json")) out.push_back(p);
  };
  for (const auto& f : trace_folder_files(true)) add(f);
  std::error_code ec;
  if (std::filesystem::is_directory(STRATA_TORCH2_DIR, ec))
    for (const auto& e : std::filesystem::recursive_directory_iterator(STRATA_TORCH2_DIR, ec))
      if (e.is_regular_file()) add(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A corpus trace annotated without its truth ranges (the hid= and phase ranges).
Annotation annotate_without_truth(const std::string& file) {
  LoadResult full = load_trace(file);
  REQUIRE(full.model);
  LoadResult bare = load_trace_bytes("bare", strip_events(*full.model, kStripTruthRanges));
  REQUIRE(bare.model);
  return annotate(*bare.model);
}

double mapped_share(const Annotation& a) {
  return a.backward_ops ? double(a.backward_mapped_links + a.backward_mapped_order) / double(a.backward_ops) : 1.0;
}

// The leaf layer (no layer below it) holding the largest share of its backward phase's kernels,
// over the backward phases with at least 20 kernels.
struct Largest {
  NodeId layer = kNoNode;
  double share = 0, forward_share = -1;  // forward_share: its forward twin's share of its phase
};
Largest largest_backward_layer(const AnnotationTree& t) {
  Largest best;
  for (NodeId p = 0; p < t.size(); ++p) {
    if (t.kind[p] != NodeKind::Phase || t.phase[p] != PhaseKind::Backward || t.kernels[p] < 20) continue;
    for (NodeId l = p + 1; l < t.subtree_end[p]; ++l) {
      if (t.kind[l] != NodeKind::Layer) continue;
      bool leaf = true;
      for (NodeId q = l + 1; q < t.subtree_end[l] && leaf; ++q) leaf = t.kind[q] != NodeKind::Layer;
      double s = double(t.kernels[l]) / double(t.kernels[p]);
      if (leaf && s > best.share) best = {l, s, -1};
    }
  }
  if (best.layer != kNoNode && t.mirror[best.layer] != kNoNode) {
    NodeId f = t.mirror[best.layer], fp = t.ancestor(f, NodeKind::Phase);
    if (fp != kNoNode && t.kernels[fp]) best.forward_share = double(t.kernels[f]) / double(t.kernels[fp]);
  }
  return best;
}

// A trace built in the test: Chrome-trace events on process 1.
struct Json {
  std::string s = R"({"traceEvents": [)";
  void add(const std::string& e) { s += e + ",\n"; }
  void x(const char* cat, const std::string& name, int tid, int ts, int dur) {
    add(R"({"ph": "X", "cat": ")" + std::string(cat) + R"(", "name": ")" + name + R"(", "pid": 1, "tid": )" +
        std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "}");
  }
  // An SGD step from `ts` on the main thread: its range and its one foreach update.
  void optimizer_step(int ts) {
    x("user_annotation", "Optimizer.step#SGD.step", 1, ts, 100);
    x("cpu_op", "aten::_foreach_add_", 1, ts + 10, 50);
  }
  // A fwdbwd flow from the forward op starting at `fwd_ts` (tid 1) to the backward event at `bwd_ts` (tid 2).
  void fwdbwd(int id, int fwd_ts, int bwd_ts) {
    add(R"({"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": )" + std::to_string(id) + R"(, "pid": 1, "tid": 1, "ts": )" +
        std::to_string(fwd_ts) + "}");
    add(R"({"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "bp": "e", "id": )" + std::to_string(id) +
        R"(, "pid": 1, "tid": 2, "ts": )" + std::to_string(bwd_ts) + "}");
  }
  std::unique_ptr<TraceModel> load() {
    s += R"({"ph": "i", "name": "end", "pid": 1, "tid": 1, "ts": 0, "s": "t"}]})";
    LoadResult r = load_trace_bytes("backward.json", s);
    INFO(r.error());
    REQUIRE(r.model);
    return std::move(r.model);
  }
};

// The annotation path of the node an event went to, without the iteration.
std::string path_of(const Annotation& a, EventId e) {
  REQUIRE(e != kNoEvent);
  NodeId n = a.node_of_event[e];
  REQUIRE(n != kNoNode);
  std::string p = a.tree.path(n);
  return p.substr(p.find('/') + 1);
}

std::vector<EventId> events_named(const TraceModel& m, std::string_view name) {
  std::vector<EventId> out;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name) out.push_back(e);
  std::sort(out.begin(), out.end(), [&](EventId x, EventId y) { return m.ev.start[x] < m.ev.start[y]; });
  return out;
}

}  // namespace

TEST_CASE("backward ops map to forward layers on every trace with fwdbwd links or sequence numbers") {
  std::vector<std::string> traces = all_traces();
  STRATA_SKIP_UNLESS(!traces.empty(), "no real trace and no torch2 trace is here");
  size_t linked = 0;
  for (const std::string& p : traces) {
    LoadResult r = load_trace(p);
    if (!r.model || r.model->bwd_to_fwd.empty()) continue;
    ++linked;
    CAPTURE(p);
    Annotation a = annotate(*r.model);
    Largest big = largest_backward_layer(a.tree);
    char twin[32] = "none";
    if (big.forward_share >= 0) std::snprintf(twin, sizeof twin, "%.1f%%", 100 * big.forward_share);
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s: backward ops %llu, by links %llu, by order %llu (%llu no forward op), mapped %.1f%%; largest "
                  "backward layer %.1f%% of its phase's kernels (forward twin %s)",
                  std::filesystem::path(p).filename().string().c_str(), (unsigned long long)a.backward_ops,
                  (unsigned long long)a.backward_mapped_links, (unsigned long long)a.backward_mapped_order,
                  (unsigned long long)a.backward_no_forward, 100 * mapped_share(a), 100 * big.share, twin);
    MESSAGE(line);
    CHECK(a.backward_mapped_links + a.backward_mapped_order <= a.backward_ops);
    CHECK(a.backward_no_forward <= a.backward_mapped_order);
    CHECK(mapped_share(a) >= 0.95);
    // A backward layer holds most of its phase's kernels only where its forward twin is as big.
    if (big.share > 0.5) CHECK(big.forward_share > 0.25);
  }
  STRATA_SKIP_UNLESS(linked > 0, "no trace with fwdbwd links or sequence numbers is here");
}

// Model_0 holds Linear_0 then Linear_1 (an aten::linear each, its aten::addmm linked by a
// fwdbwd flow to its AddmmBackward0), then the loss. The backward runs Linear_0's first: the
// reverse order alone would give it to Linear_1. An AccumulateGrad follows each.
TEST_CASE("hand-made trace: fwdbwd flows map each backward op to its forward layer's twin") {
  Json j;
  j.x("user_annotation", "ProfilerStep#1", 1, 0, 1000);
  j.x("python_function", "nn.Module: Model_0", 1, 10, 290);
  j.x("python_function", "nn.Module: Linear_0", 1, 20, 100);
  j.x("cpu_op", "aten::linear", 1, 30, 80);
  j.x("cpu_op", "aten::t", 1, 32, 5);
  j.x("cpu_op", "aten::addmm", 1, 40, 60);
  j.x("python_function", "nn.Module: Linear_1", 1, 130, 100);
  j.x("cpu_op", "aten::linear", 1, 140, 80);
  j.x("cpu_op", "aten::t", 1, 142, 5);
  j.x("cpu_op", "aten::addmm", 1, 150, 60);
  j.x("cpu_op", "aten::mse_loss", 1, 320, 40);
  j.x("cpu_op", "aten::ones_like", 1, 380, 10);
  // The autograd thread.
  j.x("cpu_op", "autograd::engine::evaluate_function: MseLossBackward0", 2, 400, 30);
  j.x("cpu_op", "MseLossBackward0", 2, 401, 28);
  j.x("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 2, 450, 50);
  j.x("cpu_op", "AddmmBackward0", 2, 451, 48);
  j.x("cpu_op", "aten::mm", 2, 455, 20);
  j.x("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 2, 505, 10);
  j.x("cpu_op", "torch::autograd::AccumulateGrad", 2, 506, 8);
  j.x("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 2, 520, 50);
  j.x("cpu_op", "AddmmBackward0", 2, 521, 48);
  j.x("cpu_op", "aten::mm", 2, 525, 20);
  j.x("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 2, 575, 10);
  j.x("cpu_op", "torch::autograd::AccumulateGrad", 2, 576, 8);
  j.optimizer_step(700);
  j.fwdbwd(1, 40, 451);   // Linear_0's addmm → the first AddmmBackward0
  j.fwdbwd(2, 150, 521);  // Linear_1's addmm → the second
  j.fwdbwd(3, 320, 401);  // the loss
  auto m = j.load();
  REQUIRE(m->bwd_to_fwd.size() == 3);
  Annotation a = annotate(*m);
  check_tree(a.tree);
  REQUIRE(a.iterations.size() == 1);
  CHECK(a.layer_source == LayerSource::Module);

  auto addmm = events_named(*m, "autograd::engine::evaluate_function: AddmmBackward0");
  auto acc = events_named(*m, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
  auto loss = events_named(*m, "autograd::engine::evaluate_function: MseLossBackward0");
  REQUIRE(addmm.size() == 2);
  REQUIRE(acc.size() == 2);
  REQUIRE(loss.size() == 1);
  CHECK(path_of(a, addmm[0]) == "Backward/Model_0/Linear_0/autograd::engine::evaluate_function: AddmmBackward0");
  CHECK(path_of(a, addmm[1]) == "Backward/Model_0/Linear_1/autograd::engine::evaluate_function: AddmmBackward0");
  // AccumulateGrad (no forward op) follows the backward op right before it on its thread.
  CHECK(path_of(a, acc[0]) == "Backward/Model_0/Linear_0/autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
  CHECK(path_of(a, acc[1]) == "Backward/Model_0/Linear_1/autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
  CHECK(path_of(a, loss[0]).ends_with("/autograd::engine::evaluate_function: MseLossBackward0"));
  CHECK(path_of(a, loss[0]).starts_with("Backward/Loss/"));

  // Each backward layer's twin is the forward layer of the same name.
  const AnnotationTree& t = a.tree;
  size_t twins = 0;
  for (NodeId i = 0; i < t.size(); ++i) {
    if (t.kind[i] != NodeKind::Layer || t.phase[i] != PhaseKind::Backward || t.mirror[i] == kNoNode) continue;
    ++twins;
    CHECK(t.name_of(t.mirror[i]) == t.name_of(i));
    CHECK(t.phase[t.mirror[i]] != PhaseKind::Backward);
  }
  CHECK(twins == 4);  // Model_0, Linear_0, Linear_1, the loss

  CHECK(a.backward_ops == 5);
  CHECK(a.backward_mapped_links == 3);
  CHECK(a.backward_mapped_order == 2);
  CHECK(a.backward_no_forward == 2);
  std::string json = summary_json(*m, a);
  CHECK(json.find(R"("backward":{"ops":5,"mapped_by_links":3,"mapped_by_order":2,"no_forward_op":2,"mapped_share":1)") !=
        std::string::npos);
  CHECK(json.find(R"("unmapped":0})") != std::string::npos);
}

// DistributedDataParallel.forward, a range around the whole model, holds its ops directly:
// inference groups them inside it (and says so), and the backward maps to those layers; its
// buffer broadcast with the packing around it is a communication layer of its own. The
// reducer's bucket copies after the backward's last node (and the views they leave beside
// them) sync the whole model's gradients: the phase's own, no layer's and no backward op.
TEST_CASE("hand-made trace: layers inferred inside a range around the whole model, its buffer sync one; gradient sync in the phase") {
  Json j;
  j.x("user_annotation", "ProfilerStep#1", 1, 0, 2000);
  j.x("user_annotation", "## forward ##", 1, 5, 610);
  j.x("user_annotation", "DistributedDataParallel.forward", 1, 10, 600);
  // DDP's buffer broadcast first: pack, broadcast, unpack, a copy per buffer.
  const char* buffer_sync[] = {"aten::flatten_dense_tensors", "c10d::broadcast_", "record_param_comms", "aten::unflatten_dense_tensors",
                               "aten::copy_", "aten::copy_"};
  for (int k = 0; k < 6; ++k) j.x("cpu_op", buffer_sync[k], 1, 11 + k, 1);
  const char* ops[] = {"aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::conv2d", "aten::batch_norm",
                       "aten::relu_", "aten::adaptive_avg_pool2d", "aten::flatten", "aten::linear"};
  for (int k = 0; k < 9; ++k) j.x("cpu_op", ops[k], 1, 20 + 60 * k, 40);
  j.x("cpu_op", "aten::cross_entropy_loss", 1, 640, 30);
  const char* nodes[] = {"NllLossBackward0", "AddmmBackward0",  "ViewBackward0",           "MeanBackward1", "ReluBackward0",
                         "NativeBatchNormBackward0", "ConvolutionBackward0", "ReluBackward0", "NativeBatchNormBackward0",
                         "ConvolutionBackward0"};
  for (int k = 0; k < 10; ++k) j.x("cpu_op", std::string("autograd::engine::evaluate_function: ") + nodes[k], 2, 700 + 15 * k, 10);
  j.x("cpu_op", "torch.distributed.ddp.reducer::copy_bucket_to_grad", 2, 900, 10);
  j.x("cpu_op", "aten::as_strided", 2, 910, 0);
  j.x("cpu_op", "torch.distributed.ddp.reducer::copy_bucket_to_grad", 2, 912, 10);
  j.optimizer_step(1000);
  auto m = j.load();
  Annotation a = annotate(*m);
  check_tree(a.tree);
  CHECK(a.layer_source == LayerSource::UserAnnotation);
  CHECK(a.ranges_with_inferred_layers == 1);
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) { return n.find("range around the whole model") != std::string::npos; }));
  for (EventId e : events_named(*m, "aten::conv2d")) {
    const std::string p = path_of(a, e);
    CHECK(p.starts_with("Forward/DistributedDataParallel.forward/"));
    CHECK(p.find("Conv") < p.rfind("/aten::conv2d"));  // an inferred layer between the range and the op
  }
  for (const char* op : buffer_sync)
    for (EventId e : events_named(*m, op))
      CHECK(path_of(a, e) == std::string("Forward/DistributedDataParallel.forward/Communication: broadcast/") + op);
  const EventId first_conv_node = events_named(*m, "autograd::engine::evaluate_function: ConvolutionBackward0").back();
  const std::string conv_node = path_of(a, first_conv_node);
  CHECK(conv_node.starts_with("Backward/DistributedDataParallel.forward/"));
  CHECK(conv_node.find("Conv") < conv_node.rfind("/autograd::"));
  for (const char* sync : {"torch.distributed.ddp.reducer::copy_bucket_to_grad", "aten::as_strided"})
    for (EventId e : events_named(*m, sync)) CHECK(path_of(a, e) == std::string("Backward/") + sync);
  CHECK(a.backward_ops == 10);

  // A range around a part of the model holding its weight ops is the program's own grouping
  // of them: kept as it is, nothing inferred inside.
  Json k;
  k.x("user_annotation", "ProfilerStep#1", 1, 0, 2000);
  for (int i = 0; i < 9; ++i) k.x("cpu_op", ops[i], 1, 20 + 60 * i, 40);
  k.x("user_annotation", "## dense ##", 1, 555, 150);
  k.x("cpu_op", "aten::linear", 1, 560, 40);
  k.x("cpu_op", "aten::relu", 1, 610, 20);
  k.x("cpu_op", "aten::linear", 1, 640, 40);
  k.x("cpu_op", "aten::sigmoid", 1, 690, 10);
  k.x("cpu_op", "aten::binary_cross_entropy", 1, 720, 30);
  for (int i = 0; i < 4; ++i) k.x("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 2, 800 + 15 * i, 10);
  k.optimizer_step(1000);
  auto n = k.load();
  Annotation b = annotate(*n);
  check_tree(b.tree);
  CHECK(b.ranges_with_inferred_layers == 0);
  const std::vector<EventId> linears = events_named(*n, "aten::linear");  // the model's own, then the range's two
  REQUIRE(linears.size() == 3);
  CHECK(path_of(b, linears[0]) != "Forward/## dense ##/aten::linear");
  CHECK(path_of(b, linears[1]) == "Forward/## dense ##/aten::linear");
  CHECK(path_of(b, linears[2]) == "Forward/## dense ##/aten::linear");
}

// Without links the backward ops are matched to forward ops in reverse order, and an
// AccumulateGrad still follows the op before it.
TEST_CASE("hand-made trace without links: reverse op order, AccumulateGrad after its op") {
  Json j;
  j.x("user_annotation", "ProfilerStep#1", 1, 0, 1000);
  j.x("python_function", "nn.Module: Model_0", 1, 10, 290);
  j.x("python_function", "nn.Module: Conv2d_0", 1, 20, 100);
  j.x("cpu_op", "aten::conv2d", 1, 30, 80);
  j.x("python_function", "nn.Module: ReLU_0", 1, 130, 100);
  j.x("cpu_op", "aten::relu", 1, 140, 80);
  j.x("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", 2, 450, 50);
  j.x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", 2, 520, 50);
  j.x("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 2, 575, 10);
  j.optimizer_step(700);
  auto m = j.load();
  REQUIRE(m->bwd_to_fwd.empty());
  Annotation a = annotate(*m);
  check_tree(a.tree);
  CHECK(path_of(a, events_named(*m, "autograd::engine::evaluate_function: ReluBackward0").at(0)) ==
        "Backward/Model_0/ReLU_0/autograd::engine::evaluate_function: ReluBackward0");
  CHECK(path_of(a, events_named(*m, "autograd::engine::evaluate_function: ConvolutionBackward0").at(0)) ==
        "Backward/Model_0/Conv2d_0/autograd::engine::evaluate_function: ConvolutionBackward0");
  CHECK(path_of(a, events_named(*m, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad").at(0)) ==
        "Backward/Model_0/Conv2d_0/autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
  CHECK(a.backward_ops == 3);
  CHECK(a.backward_mapped_links == 0);
  CHECK(a.backward_mapped_order == 3);
  CHECK(a.backward_no_forward == 1);
}

// The clock's rounding can leave a node's function beside its evaluate_function (starting at
// its end, lasting nothing): it is that node again, and matching by order keeps its place
// (else it takes the next forward op of its kind, a norm's counter, and every node after it
// slips onto the op before its own).
TEST_CASE("hand-made trace without links: a node's function left beside its evaluate_function takes no forward op") {
  Json j;
  j.x("user_annotation", "ProfilerStep#1", 1, 0, 1000);
  j.x("python_function", "nn.Module: Model_0", 1, 10, 390);
  j.x("python_function", "nn.Module: Conv2d_0", 1, 20, 60);
  j.x("cpu_op", "aten::conv2d", 1, 30, 40);
  j.x("python_function", "nn.Module: BatchNorm2d_0", 1, 90, 80);
  j.x("cpu_op", "aten::add_", 1, 100, 10);
  j.x("cpu_op", "aten::batch_norm", 1, 120, 40);
  j.x("python_function", "nn.Module: Conv2d_1", 1, 180, 60);
  j.x("cpu_op", "aten::conv2d", 1, 190, 40);
  j.x("cpu_op", "aten::add", 1, 260, 20);
  j.x("cpu_op", "autograd::engine::evaluate_function: AddBackward0", 2, 450, 20);
  j.x("cpu_op", "AddBackward0", 2, 470, 0);
  j.x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", 2, 480, 30);
  j.x("cpu_op", "autograd::engine::evaluate_function: NativeBatchNormBackward0", 2, 520, 30);
  j.x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", 2, 560, 30);
  j.optimizer_step(700);
  auto m = j.load();
  REQUIRE(m->bwd_to_fwd.empty());
  Annotation a = annotate(*m);
  check_tree(a.tree);
  const auto convs = events_named(*m, "autograd::engine::evaluate_function: ConvolutionBackward0");
  REQUIRE(convs.size() == 2);
  CHECK(path_of(a, convs[0]) == "Backward/Model_0/Conv2d_1/autograd::engine::evaluate_function: ConvolutionBackward0");
  CHECK(path_of(a, events_named(*m, "autograd::engine::evaluate_function: NativeBatchNormBackward0").at(0)) ==
        "Backward/Model_0/BatchNorm2d_0/autograd::engine::evaluate_function: NativeBatchNormBackward0");
  CHECK(path_of(a, convs[1]) == "Backward/Model_0/Conv2d_0/autograd::engine::evaluate_function: ConvolutionBackward0");
}

// An LSTM on the CPU runs its time steps as ops of their own inside aten::lstm (a linear, the
// gates' sigmoid and tanh, their products per step): its backward is hundreds of nodes, all
// the LSTM's, matched to it by reverse order, not left with the op before them. And a node of
// an op another runs inside (the head's view) does not skip the weight ops before it to the
// embedding that runs one too (the tagger's ReshapeAliasBackward0).
TEST_CASE("reverse-order mapping: an RNN's backward nodes per time step are the RNN's") {
  for (const char* model : {"lstm_lm", "bilstm_tagger"}) {
    const std::string file = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu/" + model + ".json.gz";
    STRATA_SKIP_UNLESS(std::filesystem::exists(file), "tests/data/corpus-cpu is not here");
    CAPTURE(model);
    const Annotation a = annotate_without_truth(file);
    CHECK(a.backward_mapped_links == 0);
    CHECK(mapped_share(a) >= 0.9);
    // The backward phase's costliest layer is the LSTM's twin.
    const AnnotationTree& t = a.tree;
    NodeId top = kNoNode;
    for (NodeId i = 0; i < t.size(); ++i)
      if (t.kind[i] == NodeKind::Layer && t.phase[i] == PhaseKind::Backward && t.first_child(i) != kNoNode &&
          t.kind[t.first_child(i)] == NodeKind::Op && (top == kNoNode || t.duration(i) > t.duration(top)))
        top = i;
    REQUIRE(top != kNoNode);
    CHECK(std::string(t.name_of(top)).starts_with("LSTM"));
  }
}

// A composed loss (label smoothing, a focal term, a VAE's ELBO) makes many autograd nodes, the
// backward's first: matched to the loss's ops in reverse order, they are the loss's ("Loss" in
// the backward), and the forward's nodes after them keep their place.
TEST_CASE("reverse-order mapping: a composed loss's backward nodes are the loss's") {
  const std::string dir = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-objectives";
  STRATA_SKIP_UNLESS(std::filesystem::exists(dir), "tests/data/corpus-cpu-objectives is not here");
  for (const char* model : {"focal_detector", "vae_elbo", "lm_label_smoothing", "bpr_mf", "uncertainty_multitask"}) {
    CAPTURE(model);
    const Annotation a = annotate_without_truth(dir + "/" + model + ".json.gz");
    CHECK(a.backward_mapped_links == 0);
    CHECK(mapped_share(a) >= 0.95);
    // The backward's loss layer holds the loss's nodes: more than its library op's one.
    const AnnotationTree& t = a.tree;
    size_t loss_ops = 0;
    for (NodeId i = 0; i < t.size(); ++i)
      if (t.kind[i] == NodeKind::Layer && t.phase[i] == PhaseKind::Backward && t.name_of(i) == "Loss")
        for (NodeId k = t.first_child(i); k != kNoNode; k = t.next_sibling(k)) loss_ops += t.kind[k] == NodeKind::Op;
    CHECK(loss_ops >= 2 * a.iterations.size());
  }
}

// Stripping a trace's links renames their keys in place: the same events, at the same ids,
// and no backward op mapped by links.
TEST_CASE("strip_events(kStripLinks): the same events without their links") {
  const std::string file = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-backward/lstm_lm.json.gz";
  STRATA_SKIP_UNLESS(std::filesystem::exists(file), "tests/data/corpus-cpu-backward is not here");
  LoadResult full = load_trace(file);
  REQUIRE(full.model);
  REQUIRE(!full.model->bwd_to_fwd.empty());
  LoadResult unlinked = load_trace_bytes("unlinked", strip_events(*full.model, kStripLinks));
  REQUIRE(unlinked.model);
  CHECK(unlinked.model->bwd_to_fwd.empty());
  REQUIRE(unlinked.model->ev.size() == full.model->ev.size());
  for (EventId e = 0; e < full.model->ev.size(); e += 97) CHECK(unlinked.model->name_of(e) == full.model->name_of(e));
  const Annotation a = annotate(*unlinked.model);
  CHECK(a.backward_mapped_links == 0);
  CHECK(a.backward_mapped_order > 0);
}

// The reverse op order against the truth: the corpus's traces keep the sequence numbers that
// tie each backward node to its forward op. Annotated with them and with them stripped, the
// backward ops land under the same forward layers: attention's interleaved q, k and v
// branches, a CPU GRU or LSTM cell's steps (a node per op it runs), einsum's views and bmm,
// composed losses. Tuned models only (the held-out ones are the bench's, in aggregate).
TEST_CASE("reverse-order mapping agrees with the sequence numbers on the tuned models") {
  const std::string dir = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-backward";
  STRATA_SKIP_UNLESS(std::filesystem::exists(dir + "/manifest.json"), "tests/data/corpus-cpu-backward is not here");
  size_t models = 0;
  for (const char* model : {"resnet18", "encoder_prenorm", "lstm_lm", "swin_t", "dlrm", "llama_tiny", "lstm_attn_seq2seq",
                            "maxvit_small", "gru_bahdanau", "bart_tiny", "mixtral_tiny", "deepspeech2", "tacotron_like",
                            "qwen2_hf", "pyg_gat", "focal_detector", "vae_elbo"}) {
    CAPTURE(model);
    LoadResult full = load_trace(dir + "/" + model + ".json.gz");
    REQUIRE(full.model);
    const unsigned bare = kStripTruthRanges | kStripModules | kStripStacks;
    LoadResult linked = load_trace_bytes("linked", strip_events(*full.model, bare));
    LoadResult unlinked = load_trace_bytes("unlinked", strip_events(*full.model, bare | kStripLinks));
    REQUIRE(linked.model);
    REQUIRE(unlinked.model);
    const Annotation with = annotate(*linked.model), without = annotate(*unlinked.model);
    CHECK(with.backward_mapped_links > 0);
    CHECK(without.backward_mapped_links == 0);
    const BackwardAgreement agree = backward_agreement(*linked.model, with, without);
    CHECK(agree.compared >= with.backward_mapped_links / 2);
    CHECK(agree.share() >= 0.9);
    ++models;
  }
  CHECK(models == 17);
}
