// Where one phase ends and the next begins when only the ops say it: the model's last op
// against the loss's own, loss.backward()'s seed, and an op that only looks like a graph.
// Each case is a small model traced with its truth (model_trace.h) and annotated bare.
#include "model_trace.h"

#include <filesystem>
#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

// The phase of each event of that name in the bare trace, in time order.
std::vector<PhaseKind> phases_of_op(const BareRun& r, std::string_view name) {
  const TraceModel& m = *r.bare.model;
  const Annotation& a = r.annotation;
  std::vector<PhaseKind> out;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (m.name_of(e) != name) continue;
    const NodeId n = e < a.node_of_event.size() ? a.node_of_event[e] : kNoNode;
    out.push_back(n == kNoNode ? PhaseKind::Other : a.tree.phase[n]);
  }
  return out;
}

Mod head_with(Mod last) {
  Mod root = model({conv(), bn(), relu_module()});
  root.items.push_back(std::move(last));
  return root;
}

}  // namespace

TEST_CASE("phases: a loss's reshapes or broadcast of the prediction and the target are the loss, the model's own last op is not") {
  SUBCASE("a language model's logits.view(-1, V) and y.view(-1) into the loss") {
    // Also where rounded timestamps leave a reshape's _reshape_alias beside it: a view too.
    for (const std::vector<const char*>& loss :
         {std::vector<const char*>{"aten::reshape", "aten::reshape", "aten::cross_entropy_loss"},
          {"aten::reshape", "aten::_reshape_alias", "aten::reshape", "aten::_reshape_alias", "aten::cross_entropy_loss"}}) {
      BareRun r = bare_run(head_with(leaf("Linear", {"aten::linear"})), {loss});
      CHECK(phases_of_op(r, "aten::reshape") == std::vector<PhaseKind>(4, PhaseKind::Loss));
      CHECK(phases_of_op(r, "aten::cross_entropy_loss") == std::vector<PhaseKind>(2, PhaseKind::Loss));
    }
  }
  SUBCASE("the model's last squeeze stays its own where rounding left children beside it and the linear before") {
    // .squeeze(-1) after the head: aten::linear's resolve_conj and squeeze's as_strided end at
    // their parents' microsecond and stand beside them; they are no second reshape.
    Mod head = head_with(Mod{"Linear", {op("aten::linear"), rounded_child("aten::resolve_conj")}, nullptr});
    head.items.push_back(op("aten::squeeze"));
    head.items.push_back(rounded_child("aten::as_strided"));
    BareRun r = bare_run(head, {{"aten::binary_cross_entropy_with_logits"}});
    CHECK(phases_of_op(r, "aten::squeeze") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    CHECK(phases_of_op(r, "aten::binary_cross_entropy_with_logits") == std::vector<PhaseKind>(2, PhaseKind::Loss));
  }
  SUBCASE("F.mse_loss broadcasting the prediction to the target first") {
    BareRun r = bare_run(head_with(leaf("Linear", {"aten::linear"})), {{"aten::broadcast_tensors", "aten::mse_loss"}});
    CHECK(phases_of_op(r, "aten::broadcast_tensors") == std::vector<PhaseKind>(2, PhaseKind::Loss));
    for (PhaseKind k : phases_of_op(r, "aten::linear")) CHECK(k == PhaseKind::Forward);
  }
  SUBCASE("CTC's lengths made by torch.full and the transposed log-probabilities are the loss's inputs") {
    // Also where rounded timestamps leave a factory's fill_ after it: that does not end the search.
    for (const std::vector<const char*>& loss : {std::vector<const char*>{"aten::transpose", "aten::full", "aten::full", "aten::ctc_loss"},
                                                 {"aten::transpose", "aten::full", "aten::full", "aten::fill_", "aten::ctc_loss"}}) {
      BareRun r = bare_run(head_with(leaf("LogSoftmax", {"aten::log_softmax"})), {loss});
      CHECK(phases_of_op(r, "aten::transpose") == std::vector<PhaseKind>(2, PhaseKind::Loss));
      CHECK(phases_of_op(r, "aten::full") == std::vector<PhaseKind>(4, PhaseKind::Loss));
      CHECK(phases_of_op(r, "aten::log_softmax") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    }
  }
  SUBCASE("a GAN's target made by ones_like is the loss's") {
    BareRun r = bare_run(head_with(leaf("Linear", {"aten::linear"})), {{"aten::ones_like", "aten::binary_cross_entropy_with_logits"}});
    CHECK(phases_of_op(r, "aten::ones_like") == std::vector<PhaseKind>(2, PhaseKind::Loss));
    for (PhaseKind k : phases_of_op(r, "aten::linear")) CHECK(k == PhaseKind::Forward);
  }
  SUBCASE("a target's encoding after the model's last weight op starts the loss, what computes before it stays the model's") {
    // A segmentation's Dice + cross-entropy on labels one-hot; a contrastive loss masking its
    // similarities' diagonal with an identity.
    for (const char* encoding : {"aten::one_hot", "aten::eye"}) {
      BareRun r = bare_run(head_with(leaf("Softmax", {"aten::softmax"})),
                           {{encoding, "aten::permute", "aten::mul", "aten::sum", "aten::rsub", "aten::cross_entropy_loss"}});
      CHECK(phases_of_op(r, encoding) == std::vector<PhaseKind>(2, PhaseKind::Loss));
      for (const char* op : {"aten::permute", "aten::mul", "aten::sum", "aten::rsub"})
        CHECK(phases_of_op(r, op) == std::vector<PhaseKind>(2, PhaseKind::Loss));
      CHECK(phases_of_op(r, "aten::softmax") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    }
    // A focal loss preparing its target first: a mask of the valid labels, zeros to scatter
    // into, the labels it picks; the model's output reshape before them stays its own.
    Mod head = head_with(leaf("Conv2d", {"aten::conv2d"}));
    head.items.push_back(op("aten::permute"));
    head.items.push_back(op("aten::reshape"));
    BareRun focal = bare_run(head, {{"aten::ge", "aten::zeros_like", "aten::index", "aten::one_hot", "aten::index_put_", "aten::sigmoid",
                                     "aten::binary_cross_entropy_with_logits"}});
    for (const char* op : {"aten::ge", "aten::zeros_like", "aten::index", "aten::one_hot", "aten::sigmoid"})
      CHECK(phases_of_op(focal, op) == std::vector<PhaseKind>(2, PhaseKind::Loss));
    CHECK(phases_of_op(focal, "aten::reshape") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    // Before the model's last weight op, one-hot is the model's (a router's expert choice).
    Mod router{"Router", {op("aten::linear"), op("aten::argmax"), op("aten::one_hot")}, nullptr};
    BareRun r = bare_run(Mod{"MoE", {router, leaf("Linear", {"aten::linear"}), op("aten::mul")}, nullptr},
                         {{"aten::sum", "aten::cross_entropy_loss"}});
    CHECK(phases_of_op(r, "aten::one_hot") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    CHECK(phases_of_op(r, "aten::mul") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  }
  SUBCASE("one reshape before the loss is the model's output (a squeeze head)") {
    BareRun r = bare_run(head_with(op("aten::squeeze")), {{"aten::binary_cross_entropy_with_logits"}});
    CHECK(phases_of_op(r, "aten::squeeze") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  }
  SUBCASE("an op that computes (a sigmoid output) ends the model") {
    BareRun r = bare_run(head_with(leaf("Sigmoid", {"aten::sigmoid"})), {{"aten::mse_loss"}});
    CHECK(phases_of_op(r, "aten::sigmoid") == std::vector<PhaseKind>(2, PhaseKind::Forward));
    CHECK(phases_of_op(r, "aten::mse_loss") == std::vector<PhaseKind>(2, PhaseKind::Loss));
  }
}

TEST_CASE("phases: loss.backward()'s seed opens the backward, with its fill_ that rounding left after it") {
  StepOps ops;
  ops.seed = true;
  BareRun r = bare_run(model({conv(), bn(), relu_module()}), ops);
  CHECK(phases_of_op(r, "aten::ones_like") == std::vector<PhaseKind>(2, PhaseKind::Backward));
  CHECK(phases_of_op(r, "aten::fill_") == std::vector<PhaseKind>(2, PhaseKind::Backward));
}

TEST_CASE("inferred layers: an op whose child ops only reshape (aten::max's squeeze_) is one op, not a compiled graph") {
  const std::vector<const char*> views = {"aten::unsqueeze_", "aten::as_strided_", "aten::unsqueeze_", "aten::as_strided_",
                                          "aten::squeeze_",   "aten::as_strided_", "aten::squeeze_",   "aten::as_strided_"};
  Mod root{"TextCNN", {leaf("Embedding", {"aten::embedding"}), op("aten::transpose")}, nullptr};
  for (int k = 0; k < 3; ++k) {
    root.items.push_back(leaf("Conv1d", {"aten::conv1d"}));
    root.items.push_back(op("aten::relu"));
    root.items.push_back(op("aten::max", views));
  }
  root.items.push_back(op("aten::cat"));
  root.items.push_back(leaf("Linear", {"aten::linear"}));
  BareRun r = bare_run(root);
  CHECK_FALSE(has_layer(r.annotation.tree, "aten::max"));
  CHECK(has_layer(r.annotation.tree, "Model"));  // the forward's ops outside its units are the root module's
  for (PhaseKind p : phases_of_op(r, "aten::conv1d")) CHECK(p == PhaseKind::Forward);
}

TEST_CASE("phases: a view of the batch right before the model's first op is the forward's, not data loading") {
  // A speech front end: x.unsqueeze(1), then its convolutions.
  Mod subsample{"Conv2dSubsampling", {op("aten::unsqueeze"), conv(), relu_module(), conv(), relu_module()}, nullptr};
  Mod root = model({});
  root.items.insert(root.items.begin(), subsample);
  BareRun r = bare_run(root);
  CHECK(phases_of_op(r, "aten::unsqueeze") == std::vector<PhaseKind>(2, PhaseKind::Forward));
}

TEST_CASE("phases: a column of the whole batch (x[:, i]) taken first is the forward's; picking the batch (data[i]) is data loading") {
  // A recommender looking up each field's ids: sparse[:, i] is a full slice, then a select.
  Mod root{"Recommender", {}, nullptr};
  for (int f = 0; f < 3; ++f)
    for (Mod m : {op("aten::slice"), op("aten::select"), leaf("Embedding", {"aten::embedding"})}) root.items.push_back(m);
  for (Mod m : {op("aten::cat"), leaf("Linear", {"aten::linear"})}) root.items.push_back(m);
  BareRun r = bare_run(root);
  for (PhaseKind p : phases_of_op(r, "aten::select")) CHECK(p == PhaseKind::Forward);
  for (PhaseKind p : phases_of_op(r, "aten::slice")) CHECK(p == PhaseKind::Forward);
  // The same with the as_strided each view runs inside left beside it by the clock's rounding.
  Mod rounded{"Recommender", {}, nullptr};
  for (int f = 0; f < 3; ++f)
    for (Mod m : {op("aten::slice"), rounded_child("aten::as_strided"), op("aten::select"), rounded_child("aten::as_strided"),
                  leaf("Embedding", {"aten::embedding"})})
      rounded.items.push_back(m);
  for (Mod m : {op("aten::cat"), leaf("Linear", {"aten::linear"})}) rounded.items.push_back(m);
  BareRun w = bare_run(rounded);
  for (const char* o : {"aten::slice", "aten::as_strided", "aten::select"})
    for (PhaseKind p : phases_of_op(w, o)) CHECK(p == PhaseKind::Forward);
  // The batch picked out of the data before the model: a lone select.
  Mod picked = model({});
  picked.items.insert(picked.items.begin(), op("aten::select"));
  BareRun q = bare_run(picked);
  CHECK(phases_of_op(q, "aten::select") == std::vector<PhaseKind>(2, PhaseKind::DataLoading));
}

TEST_CASE("phases: columns of the whole batch (x[:, a:b]) and their cast, on a trace with no device, are the forward's") {
  // DeepCTR's input: X[:, start:end].long() per field (a full slice, a slice, a cast), then the
  // field's embedding.
  Mod root{"PNN", {}, nullptr};
  for (int f = 0; f < 3; ++f)
    for (Mod m : {op("aten::slice"), op("aten::slice"), op("aten::to", {"aten::_to_copy"}), leaf("Embedding", {"aten::embedding"})})
      root.items.push_back(m);
  for (Mod m : {op("aten::cat"), leaf("Linear", {"aten::linear"})}) root.items.push_back(m);
  BareRun r = bare_run(root);
  for (const char* o : {"aten::slice", "aten::to"})
    for (PhaseKind p : phases_of_op(r, o)) CHECK(p == PhaseKind::Forward);
  // A batch picked out of the data (one slice) and cast before the model stays data loading.
  Mod picked = model({});
  picked.items.insert(picked.items.begin(), op("aten::slice"));
  BareRun q = bare_run(picked);
  CHECK(phases_of_op(q, "aten::slice") == std::vector<PhaseKind>(2, PhaseKind::DataLoading));
}

TEST_CASE("phases: a row picked to gather by (a graph's edge_index[0]) at the forward's start is the forward's") {
  // PyTorch Geometric's GINConv: x.index_select(0, edge_index[0]), then a scatter of the
  // messages, then its MLP.
  Mod conv_layer{"GINConv", {op("aten::select", {"aten::as_strided"}), op("aten::index_select"), op("aten::select", {"aten::as_strided"}),
                             op("aten::scatter_add_"), op("aten::add"), leaf("Linear", {"aten::linear"}), relu_module(),
                             leaf("Linear", {"aten::linear"})},
                 nullptr};
  BareRun r = bare_run(Mod{"GIN", {conv_layer, conv_layer, leaf("Linear", {"aten::linear"})}, nullptr});
  for (PhaseKind p : phases_of_op(r, "aten::select")) CHECK(p == PhaseKind::Forward);
  // (A batch picked with nothing gathering by it stays data loading: the case above.)
}

TEST_CASE("phases: a loss placed by position, with no range or module saying where the forward ends, is said to be") {
  BareRun r = bare_run(model({}));
  auto says = [](const Annotation& a) {
    return std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) { return n.find("the loss is placed from its ops") != std::string::npos; });
  };
  CHECK(says(r.annotation));
  // With the program's forward and loss ranges (the truth's) it is not placed by position.
  LoadResult full = load_trace_bytes("truth.json", trace_of(model({})));
  REQUIRE(full.model);
  CHECK_FALSE(says(annotate(*full.model)));
}

TEST_CASE("phases: on a trace with no device, aten::to at the forward's start is a cast, not the end of data loading") {
  // A timestep embedding computed first: arange, a cast, exp, products, sin and cos.
  Mod root = model({});
  const std::vector<const char*> first = {"aten::arange", "aten::to", "aten::mul", "aten::exp", "aten::to", "aten::mul", "aten::cos",
                                          "aten::sin", "aten::cat"};
  for (size_t k = 0; k < first.size(); ++k) root.items.insert(root.items.begin() + long(k), op(first[k]));
  BareRun r = bare_run(root);
  for (const char* o : {"aten::arange", "aten::exp", "aten::cos"})
    CHECK(phases_of_op(r, o) == std::vector<PhaseKind>(2, PhaseKind::Forward));
}

TEST_CASE("phases: the allocation torch 1.13's record_function makes just before its range is that range's phase") {
  StepOps ops;
  ops.range_allocation = true;
  BareRun r = bare_run(model({conv(), bn(), relu_module()}), ops);
  for (const char* o : {"aten::zeros", "aten::empty", "aten::zero_"})
    CHECK(phases_of_op(r, o) == std::vector<PhaseKind>(2, PhaseKind::Optimizer));
}

TEST_CASE("phases: the host's time between two phases is shared, twice as much to forward and backward as to the phase beside them") {
  BareRun r = bare_run(model({conv(), bn(), relu_module()}));
  const TraceModel& m = *r.bare.model;
  const Annotation& a = r.annotation;
  const AnnotationTree& t = a.tree;
  auto phase_of = [&](EventId e) { return a.node_of_event[e] == kNoNode ? PhaseKind::Other : t.phase[a.node_of_event[e]]; };
  // The first step's phase nodes in time order.
  std::vector<NodeId> phases;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Phase && (phases.empty() || t.begin[n] >= t.end[phases.back()])) phases.push_back(n);
  auto boundary = [&](PhaseKind before, PhaseKind after) -> std::pair<Ns, Ns> {  // (expected, inferred)
    for (size_t i = 0; i + 1 < phases.size(); ++i) {
      const NodeId p = phases[i], q = phases[i + 1];
      if (t.phase[p] != before || t.phase[q] != after) continue;
      Ns last = t.begin[p], first = t.end[q];
      for (EventId e = 0; e < m.ev.size(); ++e) {
        if (phase_of(e) == before && m.ev.start[e] >= t.begin[p] && m.ev.start[e] < t.end[p]) last = std::max(last, m.ev.end(e));
        if (phase_of(e) == after && m.ev.start[e] >= t.begin[q] && m.ev.start[e] < t.end[q]) first = std::min(first, m.ev.start[e]);
      }
      REQUIRE(last < first);
      const Ns gap = first - last;
      return {before == PhaseKind::Forward || before == PhaseKind::Backward ? last + gap * 2 / 3 : last + gap / 3, t.end[p]};
    }
    FAIL("no such pair of phases");
    return {};
  };
  SUBCASE("the forward's exit through the module tree: two thirds of the gap before the loss") {
    auto [expected, inferred] = boundary(PhaseKind::Forward, PhaseKind::Loss);
    CHECK(inferred == expected);
  }
  SUBCASE("the autograd engine's start: two thirds of the gap after the loss") {
    auto [expected, inferred] = boundary(PhaseKind::Loss, PhaseKind::Backward);
    CHECK(inferred == expected);
  }
}

TEST_CASE("phases: a gap far longer than the other steps' (the first step's warm-up) is the next phase's entry, the exit as usual") {
  StepOps warm;
  warm.first_loss_warmup = 400;
  BareRun r = bare_run(model({conv(), bn(), relu_module()}), warm);
  const AnnotationTree& t = r.annotation.tree;
  const GroundTruth& truth = r.truth;
  // Each step's forward node against the truth's forward range: the first step's loss warm-up
  // stays out of the forward.
  std::vector<NodeId> forwards;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Phase && t.phase[n] == PhaseKind::Forward) forwards.push_back(n);
  REQUIRE(forwards.size() == 2);
  std::vector<Ns> truth_ends;
  for (const GroundTruth::TimeRange& p : truth.ranges)
    if (p.is_phase && p.phase == PhaseKind::Forward) truth_ends.push_back(p.end);
  REQUIRE(truth_ends.size() == 2);
  const Ns usual_overrun = t.end[forwards[1]] - truth_ends[1];
  CHECK(t.end[forwards[0]] - truth_ends[0] == usual_overrun);
}

TEST_CASE("phases: a loss written by hand starts at its first log-likelihood or squared difference, the model's score before it") {
  // SASRec: the model scores positives and negatives by products with their lookups, summed,
  // and subtracts; the loss is -F.logsigmoid(score).mean(). No op is named a loss.
  Mod emb = leaf("Embedding", {"aten::embedding"});
  Mod root{"SASRec", {emb, leaf("LayerNorm", {"aten::layer_norm"}), emb, op("aten::mul"), op("aten::sum"), emb, op("aten::mul"), op("aten::sum"),
                      op("aten::sub")},
           nullptr};
  BareRun r = bare_run(root, {{"aten::log_sigmoid", "aten::mean", "aten::neg"}});
  CHECK(phases_of_op(r, "aten::sub") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::sum") == std::vector<PhaseKind>(4, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::log_sigmoid") == std::vector<PhaseKind>(2, PhaseKind::Loss));
  // A squared error by hand, ((pred - y) ** 2 * w), after a model ending in its own sums.
  Mod graph{"EGNN", {leaf("Linear", {"aten::linear"}), op("aten::sum"), op("aten::sum"), op("aten::mul"), op("aten::add")}, nullptr};
  BareRun s = bare_run(graph, {{"aten::sub", "aten::pow", "aten::mul"}});
  CHECK(phases_of_op(s, "aten::add") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(s, "aten::pow") == std::vector<PhaseKind>(2, PhaseKind::Loss));
  // A triplet margin by hand, from its first distance: (a - p).pow(2).sum(1), the same for
  // (a - n), relu(d_ap - d_an + margin).mean(), after embeddings normalised in the forward.
  Mod embed{"EmbedNet", {conv(), bn(), relu_module(), op("aten::mean"), leaf("Linear", {"aten::linear"}), op("aten::norm"), op("aten::div")},
            nullptr};
  BareRun t = bare_run(embed, {{"aten::sub", "aten::pow", "aten::sum", "aten::sub", "aten::pow", "aten::sum", "aten::sub", "aten::relu",
                                "aten::mean"}});
  CHECK(phases_of_op(t, "aten::div") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(t, "aten::pow") == std::vector<PhaseKind>(4, PhaseKind::Loss));  // both distances
}

TEST_CASE("phases: a slice the model takes again before each of its weight ops (a variable's column) is the forward's") {
  // TFT's embeddings: x[..., k:k + 1] into one Linear per input variable, then the rest.
  Mod root{"TFT", {}, nullptr};
  for (int v = 0; v < 4; ++v)
    for (Mod m : {op("aten::slice"), rounded_child("aten::as_strided"), leaf("Linear", {"aten::linear"})}) root.items.push_back(m);
  for (Mod m : {op("aten::cat"), leaf("Linear", {"aten::linear"})}) root.items.push_back(m);
  BareRun r = bare_run(root);
  for (PhaseKind p : phases_of_op(r, "aten::slice")) CHECK(p == PhaseKind::Forward);
}

TEST_CASE("phases: an op the clock's rounding left beside the backward's last op is the backward's") {
  // AccumulateGrad's add_ ends with its parent at one tick and is written after it: it is no
  // optimizer update (the optimizer's range says where that starts), nor other.
  StepOps step;
  step.rounded_backward_tail = true;
  BareRun r = bare_run(model({}), step);
  size_t backward = 0;
  for (PhaseKind p : phases_of_op(r, "aten::add_")) backward += p == PhaseKind::Backward;
  CHECK(backward == 2);
}

TEST_CASE("phases: an op the clock's rounding left at the end of PyTorch's range is that range's phase") {
  // Optimizer.zero_grad#'s last zero_ (or a step's last update), 0 µs at the range's end tick.
  StepOps step;
  step.rounded_step_tail = true;
  BareRun r = bare_run(model({conv(), bn(), relu_module()}), step);
  CHECK(phases_of_op(r, "aten::zero_") == std::vector<PhaseKind>(2, PhaseKind::Optimizer));
}

// Where a loss op has weight ops after it, the backward says whose they are: a model's that
// accumulate gradients (an auxiliary loss computed in the forward: the forward goes on), a
// frozen network's or a no-grad teacher's (the loss goes on). Real CPU recordings of each
// (tests/data/corpus-cpu-objectives), annotated bare and scored against their phase ranges.
TEST_CASE("phases: an auxiliary loss inside the forward is the forward's; a frozen or no-grad network after a loss op is the loss's") {
  const std::string dir = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-objectives";
  STRATA_SKIP_UNLESS(std::filesystem::exists(dir + "/manifest.json"), "tests/data/corpus-cpu-objectives is not here");
  for (const char* model : {"vqvae_commitment", "deep_supervision", "perceptual_autoencoder", "kd_ce_first"}) {
    CAPTURE(model);
    LoadResult full = load_trace(dir + "/" + model + ".json.gz");
    REQUIRE(full.model);
    const GroundTruth truth = ground_truth(*full.model);
    LoadResult bare = load_trace_bytes("bare", strip_events(*full.model, kStripTruthRanges | kStripModules | kStripStacks));
    REQUIRE(bare.model);
    const AccuracyScore s = score_against(*bare.model, annotate(*bare.model), truth);
    CHECK(s.phase_agreement >= 0.98);  // 0.70 (VQ-VAE) and 0.77 (deep supervision) with the loss from the first loss op
  }
}

// Hinton's distillation as its examples write it: the student's logits, then the teacher on the
// same batch under no_grad, then the KL term on both. The teacher makes no backward nodes, so
// the backward's weight nodes are the student's weight ops in reverse and the teacher's convs,
// norms and linear after them are the loss's (0.74 of the time with the loss from the KL term).
TEST_CASE("phases: a no-grad teacher between the model and its loss op is the loss's") {
  const std::string dir = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-objectives";
  STRATA_SKIP_UNLESS(std::filesystem::exists(dir + "/manifest.json"), "tests/data/corpus-cpu-objectives is not here");
  LoadResult full = load_trace(dir + "/kd_student.json.gz");
  REQUIRE(full.model);
  const GroundTruth truth = ground_truth(*full.model);
  LoadResult bare = load_trace_bytes("bare", strip_events(*full.model, kStripTruthRanges | kStripModules | kStripStacks));
  REQUIRE(bare.model);
  const AccuracyScore s = score_against(*bare.model, annotate(*bare.model), truth);
  CHECK(s.phase_agreement >= 0.98);
}

// TabNet's attentive transformers call Sparsemax, an autograd Function written by hand: the
// legacy export writes its call as a range of the class's name, no category, and its backward
// node as that name and "Backward". It is an op of the forward, no phase of its own (the
// forward was cut in three around it, 0.96 of the time), and one op, no graph to group.
TEST_CASE("phases: a custom autograd Function's call is an op of the forward") {
  const std::string dir = std::string(STRATA_TORCH2_DIR) + "/../corpus-cpu-variants7";
  STRATA_SKIP_UNLESS(std::filesystem::exists(dir + "/manifest.json"), "tests/data/corpus-cpu-variants7 is not here");
  LoadResult full = load_trace(dir + "/tabnet_lite.json.gz");
  REQUIRE(full.model);
  const GroundTruth truth = ground_truth(*full.model);
  LoadResult bare = load_trace_bytes("bare", strip_events(*full.model, kStripTruthRanges | kStripModules | kStripStacks));
  REQUIRE(bare.model);
  const Annotation a = annotate(*bare.model);
  CHECK(score_against(*bare.model, a, truth).phase_agreement >= 0.99);
  CHECK_FALSE(has_layer(a.tree, "SparsemaxFunction"));
}

TEST_CASE("phases: the same rows picked from the prediction and the target are the loss's; one pick alone is the model's") {
  // A graph's node classification: log-probabilities for every node, then
  // F.nll_loss(out[train_mask], y[train_mask]).
  StepOps masked;
  masked.loss = {"aten::index", "aten::index", "aten::nll_loss"};
  BareRun r = bare_run(Mod{"GCN", {linear(), op("aten::relu"), linear(), op("aten::log_softmax")}, nullptr}, masked);
  for (PhaseKind p : phases_of_op(r, "aten::index")) CHECK(p == PhaseKind::Loss);
  // A model that returns its masked positions' scores itself (logits[mask]), its loss on them
  // and on the labels reshaped (labels.view(-1)).
  BareRun q = bare_run(Mod{"Net", {linear(), op("aten::relu"), linear(), op("aten::index")}, nullptr}, StepOps{{"aten::view", "aten::nll_loss"}});
  CHECK(phases_of_op(q, "aten::index") == std::vector<PhaseKind>(2, PhaseKind::Forward));
}

TEST_CASE("phases: a linear's resolve_conj a tick after it is the model's, no reshape of the loss's inputs") {
  // A regression head (chemprop's FFN): the last nn.Linear's aten::linear, then the
  // resolve_conj its addmm left, ended a microsecond after it; F.mse_loss broadcasts first.
  BareRun r = bare_run(head_with(Mod{"Linear", {op("aten::linear"), rounded_child("aten::resolve_conj", 0, 1)}, nullptr}), {{"aten::broadcast_tensors", "aten::mse_loss"}});
  CHECK(phases_of_op(r, "aten::resolve_conj") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::broadcast_tensors") == std::vector<PhaseKind>(2, PhaseKind::Loss));
}

TEST_CASE("phases: a state the model makes first (an RNN's zeros) is the forward's") {
  // LAS's listener: nn.LSTM first, its h0 and c0 made (zeros, zero_) before its op.
  Mod lstm{"LSTM", {op("aten::zeros"), op("aten::zero_"), op("aten::zeros"), op("aten::zero_"), op("aten::lstm")}, nullptr};
  BareRun r = bare_run(Mod{"Listener", {lstm, linear()}, nullptr});
  CHECK(phases_of_op(r, "aten::zeros") == std::vector<PhaseKind>(4, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::zero_") == std::vector<PhaseKind>(4, PhaseKind::Forward));
}

TEST_CASE("phases: the model's last view before F.mse_loss's broadcast stays the model's") {
  // Conv-TasNet: the separator's masks applied and viewed back to (batch, sources, time), then
  // F.mse_loss(est, target), which broadcasts one to the other first.
  Mod head = head_with(leaf("Conv1d", {"aten::conv1d"}));
  head.items.push_back(op("aten::mul"));
  head.items.push_back(op("aten::view"));
  BareRun r = bare_run(head, {{"aten::broadcast_tensors", "aten::mse_loss"}});
  CHECK(phases_of_op(r, "aten::view") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::broadcast_tensors") == std::vector<PhaseKind>(2, PhaseKind::Loss));
}

TEST_CASE("phases: a cast between the model's first state and its first op is the forward's on a trace with no device") {
  // NARM: its GRU's h0 made (zeros, zero_), then the item ids cast (aten::to), then the lookup.
  BareRun r = bare_run(Mod{"NARM", {op("aten::zeros"), op("aten::zero_"), op("aten::to"), leaf("Embedding", {"aten::embedding"}),
                                    leaf("GRU", {"aten::gru"}), linear()},
                           nullptr});
  CHECK(phases_of_op(r, "aten::to") == std::vector<PhaseKind>(2, PhaseKind::Forward));
  CHECK(phases_of_op(r, "aten::zeros") == std::vector<PhaseKind>(2, PhaseKind::Forward));
}
