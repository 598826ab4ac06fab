// Layers inferred for stacks of blocks that are neither residual CNNs nor transformers (gated
// convolutional stacks, towers), scored against the module tree that made the ops, as in
// test_infer_layers.cpp.
#include "model_trace.h"

#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

// The forward's inferred layers whose name starts with `prefix`: how many of their children
// are `unit`s.
std::vector<int> units_per_layer(const AnnotationTree& t, std::string_view prefix, std::string_view unit) {
  std::vector<int> out;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Layer && t.phase[n] == PhaseKind::Forward && t.name_of(n).starts_with(prefix)) {
      int k = 0;
      for (NodeId c : t.children(n)) k += t.name_of(c).starts_with(unit);
      out.push_back(k);
    }
  return out;
}

}  // namespace

TEST_CASE("inferred layers: a gated residual layer with a skip output is one layer, not a block per join") {
  // WaveNet: tanh(filter(x)) * sigmoid(gate(x)), x + res(h), then skip(h) summed by the caller
  // across layers. The skip conv is one unit: every layer holds it, so it is no kind of block
  // of its own, nor the end that cuts each layer's gated half off as a stem.
  Mod wave{"WaveBlock",
           {conv1d(), op("aten::slice"), op("aten::tanh"), conv1d(), op("aten::slice"), op("aten::sigmoid"), op("aten::mul"),
            conv1d(), op("aten::add"), conv1d()},
           nullptr};
  Mod root{"WaveNet", {conv1d()}, nullptr};
  for (int k = 0; k < 6; ++k) {
    root.items.push_back(wave);
    root.items.push_back(op("aten::add"));
  }
  for (Mod m : {op("aten::relu"), conv1d(), op("aten::relu"), conv1d(), op("aten::mean")}) root.items.push_back(m);
  BareRun r = bare_run(root);
  // Each layer holds its four convs; the last one too, before the head's relu.
  const std::vector<int> convs = units_per_layer(r.annotation.tree, "Block ", "Conv ");
  CHECK(convs == std::vector<int>(12, 4));  // six a forward, two forwards
}

TEST_CASE("inferred layers: an image tower of residual blocks does not keep a text tower's halves from pairing into layers") {
  // CLIP-like: a ResNet's blocks (one kind after another), then pre-norm nn.TransformerEncoderLayers.
  Mod basic{"BasicBlock", {conv(), bn(), relu_module(), conv(), bn(), op("aten::add"), relu_module()}, nullptr};
  Mod mha{"MultiheadAttention",
          {op("aten::linear"), op("aten::chunk"), op("aten::view"), op("aten::transpose"), op("aten::bmm"), op("aten::softmax"),
           op("aten::dropout"), op("aten::bmm"), op("aten::transpose"), op("aten::view"), op("aten::linear"), op("aten::view")},
          nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"}), lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod tel{"TransformerEncoderLayer", {ln, mha, drop, op("aten::add"), ln, lin, op("aten::relu"), drop, lin, drop, op("aten::add")}, nullptr};
  Mod image{"ResNet", {conv(), bn(), relu_module(), leaf("MaxPool2d", {"aten::max_pool2d"}), basic, basic, basic,
                       leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), lin},
            nullptr};
  Mod text{"TextEncoder", {leaf("Embedding", {"aten::embedding"}), op("aten::add"), tel, tel, tel, ln, lin}, nullptr};
  BareRun r = bare_run(Mod{"Clip", {image, text, op("aten::t"), op("aten::matmul")}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the residual blocks and the encoder layers
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Layer 3: attention + MLP"));
}

TEST_CASE("inferred layers: a block with its projection shortcut computed after the branch is a variant of the plain blocks") {
  // A TCN: the first block changes the channels, its 1x1 conv on the input run after the
  // branch, just before the add; F.relu throughout.
  auto block = [](bool down) {
    Mod m{"TemporalBlock", {conv1d(), op("aten::slice"), op("aten::relu"), leaf("Dropout", {"aten::dropout"}), conv1d(),
                            op("aten::slice"), op("aten::relu"), leaf("Dropout", {"aten::dropout"})},
          nullptr};
    if (down) m.items.push_back(conv1d());
    m.items.push_back(op("aten::add"));
    m.items.push_back(op("aten::relu"));
    return m;
  };
  BareRun r = bare_run(Mod{"TCN", {block(true), block(false), block(false), block(false), op("aten::select"), leaf("Linear", {"aten::linear"})}, nullptr});
  // Every block is a layer, the first too (its residual branch holds the projection: the ops
  // cannot tell it from the branch's last conv).
  CHECK(units_per_layer(r.annotation.tree, "Block ", "Residual branch ").size() == 8);  // two forwards
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a pooling or an upsampling between a U-Net's residual blocks is no sublayer of them") {
  // Residual double convs (each with its 1x1 skip conv), max-pooled on the way down, up-
  // convolved and concatenated with the skip on the way up: every block is found, and no
  // layer pairs a block with the pooling or the up-convolution after it.
  Mod res{"ResConv", {conv(), bn(), op("aten::relu"), conv(), bn(), conv(), op("aten::add"), op("aten::relu")}, nullptr};
  Mod pool = op("aten::max_pool2d"), up = leaf("ConvTranspose2d", {"aten::conv_transpose2d"});
  BareRun r = bare_run(Mod{"ResUNet", {res, pool, res, pool, res, up, op("aten::cat"), res, up, op("aten::cat"), res, conv()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK_FALSE(has_layer(r.annotation.tree, "Layer 1"));
}

namespace {

// A pre-norm layer on nn.MultiheadAttention whose second half is `ff`.
Mod prenorm_layer(Mod ff) {
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  return {"Layer", {ln, multihead_attention(), op("aten::add"), ln, std::move(ff), op("aten::add")}, nullptr};
}

Mod lm(Mod layer) {
  return {"LM", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, leaf("LayerNorm", {"aten::layer_norm"}), leaf("Linear", {"aten::linear"})},
          nullptr};
}

}  // namespace

TEST_CASE("inferred layers: a Switch router's top-1 by max routes to experts as a top-k does") {
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod expert{"Sequential", {lin, leaf("ReLU", {"aten::relu"}), lin}, nullptr};
  Mod ff{"SwitchFF", {op("aten::reshape"), lin, op("aten::softmax"), op("aten::max"), op("aten::zeros_like")}, nullptr};
  for (int e = 0; e < 4; ++e) {
    for (const char* o : {"aten::eq", "aten::any", "aten::is_nonzero", "aten::index"}) ff.items.push_back(op(o));
    ff.items.push_back(expert);
    for (const char* o : {"aten::unsqueeze", "aten::index", "aten::mul", "aten::index_put_"}) ff.items.push_back(op(o));
  }
  ff.items.push_back(op("aten::view"));
  BareRun r = bare_run(lm(prenorm_layer(ff)));
  CHECK(has_layer(r.annotation.tree, "MoE 3: router + 4 experts"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, the mixtures and their experts

  // A max with no experts recurring after it (a maxout feed-forward) routes nothing.
  Mod maxout{"Maxout", {lin, op("aten::view"), op("aten::max"), lin}, nullptr};
  CHECK_FALSE(has_layer(bare_run(lm(prenorm_layer(maxout))).annotation.tree, "MoE 1: router + 0 experts"));
}

TEST_CASE("inferred layers: nn.MultiheadAttention's averaged weights and its batch_first transpose back are its own") {
  // AutoInt's interacting layer: F.relu(attn(x, x, x)[0] + res(x)) with need_weights left on.
  Mod mha = multihead_attention();
  mha.items.insert(mha.items.begin(), op("aten::transpose"));  // batch_first: in...
  for (const char* o : {"aten::view", "aten::sum", "aten::div", "aten::transpose"}) mha.items.push_back(op(o));  // ...and out
  Mod layer{"InteractingLayer", {mha, leaf("Linear", {"aten::linear"}), op("aten::add"), op("aten::relu")}, nullptr};
  const AccuracyScore s =
      bare_score(Mod{"AutoInt", {op("aten::add"), leaf("Embedding", {"aten::embedding"}), layer, layer, layer, op("aten::flatten"),
                                 leaf("Linear", {"aten::linear"})},
                     nullptr});
  CHECK(s.leaf_f1 > 0.99);  // (the F.relu is a unit of its own: the ops cannot tell it from nn.ReLU)
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a projection right after the branch's last norm is the shortcut's, computed after the branch") {
  // QuartzNet's block: body(x) + res(x), the body ending in a norm, the 1x1 conv and norm of
  // the residual path run after it.
  Mod body{"Sequential", {conv1d(), conv1d(), bn(), relu_module(), conv1d(), conv1d(), bn()}, nullptr};
  Mod res{"Sequential", {conv1d(), bn()}, nullptr};
  Mod block{"QuartzBlock", {body, res, op("aten::add"), relu_module()}, nullptr};
  BareRun r = bare_run(Mod{"QuartzNet", {conv1d(), bn(), relu_module(), block, block, block, conv1d()}, nullptr});
  CHECK(units_per_layer(r.annotation.tree, "Residual branch ", "Conv-Norm ") == std::vector<int>(6, 2));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their bodies and their residual paths
}

TEST_CASE("inferred layers: the dropout on the activation that closes a residual block is the block's, one module with it") {
  // As the block's own two modules, or as one Sequential it calls (Jasper's and QuartzNet's).
  Mod body{"Sequential", {conv1d(), bn(), relu_module(), conv1d(), bn()}, nullptr};
  Mod drop = leaf("Dropout", {"aten::dropout"});
  for (bool sequential : {false, true}) {
    CAPTURE(sequential);
    Mod block{"Block", {body, op("aten::add")}, nullptr};
    if (sequential) block.items.push_back(Mod{"Sequential", {relu_module(), drop}, nullptr});
    else block.items.insert(block.items.end(), {relu_module(), drop});
    BareRun r = bare_run(Mod{"Net", {conv1d(), bn(), relu_module(), block, block, block, conv1d()}, nullptr});
    CHECK(units_per_layer(r.annotation.tree, "Block ", "Activation ") == std::vector<int>(6, 1));
    CHECK(units_per_layer(r.annotation.tree, "Block ", "Residual branch ") == std::vector<int>(6, 1));  // its body still found
    CHECK(has_layer(r.annotation.tree, "Activation 3: ReLU + Dropout"));
    const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
    CHECK(s.block_recall == doctest::Approx(1.0));
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
}

TEST_CASE("inferred layers: a global response norm written by hand is one norm unit, as its module is") {
  // ConvNeXt V2's GRN: the map's L2 norm per channel, divided by the channels' mean, applied,
  // scaled, shifted and added to its input; between the block's activation and its last linear.
  Mod grn = leaf("GRN", {"aten::norm", "aten::mean", "aten::add", "aten::div", "aten::mul", "aten::mul", "aten::add", "aten::add"});
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod block{"Block",
            {leaf("Conv2d", {"aten::conv2d"}), op("aten::permute"), leaf("LayerNorm", {"aten::layer_norm"}), lin,
             leaf("GELU", {"aten::gelu"}), grn, lin, op("aten::permute"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"ConvNeXtV2", {leaf("Conv2d", {"aten::conv2d"}), block, block, block, lin}, nullptr});
  CHECK(has_layer(r.annotation.tree, "GRN 3"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).leaf_f1 > 0.95);  // the block's permutes and add: its own
}

TEST_CASE("inferred layers: separable convs that look like the stem before them are called after it, not with it") {
  // MobileNet V1: a conv, norm and ReLU stem, then Sequentials of a depthwise and a pointwise
  // conv, each with its norm and ReLU: without shapes every group looks alike, and the repeats
  // are those that end where the pattern does.
  auto cbr = [] { return std::vector<Mod>{conv(), bn(), relu_module()}; };
  Mod sep{"Sequential", {}, nullptr};
  for (int k = 0; k < 2; ++k)
    for (Mod& m : cbr()) sep.items.push_back(m);
  Mod stem{"Sequential", cbr(), nullptr};
  Mod root{"MobileNetV1", {stem}, nullptr};
  for (int k = 0; k < 13; ++k) root.items.push_back(sep);  // 27 groups: repeats of three groups would cover them all
  for (Mod m : {leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), leaf("Linear", {"aten::linear"})})
    root.items.push_back(m);
  const AccuracyScore s = bare_score(root);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));

  // A head of one unit like the encoder's last (a siamese pair's linear) leaves the calls as
  // they are.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod encoder{"Encoder", {lin, relu_module(), lin}, nullptr};
  const AccuracyScore t = bare_score(Mod{"Siamese", {encoder, encoder, op("aten::sub"), op("aten::abs"), lin}, nullptr});
  CHECK(t.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: an as_strided the clock's rounding left beside the conv it ran in is the conv's") {
  // Timestamps in whole microseconds end a conv's last child with it: the trace puts the child
  // after its parent, between the conv and its norm.
  Mod conv_strided{"Conv1d", {op("aten::conv1d"), rounded_child("aten::as_strided")}, nullptr};
  Mod body{"Sequential", {conv_strided, bn(), relu_module(), conv1d(), bn()}, nullptr};
  Mod block{"Block", {body, op("aten::add"), relu_module()}, nullptr};
  BareRun r = bare_run(Mod{"Net", {conv1d(), bn(), relu_module(), block, block, block, conv1d()}, nullptr});
  CHECK(units_per_layer(r.annotation.tree, "Residual branch ", "Conv-Norm ") == std::vector<int>(6, 2));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: GPT-2 as Hugging Face writes it: addmm linears with their views, GELU's tanh form written by hand") {
  // Conv1D flattens its input, multiplies with addmm and views the result back; NewGELU is
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The view before the first Conv1D is not
  // the LayerNorm's (its own view the clock's rounding leaves beside it lasts nothing).
  Mod conv1d_hf = leaf("Conv1D", {"aten::view", "aten::addmm", "aten::view"});
  Mod gelu = leaf("NewGELU", {"aten::mul", "aten::pow", "aten::mul", "aten::add", "aten::mul", "aten::tanh", "aten::add", "aten::mul"});
  Mod drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attn{"GPT2Attention", {conv1d_hf, op("aten::split")}, nullptr};
  for (const char* o : {"aten::view", "aten::permute", "aten::view", "aten::permute", "aten::view", "aten::permute", "aten::transpose",
                        "aten::matmul", "aten::div", "aten::slice", "aten::slice", "aten::where", "aten::softmax"})
    attn.items.push_back(op(o));
  attn.items.push_back(drop);
  for (const char* o : {"aten::matmul", "aten::permute", "aten::contiguous", "aten::view"}) attn.items.push_back(op(o));
  attn.items.push_back(conv1d_hf);
  attn.items.push_back(drop);
  Mod mlp{"GPT2MLP", {conv1d_hf, gelu, conv1d_hf, drop}, nullptr};
  Mod block{"GPT2Block", {ln, attn, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  Mod emb = leaf("Embedding", {"aten::embedding"});
  BareRun r = bare_run(Mod{"GPT2", {emb, emb, op("aten::add"), drop, block, block, block, ln, leaf("Linear", {"aten::linear"})}, nullptr});
  CHECK(has_layer(r.annotation.tree, "GELU 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions and MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a DenseNet transition that pools after its conv stands between stages, not at the head of one") {
  // Basic dense layers (norm, ReLU, conv, dropout) concatenated after each; a transition is
  // the same norm, ReLU and conv, then a pooling: a variant of the layer to the ops, but it
  // ends a dense block rather than opening one.
  Mod layer{"DenseLayer", {bn(), relu_module(), conv(), leaf("Dropout", {"aten::dropout"})}, nullptr};
  Mod dense{"DenseBlock", {}, nullptr};
  for (int k = 0; k < 4; ++k) {
    dense.items.push_back(layer);
    dense.items.push_back(op("aten::cat"));
  }
  Mod transition{"Transition", {bn(), relu_module(), conv(), leaf("AvgPool2d", {"aten::avg_pool2d"})}, nullptr};
  const AccuracyScore s = bare_score(Mod{"DenseNet", {conv(), dense, transition, dense, transition, dense, bn(),
                                                      leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"),
                                                      leaf("Linear", {"aten::linear"})},
                                         nullptr});
  CHECK(s.block_recall == doctest::Approx(1.0));  // the dense blocks, their layers and the transitions
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a message-passing layer may scatter twice (GraphSAGE's mean: the messages' sum and their count)") {
  Mod sage{"SAGEConv",
           {op("aten::zeros_like"), op("aten::index"), op("aten::index_add_"), op("aten::zeros"), op("aten::ones"), op("aten::index_add_"),
            op("aten::clamp"), op("aten::unsqueeze"), op("aten::div"), op("aten::cat"), leaf("Linear", {"aten::linear"})},
           nullptr};
  BareRun r = bare_run(Mod{"GraphSAGE", {sage, sage, sage, leaf("Linear", {"aten::linear"})}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Graph layer 3: Linear"));  // named for what it is
}

TEST_CASE("inferred layers: the view a linear returns its output through, left beside it by the rounding, is the linear's") {
  // nn.Linear on a batch of sequences (torch 1.13's CPU): aten::linear's last child, a view, ends
  // at the same microsecond and the trace puts it after the linear, lasting nothing or, its own
  // end rounded up and its parent's down, one microsecond.
  for (long us : {0L, 1L}) {
    CAPTURE(us);
    Mod lin{"Linear", {op("aten::linear"), rounded_child("aten::view", us)}, nullptr};
    Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr};
    Mod block{"Block", {leaf("LayerNorm", {"aten::layer_norm"}), mlp, op("aten::add")}, nullptr};
    const AccuracyScore s = bare_score(Mod{"Net", {leaf("Embedding", {"aten::embedding"}), block, block, block, lin}, nullptr});
    CHECK(s.leaf_f1 == doctest::Approx(1.0));
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
}

TEST_CASE("inferred layers: an Inception module's branches, from the backward's gradient sums on their first ops") {
  // GoogLeNet's Inception: four branches on the block's input (a 1x1 conv; two 1x1 then 3x3;
  // a max-pool then a 1x1), concatenated. The autograd engine sums the input's gradient from
  // each branch's first op but the last branch's: the pool's branch is told by its pooling.
  Mod cbr{"BasicConv2d", {conv(), bn(), relu_module()}, nullptr};
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  Mod inception{"Inception",
                {shared_input(cbr), shared_input(Mod{"Sequential", {cbr, cbr}, nullptr}), shared_input(Mod{"Sequential", {cbr, cbr}, nullptr}),
                 Mod{"Sequential", {pool, cbr}, nullptr}, op("aten::cat")},
                nullptr};
  Mod root{"GoogLeNet", {cbr, pool, cbr, pool, inception, inception, pool, inception, inception,
                         leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), leaf("Linear", {"aten::linear"})},
           nullptr};
  StepOps autograd;
  autograd.backward_nodes = true;
  BareRun r = bare_run(root, autograd);
  CHECK(has_layer(r.annotation.tree, "Branch 12"));  // three per module
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the modules and their Sequential branches
  CHECK(s.node_precision == doctest::Approx(1.0));
  // Without the engine's nodes the branches are not told apart: no branch is made up.
  BareRun plain = bare_run(root);
  CHECK_FALSE(has_layer(plain.annotation.tree, "Branch 1"));
}

TEST_CASE("inferred layers: a U-Net's pooling and the double conv after it are one Down module; a VGG's poolings stay between its blocks") {
  auto cbr = [] { return std::vector<Mod>{conv(), bn(), relu_module()}; };
  Mod dbl{"DoubleConv", {}, nullptr};
  for (int k = 0; k < 2; ++k)
    for (Mod& m : cbr()) dbl.items.push_back(m);
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  Mod down{"Down", {pool, dbl}, nullptr};
  Mod up = leaf("ConvTranspose2d", {"aten::conv_transpose2d"});
  BareRun r = bare_run(Mod{"UNet", {dbl, down, down, down, up, op("aten::cat"), dbl, up, op("aten::cat"), dbl, up, op("aten::cat"), dbl, conv()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Down 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the double convs and the Down modules
  CHECK(s.node_precision == doctest::Approx(1.0));

  BareRun v = bare_run(Mod{"VGG", {dbl, pool, dbl, pool, dbl, pool, op("aten::flatten"), leaf("Linear", {"aten::linear"})}, nullptr});
  CHECK_FALSE(has_layer(v.annotation.tree, "Down 1"));
}

TEST_CASE("inferred layers: a view more in the first attention's lead (a rounded as_strided) leaves its own views with it") {
  // batch_first nn.MultiheadAttention transposes its input first; in the first layer the
  // transpose's as_strided stands beside it (rounded timestamps). The others' leads compute
  // nothing: the first keeps its transpose, and the layers stay alike.
  auto layer = [](bool rounded) {
    Mod mha = multihead_attention();
    mha.items.insert(mha.items.begin(), op("aten::transpose"));
    if (rounded) mha.items.insert(mha.items.begin() + 1, rounded_child("aten::as_strided"));
    Mod ln = leaf("LayerNorm", {"aten::layer_norm"}), lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
    return Mod{"TransformerEncoderLayer", {ln, mha, drop, op("aten::add"), ln, lin, op("aten::relu"), drop, lin, drop, op("aten::add")}, nullptr};
  };
  BareRun r = bare_run(Mod{"LM", {leaf("Embedding", {"aten::embedding"}), layer(true), layer(false), layer(false),
                                  leaf("LayerNorm", {"aten::layer_norm"}), leaf("Linear", {"aten::linear"})},
                           nullptr});
  CHECK(has_layer(r.annotation.tree, "Layer 3: attention + MLP"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: squeeze and excitation on Linear layers, views between its parts, is one gate") {
  // SE-ResNet's SELayer: global pooling, flattened by a view, Linear, ReLU, Linear, Sigmoid,
  // viewed and expanded back, then the product.
  Mod fc{"Sequential", {leaf("Linear", {"aten::linear"}), relu_module(), leaf("Linear", {"aten::linear"}), leaf("Sigmoid", {"aten::sigmoid"})}, nullptr};
  Mod se{"SELayer", {leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::view"), fc, op("aten::view"), op("aten::expand_as"), op("aten::mul")}, nullptr};
  Mod block{"SEBasicBlock", {conv(), bn(), relu_module(), conv(), bn(), se, op("aten::add"), relu_module()}, nullptr};
  BareRun r = bare_run(model({block, block, block}));
  CHECK(has_layer(r.annotation.tree, "SqueezeExcitation 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their SE layers and the Sequential between the views
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a stem like the blocks' own units before the first of them is the stem, not the first block's start") {
  // A conv, norm and ReLU stem, then double convs of the same groups between poolings: the
  // first run of units is the stem and a double conv, not a double conv and one group more.
  Mod cbr{"Sequential", {conv(), bn(), relu_module()}, nullptr};
  Mod dbl{"DoubleConv", {cbr, cbr}, nullptr};
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  const AccuracyScore s = bare_score(model({dbl, pool, dbl, pool, dbl}));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a vector broadcast and added after a product (DiT's shift) conditions the half, it closes no block") {
  // modulate(norm(x), shift, scale) = norm(x) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1),
  // then x + gate.unsqueeze(1) * attn(...): only the last add joins the half back to x.
  Mod ada{"Sequential", {leaf("SiLU", {"aten::silu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod mlp{"Sequential", {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod block{"DiTBlock", {ada, op("aten::chunk"), ln, op("aten::unsqueeze"), op("aten::add"), op("aten::mul"), op("aten::unsqueeze"), op("aten::add"),
                         multihead_attention(), op("aten::unsqueeze"), op("aten::mul"), op("aten::add"),
                         ln, op("aten::unsqueeze"), op("aten::add"), op("aten::mul"), op("aten::unsqueeze"), op("aten::add"),
                         mlp, op("aten::unsqueeze"), op("aten::mul"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"DiT", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"), leaf("Embedding", {"aten::embedding"}),
                                   block, block, block, leaf("Linear", {"aten::linear"})},
                           nullptr});
  // Each attention half runs from its norm through its gated add: no block ends at the shift's
  // add, so the first norm is the first layer's.
  bool norm_in_layer = false;
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "LayerNorm 1")
      norm_in_layer = r.annotation.tree.path(n).find("/Layer 1: attention + MLP/") != std::string::npos;
  CHECK(norm_in_layer);
  // The SiLU feeding the next block's modulation (a linear split in six at once) opens that
  // block: it is no post-activation of the one before.
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "SiLU 2")
      CHECK(r.annotation.tree.path(n).find("/Layer 2: ") != std::string::npos);
}

TEST_CASE("inferred layers: nn.MultiheadAttention begins at its batch-first transpose; a DiT block's modulation and MLP are modules") {
  // DiT's x + gate.unsqueeze(1) * attn(modulate(norm(x))): Python views the gate before it
  // calls the attention, which transposes its batch-first input, then projects.
  Mod mha = multihead_attention();
  mha.items.insert(mha.items.begin(), op("aten::transpose"));
  Mod ada{"Sequential", {leaf("SiLU", {"aten::silu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod mlp{"Sequential", {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod block{"DiTBlock", {ada, op("aten::chunk"), ln, op("aten::unsqueeze"), op("aten::add"), op("aten::mul"), op("aten::unsqueeze"), op("aten::add"),
                         op("aten::unsqueeze"), mha, op("aten::mul"), op("aten::add"),
                         ln, op("aten::unsqueeze"), op("aten::add"), op("aten::mul"), op("aten::unsqueeze"), op("aten::add"),
                         op("aten::unsqueeze"), mlp, op("aten::mul"), op("aten::add")},
            nullptr};
  // The conditioning c = t + y (a timestep's MLP, a label's embedding) before the blocks.
  const AccuracyScore s = bare_score(Mod{"DiT", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"),
                                                 leaf("Linear", {"aten::linear"}), leaf("Embedding", {"aten::embedding"}), op("aten::add"),
                                                 block, block, block, leaf("Linear", {"aten::linear"})},
                                         nullptr});
  CHECK(s.node_precision == doctest::Approx(1.0));  // each attention holds its own ops only
  // The modulation (SiLU, Linear, split at once) is a module, and so is the MLP the
  // modulated half calls between its shift and its gate.
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a feed-forward without dropouts beside nn.MultiheadAttention is a module, not TransformerEncoderLayer's inline one") {
  // nn.TransformerEncoderLayer runs its dropouts as ops even at p = 0; a layer written on
  // nn.MultiheadAttention with an nn.Sequential MLP and no dropout calls that MLP as a module.
  Mod mlp{"Sequential", {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  BareRun r = bare_run(lm(prenorm_layer(mlp)));
  CHECK(has_layer(r.annotation.tree, "MLP 3: Linear + GELU + Linear"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers and their MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the tensors record_function makes around every module call split no attention, sublayer or layer") {
  // Torch before 1.14 makes an aten::zeros (its zero_ nested or left beside it by the rounding,
  // call by call) before each record_function range and an aten::empty inside it: a trace
  // with a range around every module holds them between every two modules' ops. Attention
  // written on bmm with three projections, as modules, which transposes its output back to
  // its caller's layout (sequence first): the dropout after it is the layer's.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"SelfAttention",
                {op("aten::transpose"), lin, lin, lin, op("aten::view"), op("aten::transpose"), op("aten::view"), op("aten::transpose"),
                 op("aten::view"), op("aten::transpose"), op("aten::div"), op("aten::transpose"), op("aten::baddbmm"), op("aten::softmax"),
                 drop, op("aten::bmm"), op("aten::transpose"), op("aten::contiguous"), op("aten::view"), lin, op("aten::view"),
                 op("aten::transpose")},
                nullptr};
  Mod ff{"FeedForward", {lin, leaf("ReLU", {"aten::relu"}), drop, lin, drop}, nullptr};
  Mod layer{"EncoderLayer", {ln, attention, drop, op("aten::add"), ln, ff, op("aten::add")}, nullptr};
  Mod root{"Encoder", {leaf("Embedding", {"aten::embedding"}), drop}, nullptr};
  for (int k = 0; k < 6; ++k) root.items.push_back(layer);
  root.items.push_back(ln);
  root.items.push_back(lin);
  StepOps with_allocations;
  with_allocations.module_allocations = true;
  BareRun r = bare_run(root, with_allocations);
  for (int k = 1; k <= 6; ++k) CHECK(has_layer(r.annotation.tree, "Layer " + std::to_string(k) + ": attention + MLP"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions and feed-forwards
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: an attention transposing its output back has returned, the as_strided the rounding left beside it apart") {
  // The same sequence-first attention: in some layers the last transpose's as_strided stands
  // beside it (rounded timestamps). The dropout after it is still the layer's, in every layer.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  auto attention = [&](bool rounded) {
    Mod a{"SelfAttention",
          {op("aten::transpose"), lin, lin, lin, op("aten::view"), op("aten::transpose"), op("aten::view"), op("aten::transpose"),
           op("aten::view"), op("aten::transpose"), op("aten::div"), op("aten::transpose"), op("aten::baddbmm"), op("aten::softmax"),
           drop, op("aten::bmm"), op("aten::transpose"), op("aten::contiguous"), op("aten::view"), lin, op("aten::view"),
           op("aten::transpose")},
          nullptr};
    if (rounded) a.items.push_back(rounded_child("aten::as_strided"));
    return a;
  };
  Mod ff{"FeedForward", {lin, leaf("GELU", {"aten::gelu"}), lin, drop}, nullptr};
  Mod root{"LM", {leaf("Embedding", {"aten::embedding"})}, nullptr};
  for (int k = 0; k < 4; ++k)
    root.items.push_back(Mod{"Layer", {ln, attention(k % 2 == 1), drop, op("aten::add"), ln, ff, op("aten::add")}, nullptr});
  root.items.push_back(ln);
  root.items.push_back(lin);
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions and feed-forwards
  CHECK(s.node_precision == doctest::Approx(1.0));
}

namespace {

// A graph network's update: its moves along the graph (gathers, scatters, a concatenation), then
// the units that transform what they moved.
Mod graph_update(const char* cls, const std::vector<const char*>& moves, const std::vector<Mod>& units) {
  Mod m{cls, {}, nullptr};
  for (const char* o : moves) m.items.push_back(op(o));
  for (const Mod& u : units) m.items.push_back(u);
  return m;
}

// A graph network of four `layer`s between Linear encoders and a decoder, annotated bare: its
// layers and their updates are found exactly.
BareRun graph_network(const char* cls, const Mod& layer) {
  Mod lin = leaf("Linear", {"aten::linear"});
  BareRun r = bare_run(Mod{cls, {lin, lin, layer, layer, layer, layer, lin}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers and their updates
  CHECK(s.node_precision == doctest::Approx(1.0));
  return r;
}

}  // namespace

TEST_CASE("inferred layers: a graph network layer is its edge, node and global updates, each with its weights") {
  // Each update moves features along the graph (gathers the edges' nodes, sums the edges into
  // their nodes, the nodes into the graph), concatenates them and transforms them: Linear,
  // LayerNorm, ReLU, Dropout. The scatters repeat two by two, but a layer is the three
  // updates, and each update's dropout is its own, the last one's too.
  const std::vector<Mod> mlp = {leaf("Linear", {"aten::linear"}), leaf("LayerNorm", {"aten::layer_norm"}), leaf("ReLU", {"aten::relu"}),
                               leaf("Dropout", {"aten::dropout"})};

  Mod edge = graph_update("EdgeUpdate", {"aten::index", "aten::index", "aten::cat"}, mlp);
  Mod node = graph_update("NodeUpdate", {"aten::unsqueeze", "aten::expand", "aten::zeros", "aten::scatter_add_", "aten::unsqueeze", "aten::expand",
                                         "aten::zeros", "aten::scatter_add_", "aten::cat"},
                          mlp);
  Mod global = graph_update("GlobalUpdate", {"aten::arange", "aten::repeat_interleave", "aten::unsqueeze", "aten::expand", "aten::zeros",
                                             "aten::scatter_add_", "aten::unsqueeze", "aten::expand", "aten::zeros", "aten::scatter_add_", "aten::cat"},
                            mlp);
  BareRun r = graph_network("GraphNetwork", Mod{"GraphNetworkLayer", {edge, node, global}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Update 12: Linear + LayerNorm + ReLU + Dropout"));
  CHECK(has_layer(r.annotation.tree, "Graph layer 4: 3 updates"));
}

TEST_CASE("inferred layers: nn.TransformerEncoderLayer's activation is a function, torch 2's attention one module") {
  // Its feed-forward is inline (linear1, F.relu, dropout, linear2, dropout): the relu is the
  // layer's own op. Torch 2's nn.MultiheadAttention calls the fused kernel where it need not
  // return the weights, its packed in-projection unflattened into query, key and value: one
  // module, its projections no modules of their own. Post-norm, as the class's default.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod mha{"MultiheadAttention",
          {op("aten::transpose"), op("aten::linear"), op("aten::unflatten"), op("aten::unsqueeze"), op("aten::transpose"), op("aten::squeeze"),
           op("aten::contiguous"), op("aten::select"), op("aten::select"), op("aten::select"), op("aten::view"), op("aten::transpose"),
           op("aten::view"), op("aten::transpose"), op("aten::view"), op("aten::transpose"), op("aten::scaled_dot_product_attention"),
           op("aten::permute"), op("aten::view"), op("aten::linear"), op("aten::view"), op("aten::transpose")},
          nullptr};
  Mod layer{"TransformerEncoderLayer", {mha, drop, op("aten::add"), ln, lin, op("aten::relu"), drop, lin, drop, op("aten::add"), ln}, nullptr};
  BareRun r = bare_run(Mod{"Encoder", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, op("aten::mean"), lin}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK_FALSE(has_layer(r.annotation.tree, "ReLU 1"));
}

TEST_CASE("inferred layers: a relative position bias looked up between the scores and the softmax is the attention's") {
  // T5: the first layer's attention buckets the relative positions and looks their bias up in
  // an embedding, then adds it to the scores; the later layers add the bias it returned.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod norm = leaf("T5LayerNorm", {"aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"});
  auto attention = [&](bool bias) {
    Mod a{"T5Attention", {}, nullptr};
    for (int p = 0; p < 3; ++p)
      for (Mod m : {lin, op("aten::view"), op("aten::transpose")}) a.items.push_back(m);
    for (const char* o : {"aten::transpose", "aten::matmul"}) a.items.push_back(op(o));
    if (bias) {
      for (const char* o : {"aten::arange", "aten::unsqueeze", "aten::sub", "aten::gt", "aten::abs", "aten::clamp", "aten::log", "aten::div",
                            "aten::mul", "aten::where", "aten::add"})
        a.items.push_back(op(o));
      a.items.push_back(leaf("Embedding", {"aten::embedding"}));
      a.items.push_back(op("aten::permute"));
      a.items.push_back(op("aten::unsqueeze"));
    }
    for (Mod m : {op("aten::add"), op("aten::softmax"), drop, op("aten::matmul"), op("aten::transpose"), op("aten::contiguous"), op("aten::view"), lin})
      a.items.push_back(m);
    return a;
  };
  auto block = [&](bool bias) {
    Mod mlp{"DenseReluDense", {lin, leaf("ReLU", {"aten::relu"}), drop, lin}, nullptr};
    return Mod{"T5Block",
               {Mod{"T5LayerSelfAttention", {norm, attention(bias), drop, op("aten::add")}, nullptr},
                Mod{"T5LayerFF", {norm, mlp, drop, op("aten::add")}, nullptr}},
               nullptr};
  };
  BareRun r = bare_run(Mod{"T5Encoder", {leaf("Embedding", {"aten::embedding"}), drop, block(true), block(false), block(false), block(false), norm, drop}, nullptr});
  for (int k = 1; k <= 4; ++k) CHECK(has_layer(r.annotation.tree, "Layer " + std::to_string(k) + ": attention + MLP"));
  bool bias_in_attention = false;
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "Embedding 2")
      bias_in_attention = r.annotation.tree.path(n).find("/Layer 1: attention + MLP/Sublayer 1: RMSNorm + Attention + Dropout/Attention 1/") !=
                          std::string::npos;
  CHECK(bias_in_attention);
}

TEST_CASE("inferred layers: a CNN's conv, norm and activation groups stand beside a transformer's residual layers") {
  // An image captioner: Sequential(conv, BatchNorm, ReLU) three times, then post-norm decoder
  // layers on nn.MultiheadAttention, whose residual adds follow their weight ops. The convs
  // are no residual blocks' normalising first: their groups are their Sequentials.
  Mod stage{"Sequential", {conv(), bn(), relu_module()}, nullptr};
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod layer{"TransformerDecoderLayer",
            {multihead_attention(), drop, op("aten::add"), ln, multihead_attention(), drop, op("aten::add"), ln, lin, op("aten::relu"), drop,
             lin, drop, op("aten::add"), ln},
            nullptr};
  BareRun r = bare_run(Mod{"Captioner", {stage, stage, stage, op("aten::flatten"), op("aten::transpose"), leaf("Embedding", {"aten::embedding"}),
                                         op("aten::add"), layer, layer, lin},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the Sequentials and the decoder layers
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Conv-Norm 3: Conv + BatchNorm + ReLU"));
}

TEST_CASE("inferred layers: torch.tanh is its caller's op, nn.Tanh between two Linears a module") {
  // Additive attention (Bahdanau's) in a recurrent decoder: tanh(query(h) + keys) scored by a
  // Linear, softmax, weighted sum, the model's own ops at every step; the classifier head is
  // a Sequential of Linear, Tanh and Linear.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod root{"AttnDecoder", {leaf("Embedding", {"aten::embedding"}), leaf("LSTM", {"aten::zeros", "aten::zeros", "aten::lstm"}), lin}, nullptr};
  for (int step = 0; step < 4; ++step)
    for (Mod m : {lin, op("aten::unsqueeze"), op("aten::add"), op("aten::tanh"), lin, op("aten::squeeze"), op("aten::softmax"), op("aten::unsqueeze"),
                  op("aten::mul"), op("aten::sum"), op("aten::cat"), leaf("LSTMCell", {"aten::lstm_cell"})})
      root.items.push_back(m);
  root.items.push_back(Mod{"Sequential", {lin, leaf("Tanh", {"aten::tanh"}), lin}, nullptr});
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Tanh 1"));  // the head's, and only it
  CHECK_FALSE(has_layer(r.annotation.tree, "Tanh 2"));
  // BERT's pooler: dense and nn.Tanh, then the classifier's dropout and Linear.
  root.items.pop_back();
  for (Mod m : {Mod{"Pooler", {lin, leaf("Tanh", {"aten::tanh"})}, nullptr}, leaf("Dropout", {"aten::dropout"}), lin}) root.items.push_back(m);
  r = bare_run(root);
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).leaf_f1 == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Tanh 1"));
}

TEST_CASE("inferred layers: a window attention that gathers its position bias before its projections is one function") {
  // torchvision's Swin: ShiftedWindowAttention gathers its relative position bias (V2: from
  // its cpb_mlp Sequential, then 16 sigmoid(bias)), then calls shifted_window_attention with
  // its weights (pad, partition, F.linear, scores, F.dropout, F.linear, reverse): its
  // projections and dropouts are no modules, its bias MLP is. Its MLP is a Sequential.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  for (bool v2 : {false, true}) {
    CAPTURE(v2);
    Mod attention{"ShiftedWindowAttention", {}, nullptr};
    if (v2) attention.items.push_back(Mod{"Sequential", {lin, leaf("ReLU", {"aten::relu_"}), lin}, nullptr});
    for (const char* o : {"aten::index", "aten::view", "aten::permute", "aten::contiguous", "aten::unsqueeze"}) attention.items.push_back(op(o));
    if (v2) attention.items.push_back(op("aten::sigmoid")), attention.items.push_back(op("aten::mul"));
    for (const char* o : {"aten::pad", "aten::view", "aten::permute", "aten::reshape", "aten::linear", "aten::reshape", "aten::permute", "aten::select",
                          "aten::select", "aten::select", "aten::mul", "aten::transpose", "aten::matmul", "aten::add", "aten::softmax", "aten::dropout",
                          "aten::matmul", "aten::transpose", "aten::reshape", "aten::linear", "aten::dropout", "aten::view", "aten::permute",
                          "aten::reshape", "aten::slice", "aten::contiguous"})
      attention.items.push_back(op(o));
    Mod mlp{"MLP", {lin, leaf("GELU", {"aten::gelu"}), drop, lin, drop}, nullptr};
    Mod block{"SwinTransformerBlock", {ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
    Mod root{"SwinTransformer", {leaf("Conv2d", {"aten::conv2d"}), op("aten::permute"), ln, block, block, block, block, ln, op("aten::permute"),
                                 leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), leaf("Flatten", {"aten::flatten"}), lin},
             nullptr};
    const AccuracyScore s = bare_score(root);
    CHECK(s.leaf_f1 == doctest::Approx(1.0));
    CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their MLPs (and bias MLPs)
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
}

TEST_CASE("inferred layers: a window attention that gathers its bias with its scores is a module called on windows") {
  // timm's Swin: the block rolls (every other block) and partitions its map into windows
  // (view, permute, reshape), calls WindowAttention (qkv and proj modules, the relative
  // position bias gathered and added to the scores), then reverses the partition.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"WindowAttention", {lin}, nullptr};
  for (const char* o : {"aten::reshape", "aten::permute", "aten::unbind", "aten::mul", "aten::transpose", "aten::matmul", "aten::view", "aten::index",
                        "aten::view", "aten::permute", "aten::unsqueeze", "aten::add", "aten::softmax"})
    attention.items.push_back(op(o));
  for (Mod m : {drop, op("aten::matmul"), op("aten::transpose"), op("aten::reshape"), lin, drop}) attention.items.push_back(m);
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), drop, lin, drop}, nullptr};
  auto block = [&](bool shift) {
    Mod b{"SwinBlock", {ln}, nullptr};
    if (shift) b.items.push_back(op("aten::roll"));
    for (Mod m : {op("aten::view"), op("aten::permute"), op("aten::reshape"), attention, op("aten::view"), op("aten::permute"), op("aten::reshape")})
      b.items.push_back(m);
    if (shift) b.items.push_back(op("aten::roll"));
    for (Mod m : {op("aten::add"), ln, mlp, op("aten::add")}) b.items.push_back(m);
    return b;
  };
  Mod root{"Swin", {leaf("Conv2d", {"aten::conv2d"}), op("aten::permute"), ln, block(false), block(true), block(false), block(true), ln,
                    op("aten::mean"), lin},
           nullptr};
  const AccuracyScore s = bare_score(root);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions and MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a graph network layer's residual sums and its last update's norm are its own") {
  // MeshGraphNets' processor: an edge update (gathers, concatenation, MLP ending in a
  // LayerNorm), a node update (the scatter, concatenation, MLP ending in a LayerNorm), then
  // x + x', e + e'. The sums close the layer before the next one's gathers, and the node
  // update keeps its norm as the edge update does.
  const std::vector<Mod> mlp = {leaf("Linear", {"aten::linear"}), leaf("ReLU", {"aten::relu"}), leaf("Linear", {"aten::linear"}),
                               leaf("LayerNorm", {"aten::layer_norm"})};
  Mod layer{"GNBlock",
            {graph_update("EdgeUpdate", {"aten::index", "aten::index", "aten::cat"}, mlp),
             graph_update("NodeUpdate", {"aten::zeros_like", "aten::index_add_", "aten::cat"}, mlp), op("aten::add"), op("aten::add")},
            nullptr};
  BareRun r = graph_network("MeshGN", layer);
  CHECK(has_layer(r.annotation.tree, "Update 8: Linear + ReLU + Linear + LayerNorm"));
}

TEST_CASE("inferred layers: a block opening with a norm and no activation keeps its convs' norms after them") {
  // MaxViT's MBConv: a pre-norm BatchNorm, two Conv-BN-GELU steps, a bare conv, the residual add
  // (which follows that conv, as a pre-activation block's does); not pre-activation: no
  // activation follows its opening norm, and its steps are Conv2dNormActivation modules.
  Mod cna{"Conv2dNormActivation", {conv(), bn(), leaf("GELU", {"aten::gelu"})}, nullptr};
  Mod layers{"Sequential", {bn(), cna, cna, conv()}, nullptr};
  Mod mbconv{"MBConv", {layers, op("aten::add")}, nullptr};
  BareRun r = bare_run(model({mbconv, mbconv, mbconv}));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Conv-Norm 6: Conv + BatchNorm + GELU"));  // each block's two steps
  // The MBConvs and their steps; not their Sequentials, which hold the pre-norm (a pre-norm
  // block's opening norm is the block's in most codebases).
  CHECK(s.block_recall >= 0.75);
  // Pre-activation blocks of the same model family (norm and activation first) stay ungrouped.
  Mod pre{"PreActBlock", {bn(), relu_module(), conv(), bn(), relu_module(), conv(), op("aten::add")}, nullptr};
  CHECK(bare_score(model({pre, pre, pre})).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a pooling before a shortcut's conv and norm is the shortcut's downsampling") {
  // timm's ResNet-D: the first block of a stage averages, convs and norms its shortcut
  // (downsample = Sequential(AvgPool2d, Conv2d, BatchNorm2d)), computed after the residual
  // function and its drop path; the later blocks add their input back as it is.
  Mod cbr_seq[] = {conv(), bn(), relu_module()};
  Mod drop_path{"DropPath", {op("aten::new_empty"), op("aten::bernoulli_"), op("aten::div_"), op("aten::mul")}, nullptr};
  std::vector<Mod> body;
  for (int k = 0; k < 2; ++k)
    for (const Mod& m : cbr_seq) body.push_back(m);
  body.push_back(conv());
  body.push_back(bn());
  body.push_back(drop_path);
  Mod plain{"Bottleneck", body, nullptr};
  plain.items.push_back(op("aten::add_"));
  plain.items.push_back(relu_module());
  Mod down{"Bottleneck", body, nullptr};
  down.items.push_back(Mod{"Sequential", {leaf("AvgPool2d", {"aten::avg_pool2d"}), conv(), bn()}, nullptr});
  down.items.push_back(op("aten::add_"));
  down.items.push_back(relu_module());
  BareRun r = bare_run(model({conv(), bn(), relu_module(), down, plain, plain, down, plain, plain}));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks and their shortcuts
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Downsample 2: Pool + Conv + BatchNorm"));
}

TEST_CASE("inferred layers: a stack's last block that sums nothing back, before the head, is a block of its kind") {
  // MobileNetV2: inverted residuals (expand, depthwise, project), each stage's first changing
  // the width and summing nothing back; the last one changes it too, and the head's conv, norm
  // and activation follow it at once.
  Mod cna{"Conv2dNormActivation", {conv(), bn(), leaf("ReLU6", {"aten::hardtanh_"})}, nullptr};
  Mod f{"Sequential", {cna, cna, conv(), bn()}, nullptr};
  Mod widen{"InvertedResidual", {f}, nullptr};
  Mod same{"InvertedResidual", {f, op("aten::add")}, nullptr};
  Mod first{"InvertedResidual", {Mod{"Sequential", {cna, conv(), bn()}, nullptr}}, nullptr};  // no expansion
  const AccuracyScore s = bare_score(model({cna, first, widen, same, same, widen, same, same, widen, cna,
                                            leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), linear()}));
  // 32 blocks a forward (the inverted residuals, their Sequentials and steps), two forwards:
  // all but the first inverted residual, alone of its kind and summing nothing back.
  CHECK(s.blocks == 64);
  CHECK(s.block_recall == doctest::Approx(62.0 / 64.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a stage of two blocks, the first projecting, after the stem, is two blocks though no other stage runs their kind") {
  // BoTNet: a stem, then a stage of two bottlenecks (the first with a projection shortcut
  // computed after its branch), then a stage of bottlenecks whose middle conv is attention.
  Mod bottle{"Bottleneck", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), conv(), bn()}, nullptr};
  Mod attention = separate_qkv_attention();
  Mod bot{"BotBlock", {conv(), bn(), relu_module(), attention, bn(), relu_module(), conv(), bn()}, nullptr};
  Mod bottle_down = bottle, bot_down = bot;
  for (Mod* m : {&bottle_down, &bot_down}) m->items.push_back(Mod{"Sequential", {conv(), bn()}, nullptr});
  for (Mod* m : {&bottle, &bottle_down, &bot, &bot_down}) m->items.push_back(op("aten::add")), m->items.push_back(relu_module());
  BareRun r = bare_run(model({conv(), bn(), relu_module(), bottle_down, bottle, bot_down, bot, leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}),
                              op("aten::flatten"), linear()}));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the shortcuts' Sequentials (the blocks' children differ)
  CHECK(s.node_precision == doctest::Approx(1.0));
  // The first stage's two bottlenecks: the projecting one apart from the stem, then the plain one.
  CHECK(has_layer(r.annotation.tree, "Block 1: 4 Conv + 4 BatchNorm + 3 ReLU"));
  CHECK(has_layer(r.annotation.tree, "Block 2: 3 Conv + 3 BatchNorm + 3 ReLU"));
  // Each kind's stage, from its projecting block: two kinds with their variants, two stages.
  CHECK(has_layer(r.annotation.tree, "Stage 1: 2 blocks"));
  CHECK(has_layer(r.annotation.tree, "Stage 2: 2 blocks"));
}

TEST_CASE("inferred layers: a first stage of one block that keeps the width is that block apart from the stem") {
  // PSPNet's dilated ResNet with a stage of one bottleneck each: the first keeps the width (no
  // projection), the later ones project their shortcut.
  Mod bottle{"Bottleneck", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), conv(), bn()}, nullptr};
  Mod bottle_down = bottle;
  bottle_down.items.push_back(Mod{"Sequential", {conv(), bn()}, nullptr});
  for (Mod* m : {&bottle, &bottle_down}) m->items.push_back(op("aten::add_")), m->items.push_back(relu_module());
  Mod stem{"Sequential", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), leaf("MaxPool2d", {"aten::max_pool2d"})}, nullptr};
  BareRun r = bare_run(Mod{"PSPNet", {stem, bottle, bottle_down, bottle_down, bottle_down, leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}),
                                      op("aten::flatten"), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Block 1: 3 Conv + 3 BatchNorm + 3 ReLU"));
  CHECK(has_layer(r.annotation.tree, "Block 4: 4 Conv + 4 BatchNorm + 3 ReLU"));
}

TEST_CASE("inferred layers: a global pooling right before a conv and its norm is one step with them, a pyramid's bin") {
  // PSPNet's pyramid pooling: per bin a Sequential(AdaptiveAvgPool2d, Conv2d, BatchNorm2d,
  // ReLU), then the module upsamples it back; the bins and the map are concatenated.
  Mod bin{"Sequential", {leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), conv(), bn(), relu_module()}, nullptr};
  Mod ppm{"PPM", {}, nullptr};
  for (int k = 0; k < 4; ++k) ppm.items.push_back(bin), ppm.items.push_back(op("aten::upsample_bilinear2d"));
  ppm.items.push_back(op("aten::cat"));
  BareRun r = bare_run(Mod{"Net", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), ppm, conv(), bn(), relu_module(), conv()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the bins
  CHECK(has_layer(r.annotation.tree, "Pooling 4: Pool + Conv + BatchNorm + ReLU"));
}
