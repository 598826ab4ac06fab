// Layers inferred from the op sequence (core/annotate/infer_layers.cpp), scored against the
// module tree that made the ops: each case is a small model written as its module calls, traced
// once with its truth's hid= ranges and annotated with them stripped, as the accuracy bench
// does (bench/annotate_accuracy.cpp). A case checks a class of model, not one trace's layers.
#include "helpers.h"

#include "core/annotate/accuracy.h"

#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

// A module call: its child calls and its own ops in the order they run. An item with `op` set
// is an op of the module itself (F.relu, a residual add), not a call.
struct Mod {
  std::string cls;
  std::vector<Mod> items;
  const char* op = nullptr;
};
Mod op(const char* name) { return {"", {}, name}; }
Mod leaf(const char* cls, std::vector<const char*> ops) {
  Mod m{cls, {}, nullptr};
  for (const char* o : ops) m.items.push_back(op(o));
  return m;
}
Mod conv() { return leaf("Conv2d", {"aten::conv2d"}); }
Mod bn() { return leaf("BatchNorm2d", {"aten::add_", "aten::batch_norm"}); }  // its batch counter, then the norm
Mod relu_module() { return leaf("ReLU", {"aten::relu_"}); }

struct Writer {
  std::string json = "{\"traceEvents\": [\n";
  int next_hid = 0;
  void x(const char* cat, const std::string& name, long ts, long dur) {
    json += "{\"ph\": \"X\", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + name + "\", \"pid\": 1, \"tid\": 1, \"ts\": " +
            std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + "},\n";
  }
  // Writes a call's range and ops from t; returns the time after it.
  long call(const Mod& m, const std::string& path, long t) {
    const int hid = next_hid++;
    const long begin = t;
    t += 2;
    int child = 0;
    for (const Mod& it : m.items) {
      if (it.op) {
        x("cpu_op", it.op, t, 10);
        t += 14;
      } else {
        t = call(it, path == "(root)" ? std::to_string(child) : path + "." + std::to_string(child), t);
        ++child;
      }
    }
    x("user_annotation", "hid=" + std::to_string(hid) + " " + path + " (" + m.cls + ")", begin, t - begin);
    return t + 2;
  }
};

// Two training steps of the model: forward, loss, backward (autograd's ops), optimizer.
std::string trace_of(const Mod& root) {
  Writer w;
  long t = 1000;
  for (int it = 0; it < 2; ++it) {
    const long step = t;
    w.next_hid = 0;
    const long fwd_end = w.call(root, "(root)", t + 20);
    w.x("user_annotation", "forward", t + 10, fwd_end - t - 5);
    t = fwd_end + 20;
    w.x("user_annotation", "loss", t, 40);
    w.x("cpu_op", "aten::mse_loss", t + 5, 30);
    t += 60;
    w.x("user_annotation", "backward", t, 400);
    for (int k = 0; k < 6; ++k) w.x("cpu_op", "autograd::engine::evaluate_function: ConvolutionBackward0", t + 10 + k * 60, 50);
    t += 420;
    w.x("user_annotation", "optimizer", t, 200);
    w.x("user_annotation", "Optimizer.step#SGD.step", t + 5, 190);
    for (int k = 0; k < 6; ++k) w.x("cpu_op", "aten::add_", t + 10 + k * 30, 20);
    t += 220;
    w.x("user_annotation", "ProfilerStep#" + std::to_string(it + 1), step, t - step);
    t += 100;
  }
  return w.json + "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"train\"}}]}";
}

// The model's trace annotated bare (the truth's ranges stripped), scored against them.
AccuracyScore bare_score(const Mod& root) {
  LoadResult full = load_trace_bytes("truth.json", trace_of(root));
  REQUIRE(full.model);
  const GroundTruth truth = ground_truth(*full.model);
  REQUIRE(truth.present());
  LoadResult bare = load_trace_bytes("bare.json", strip_events(*full.model, kStripTruthRanges));
  REQUIRE(bare.model);
  Annotation a = annotate(*bare.model);
  CHECK(a.layer_source == LayerSource::Heuristic);
  check_tree(a.tree);
  return score_against(*bare.model, a, truth);
}

Mod model(std::vector<Mod> body) {
  Mod root{"Net", {conv(), bn(), relu_module()}, nullptr};  // a stem
  for (Mod& m : body) root.items.push_back(std::move(m));
  root.items.push_back(leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}));
  root.items.push_back(op("aten::flatten"));
  root.items.push_back(leaf("Linear", {"aten::linear"}));
  return root;
}

}  // namespace

TEST_CASE("inferred layers: a conv, its norm and its in-place activation are one layer, as ConvNormActivation is") {
  Mod cna{"Conv2dNormActivation", {conv(), bn(), relu_module()}, nullptr};
  AccuracyScore s = bare_score(model({cna, cna, leaf("MaxPool2d", {"aten::max_pool2d"}), cna}));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.blocks == 6);  // three a forward, two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: F.relu after a norm is its caller's op, outside the conv's group") {
  // x = F.relu(self.bn1(self.conv1(x))), twice: each relu belongs to the block, each group is
  // a conv and its norm.
  Mod block{"ConvBlock", {conv(), bn(), op("aten::relu"), conv(), bn(), op("aten::relu")}, nullptr};
  AccuracyScore s = bare_score(model({block, block, block}));
  CHECK(s.node_precision == doctest::Approx(1.0));  // (each relu is a unit of its own: the ops cannot tell F.relu from nn.ReLU)
}

TEST_CASE("inferred layers: pre-activation blocks get no conv-norm groups across their edges") {
  // norm, relu, conv twice, then the residual add: a norm opens what follows it.
  Mod pre{"PreActBlock", {bn(), relu_module(), conv(), bn(), relu_module(), conv(), op("aten::add")}, nullptr};
  AccuracyScore s = bare_score(model({pre, pre, pre}));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a separable conv's two convs go with the norm after them") {
  // Xception-like blocks: separable convs (depthwise, pointwise) each with a norm, beside a
  // projection shortcut; the two convs of one separable conv are not a conv and a conv-norm.
  Mod sep{"SeparableConv2d", {conv(), conv()}, nullptr};
  Mod body{"Sequential", {sep, bn(), relu_module(), sep, bn()}, nullptr};
  Mod skip{"Sequential", {conv(), bn()}, nullptr};
  Mod block{"XceptionBlock", {body, skip, op("aten::add")}, nullptr};
  AccuracyScore s = bare_score(model({block, block, block}));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a residual function that is a module of its own is a layer inside its block") {
  // InvertedResidual: x + self.conv(x), conv a Sequential of ConvNormActivations, a conv, a norm.
  Mod cna{"Conv2dNormActivation", {conv(), bn(), leaf("ReLU6", {"aten::hardtanh_"})}, nullptr};
  Mod f{"Sequential", {cna, cna, conv(), bn()}, nullptr};
  Mod ir{"InvertedResidual", {f, op("aten::add")}, nullptr};
  AccuracyScore s = bare_score(model({ir, ir, ir}));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their Sequentials and their groups
  CHECK(s.node_precision == doctest::Approx(1.0));

  // Computed inline (a layer scale multiplies it inside F): no layer for F.
  Mod inline_f{"Block", {conv(), bn(), relu_module(), conv(), op("aten::mul"), op("aten::permute"), op("aten::add")}, nullptr};
  AccuracyScore si = bare_score(model({inline_f, inline_f, inline_f}));
  CHECK(si.block_recall == doctest::Approx(1.0));
  CHECK(si.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a stochastic depth's random mask is one unit, and a block without it is still one of its kind") {
  Mod sd = leaf("StochasticDepth", {"aten::empty", "aten::bernoulli_", "aten::div_", "aten::mul"});
  Mod f{"Sequential", {conv(), bn(), relu_module(), conv(), bn()}, nullptr};
  Mod first{"MBConv", {f, op("aten::add")}, nullptr};  // p = 0: the mask runs no op
  Mod later{"MBConv", {f, sd, op("aten::add")}, nullptr};
  AccuracyScore s = bare_score(model({first, later, later}));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  // MBConv's children differ (a mask module or none): the blocks are the Sequentials, the
  // later MBConvs and the conv-norm groups.
  CHECK(s.block_recall == doctest::Approx(1.0));
}

namespace {

Mod layer_norm() { return leaf("LayerNorm", {"aten::layer_norm"}); }
Mod linear() { return leaf("Linear", {"aten::linear"}); }
Mod dropout() { return leaf("Dropout", {"aten::dropout"}); }

// Attention written by hand (timm's, GPT's): a packed qkv projection, the scores, a softmax, an
// attention dropout, the weighted sum, the out-projection and its output dropout.
Mod hand_attention() {
  return {"Attention",
          {linear(), op("aten::reshape"), op("aten::permute"), op("aten::unbind"), op("aten::transpose"), op("aten::matmul"),
           op("aten::mul"), op("aten::softmax"), dropout(), op("aten::matmul"), op("aten::transpose"), op("aten::reshape"), linear(),
           dropout()},
          nullptr};
}
Mod mlp() { return {"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), dropout(), linear(), dropout()}, nullptr}; }
// A pre-norm transformer block: x + attn(norm1(x)), then x + mlp(norm2(x)).
Mod prenorm_block() { return {"Block", {layer_norm(), hand_attention(), op("aten::add"), layer_norm(), mlp(), op("aten::add")}, nullptr}; }

Mod vit(std::vector<Mod> body) {
  Mod root{"ViT", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose")}, nullptr};
  for (Mod& m : body) root.items.push_back(std::move(m));
  root.items.push_back(layer_norm());
  root.items.push_back(linear());
  return root;
}

}  // namespace

TEST_CASE("inferred layers: a pre-norm layer's halves call an attention and an MLP module when attention is written by hand") {
  AccuracyScore s = bare_score(vit({prenorm_block(), prenorm_block(), prenorm_block()}));
  CHECK(s.blocks == 18);  // each block, its attention and its MLP; two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the halves pair in every stage, and a patch merging between stages is a module") {
  // Swin-like: stages of two blocks with a patch merging (slices, concatenation, norm,
  // reduction) between them, all children of the root.
  Mod merge{"PatchMerging", {op("aten::slice"), op("aten::slice"), op("aten::cat"), layer_norm(), linear()}, nullptr};
  Mod b = prenorm_block();
  AccuracyScore s = bare_score(vit({b, b, merge, b, b, merge, b, b}));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: nn.TransformerEncoderLayer's feed-forward is inline: no MLP layer") {
  // norm_first: nn.MultiheadAttention's own function (packed in-projection, bmm), then the
  // feed-forward with F.relu, the layer's own op between its linears.
  Mod mha{"MultiheadAttention",
          {op("aten::linear"), op("aten::chunk"), op("aten::view"), op("aten::transpose"), op("aten::bmm"), op("aten::softmax"),
           op("aten::dropout"), op("aten::bmm"), op("aten::transpose"), op("aten::view"), op("aten::linear"), op("aten::view")},
          nullptr};
  Mod tel{"TransformerEncoderLayer",
          {layer_norm(), mha, dropout(), op("aten::add"), layer_norm(), linear(), op("aten::relu"), dropout(), linear(), dropout(),
           op("aten::add")},
          nullptr};
  AccuracyScore s = bare_score(vit({tel, tel, tel}));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}
