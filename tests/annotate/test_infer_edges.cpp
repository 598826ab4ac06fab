// Where inferred blocks begin and end, which of them pair into layers, what a block holds and
// the units written by hand inside them (core/annotate/infer_blocks.cpp, infer_block_edges.cpp,
// infer_tuples.cpp, infer_sublayers.cpp, infer_written.cpp, infer_graphs.cpp), scored against
// the module tree that made the ops, as in test_infer_layers.cpp.
#include "model_trace.h"

#include <doctest/doctest.h>

#include <vector>

using namespace strata;
using namespace strata::test;

namespace {

// A hierarchical vision transformer's stage (SegFormer's, PVT's): a patch embedding (a strided
// conv, its map flattened to tokens, a norm), pre-norm layers, then the stage's norm and its
// tokens laid back out as a map for the next stage (reshape, permute, contiguous).
std::vector<Mod> vision_stage(int layers) {
  std::vector<Mod> out{Mod{"PatchEmbed", {conv(), op("aten::flatten"), op("aten::transpose"), layer_norm()}, nullptr}};
  Mod mlp{"MLP", {linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  for (int i = 0; i < layers; ++i)
    out.push_back(Mod{"Layer", {layer_norm(), separate_qkv_attention(), op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr});
  out.push_back(layer_norm());
  for (const char* o : {"aten::reshape", "aten::permute", "aten::contiguous"}) out.push_back(op(o));
  return out;
}

}  // namespace

TEST_CASE("inferred layers: a view's contiguous copy stays with the view, out of the next stage's patch embedding") {
  Mod encoder{"Encoder", {}, nullptr};
  for (int s = 0; s < 3; ++s)
    for (Mod& m : vision_stage(2)) encoder.items.push_back(std::move(m));
  BareRun r = bare_run(Mod{"Net", {encoder, op("aten::mean"), linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each patch embedding exactly, its conv first
  CHECK(s.node_precision == doctest::Approx(1.0));  // a stage's norm and the views after it: no block of their own
}

TEST_CASE("inferred layers: a head after the layers that reads as their last half does not stop them pairing") {
  // MAE's pretraining forward: pre-norm nn.TransformerEncoderLayers, then its decoder head (a
  // LayerNorm and an MLP) and the target's normalisation ((t - mean) / (var + eps) ** 0.5):
  // the head, closed by that add, reads as one more feed-forward half after the last layer's.
  Mod tel{"TransformerEncoderLayer",
          {layer_norm(), multihead_attention(), dropout(), op("aten::add"), layer_norm(), linear(), op("aten::relu"), dropout(), linear(), dropout(),
           op("aten::add")},
          nullptr};
  Mod encoder{"TransformerEncoder", {tel, tel}, nullptr};
  Mod head{"Sequential", {layer_norm(), linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  Mod mae{"MAE", {linear(), op("aten::add"), op("aten::gather"), encoder, op("aten::scatter_"), head}, nullptr};
  for (const char* o : {"aten::mean", "aten::var", "aten::sub", "aten::add", "aten::pow", "aten::div"}) mae.items.push_back(op(o));
  BareRun r = bare_run(mae);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each encoder layer, its attention and feed-forward halves paired
}

TEST_CASE("inferred layers: two heads after a norm, summed, are no feed-forward half without its activation") {
  // DeiT distilled: pre-norm blocks, then the final norm, a head on the class token and one on
  // the distillation token, averaged: (head(x[:, 0]) + head_dist(x[:, 1])) / 2.
  Mod mlp{"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  Mod block{"Block", {layer_norm(), separate_qkv_attention(), op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr};
  Mod deit{"DeiT", {conv(), op("aten::flatten"), op("aten::transpose"), op("aten::cat"), op("aten::add"), block, block, block, layer_norm(),
                    op("aten::select"), linear(), op("aten::select"), linear(), op("aten::add"), op("aten::div")},
           nullptr};
  BareRun r = bare_run(deit);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));  // no block around the heads
}

TEST_CASE("inferred layers: a pre-activation block's residual function is computed inline, no module of its own") {
  // A Wide ResNet's blocks: bn1, F.relu, conv1, dropout, bn2, F.relu, conv2, the 1x1 shortcut
  // conv on the activated input where the width changes, the sum.
  auto wide_basic = [](bool shortcut) {
    Mod b{"WideBasic", {bn(), op("aten::relu"), conv(), dropout(), bn(), op("aten::relu"), conv()}, nullptr};
    if (shortcut) b.items.push_back(conv());
    b.items.push_back(op("aten::add"));
    return b;
  };
  Mod net{"WideResNet", {conv(), wide_basic(true), wide_basic(false), wide_basic(true), wide_basic(false), bn(), op("aten::relu"),
                         op("aten::adaptive_avg_pool2d"), op("aten::flatten"), linear()},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));  // no "Residual branch" inside the blocks
}

namespace {

// SpeechBrain's TDNNBlock: Conv1d, then ReLU, then BatchNorm1d, in that order.
Mod tdnn() { return Mod{"TDNNBlock", {conv1d(), leaf("ReLU", {"aten::relu"}), leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"})}, nullptr}; }

}  // namespace

TEST_CASE("inferred layers: a weight op, its activation and the norm of the activation are one module") {
  // An x-vector's frame layers: TDNNBlocks back to back, then pooling and a classifier.
  Mod net{"XVector", {op("aten::transpose"), tdnn(), tdnn(), tdnn(), tdnn(), op("aten::mean"), linear()}, nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each TDNNBlock: conv, ReLU, BatchNorm
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: sums between a split and the concatenation of its parts close no block") {
  // ECAPA-TDNN's SE-Res2Net blocks: a TDNN, the Res2Net (chunks; each part after the first
  // through a TDNN, from the third on with the part before's output added first; the parts
  // concatenated), a TDNN, squeeze-excitation, the residual sum.
  Mod res2net{"Res2NetBlock", {op("aten::chunk"), tdnn(), op("aten::add"), tdnn(), op("aten::add"), tdnn(), op("aten::cat")}, nullptr};
  Mod se{"SEBlock", {op("aten::mean"), conv1d(), leaf("ReLU", {"aten::relu_"}), conv1d(), leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul")},
         nullptr};
  Mod block{"SERes2NetBlock", {tdnn(), res2net, tdnn(), se, op("aten::add")}, nullptr};
  Mod net{"ECAPA", {op("aten::transpose"), tdnn(), block, block, block, op("aten::cat"), tdnn(), op("aten::mean"), linear()}, nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.85);  // each SE-Res2Net block and its TDNNs; not yet the Res2Net inside
  CHECK(s.node_precision == doctest::Approx(1.0));  // no block closed at a part's sum
}

TEST_CASE("inferred layers: a graph layer that norms its own sums keeps its last, and no MLP spans its attention") {
  // GraphGPS: each layer a local message passing (a sum over edges, (1 + eps) x, a Linear-ReLU-
  // Linear update) and a global attention over the nodes, each with its dropout, residual sum
  // and BatchNorm, then a feed-forward with its dropouts, residual sum and BatchNorm.
  Mod bn1d = leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"});
  Mod gps{"GPSLayer",
          {op("aten::zeros_like"), op("aten::index_select"), op("aten::index_add_"), op("aten::add"), op("aten::mul"), op("aten::add"), linear(),
           leaf("ReLU", {"aten::relu"}), linear(), dropout(), op("aten::add"), bn1d, op("aten::unsqueeze"), multihead_attention(),
           op("aten::squeeze"), dropout(), op("aten::add"), bn1d, op("aten::add"), linear(), leaf("ReLU", {"aten::relu"}), dropout(), linear(),
           dropout(), op("aten::add"), bn1d},
          nullptr};
  BareRun r = bare_run(Mod{"GraphGPS", {linear(), gps, gps, gps, linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each GPS layer through its last BatchNorm
  // No MLP from the update's Linear to the feed-forward's; the attentions take the squeeze
  // after them (13 of 16 layers right).
  CHECK(s.node_precision >= 0.8);
}

TEST_CASE("inferred layers: a MetaFormer's conv token mixer and MLP halves, StarReLU as one activation") {
  // CAFormer's first stages as timm writes them (channels last): MetaFormerBlocks of
  // res_scale1(x) + SepConv(norm1(x)), then res_scale2(x) + Mlp(norm2(x)); SepConv is pwconv1,
  // StarReLU (s * relu(x) ** 2 + b), the tokens permuted to a map for the depthwise conv and
  // back, pwconv2; the Mlp fc1, StarReLU, fc2. A downsampling (norm, conv) between stages.
  Mod star{"StarReLU", {op("aten::relu"), op("aten::pow"), op("aten::mul"), op("aten::add")}, nullptr};
  Mod sepconv{"SepConv", {linear(), star, op("aten::permute"), conv(), op("aten::permute"), linear()}, nullptr};
  Mod mlp{"Mlp", {linear(), star, linear()}, nullptr};
  Mod scale = leaf("Scale", {"aten::mul"});
  Mod block{"MetaFormerBlock", {scale, layer_norm(), sepconv, op("aten::add"), scale, layer_norm(), mlp, op("aten::add")}, nullptr};
  Mod down{"Downsampling", {layer_norm(), op("aten::permute"), conv(), op("aten::permute")}, nullptr};
  Mod net{"CAFormer", {op("aten::permute"), conv(), op("aten::permute"), Mod{"Sequential", {block, block}, nullptr},
                       Mod{"Sequential", {down, block, block}, nullptr}, op("aten::mean"), layer_norm(), linear()},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each block, its SepConv and its Mlp without their norms, each stage
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: branches concatenated, fused by one conv and summed back are one block") {
  // EfficientViT's context modules: a 1x1 qkv conv, its multi-scale aggregation (a depthwise
  // and a grouped 1x1 conv) concatenated with it, a ReLU linear attention normalised by its
  // last channel (plus an epsilon), the projection conv and its norm, summed back to the
  // input; each then an MBConv with its residual.
  Mod lite{"LiteMLA",
           {conv(), Mod{"Sequential", {conv(), conv()}, nullptr}, op("aten::cat"), op("aten::reshape"), op("aten::transpose"), op("aten::relu"),
            op("aten::relu"), op("aten::pad"), op("aten::matmul"), op("aten::matmul"), op("aten::slice"), op("aten::add"), op("aten::div"),
            op("aten::reshape"), conv(), bn()},
           nullptr};
  Mod hswish = leaf("Hardswish", {"aten::hardswish"});
  Mod mbconv{"MBConv",
             {Mod{"ConvLayer", {conv(), bn(), hswish}, nullptr}, Mod{"ConvLayer", {conv(), bn(), hswish}, nullptr}, Mod{"ConvLayer", {conv(), bn()}, nullptr},
              op("aten::add")},
             nullptr};
  Mod block{"EfficientViTBlock", {lite, op("aten::add"), mbconv}, nullptr};
  BareRun r = bare_run(Mod{"Net", {conv(), bn(), hswish, block, block, block, op("aten::mean"), linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  // Each EfficientViTBlock exactly, 3 of the 7 repeated modules: not yet the LiteMLA and the
  // MBConv inside it (the MBConv taken without its sum), nor their inner modules.
  CHECK(s.block_recall >= 3.0 / 7 - 1e-9);
  CHECK(s.node_precision >= 0.9);
}

TEST_CASE("inferred layers: a normalisation written by hand with no weight is its caller's computation, no norm module") {
  // The Time-Series-Library's forecasters normalise each series in their forward: means
  // subtracted, divided by the standard deviation (var + eps, sqrt), no learned scale. Then a
  // pre-norm encoder whose RMSNorms, written by hand, do scale by their weight.
  Mod rms{"RMSNorm", {op("aten::pow"), op("aten::mean"), op("aten::add"), op("aten::rsqrt"), op("aten::mul"), op("aten::mul")}, nullptr};
  Mod mlp{"MLP", {linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  Mod layer{"Layer", {rms, separate_qkv_attention(), op("aten::add"), rms, mlp, op("aten::add")}, nullptr};
  Mod net{"Forecaster",
          {op("aten::mean"), op("aten::detach"), op("aten::sub"), op("aten::var"), op("aten::add"), op("aten::sqrt"), op("aten::div"),
           op("aten::permute"), linear(), layer, layer, rms, linear(), op("aten::permute"), op("aten::mul"), op("aten::add")},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));  // no LayerNorm made of the series' normalisation
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // each RMSNorm one
}

TEST_CASE("inferred layers: a split's parts concatenated inside a residual block close no block") {
  // InceptionNeXt's MetaNeXtBlocks: the token mixer splits the channels four ways, three parts
  // through depthwise convs (square, horizontal and vertical bands), the parts concatenated;
  // then a BatchNorm, a ConvMlp, the layer scale and the residual sum. The concatenation, with
  // a norm after it, would open a block of its own.
  Mod mixer{"InceptionDWConv2d", {op("aten::split_with_sizes"), conv(), conv(), conv(), op("aten::cat")}, nullptr};
  Mod mlp{"ConvMlp", {conv(), leaf("GELU", {"aten::gelu"}), conv()}, nullptr};
  Mod block{"MetaNeXtBlock", {mixer, bn(), mlp, op("aten::reshape"), op("aten::mul"), op("aten::add")}, nullptr};
  Mod down{"Sequential", {bn(), conv()}, nullptr};
  BareRun r = bare_run(Mod{"InceptionNeXt", {conv(), relu_module(), block, block, block, down, block, block, block, op("aten::mean"), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  // Each MetaNeXtBlock from its split to its sum, 6 of the 18 repeated modules: not yet the
  // mixer, whose convs read as a branch between the split and the concatenation (ShuffleNet's
  // layout), nor the ConvMlp, its convs and GELU the block's own.
  CHECK(s.block_recall >= 1.0 / 3 - 1e-9);
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a layer norm written with its weight applied before the root is one norm") {
  // Conv-TasNet's global layer norm: gamma[:, None] * (x - mean) / (var + eps).sqrt() +
  // beta[:, None], so Python runs the weight's views, the centring and the product before the
  // epsilon's sum, the root and the division; between the separator's convs and PReLUs.
  Mod gln{"GlobLN",
          {op("aten::mean"), op("aten::sub"), op("aten::pow"), op("aten::mean"), op("aten::slice"), op("aten::unsqueeze"), op("aten::sub"),
           op("aten::mul"), op("aten::add"), op("aten::sqrt"), op("aten::div"), op("aten::slice"), op("aten::unsqueeze"), op("aten::add")},
          nullptr};
  Mod prelu = leaf("PReLU", {"aten::prelu"});
  Mod net{"Separator", {conv1d(), prelu, gln, conv1d(), prelu, gln, conv1d(), prelu, gln, conv1d()}, nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  // Each GlobLN one norm, not loose arithmetic in a block of the conv and PReLU before it.
  for (const char* norm : {"LayerNorm 1", "LayerNorm 2", "LayerNorm 3"}) CHECK(has_layer(r.annotation.tree, norm));
  CHECK_FALSE(has_layer(r.annotation.tree, "Block 1: Conv + PReLU"));
  // Nor is a norm over the features after an activation grouped with the conv before it, as a
  // BatchNorm there is (a TDNN's): Conv-TasNet's encoder conv, F.relu, then the separator's norm.
  BareRun t = bare_run(Mod{"ConvTasNet", {conv1d(), op("aten::relu"), gln, conv1d(), op("aten::sigmoid"), op("aten::mul")}, nullptr});
  CHECK(has_layer(t.annotation.tree, "LayerNorm 1"));
  CHECK_FALSE(has_layer(t.annotation.tree, "Conv-Norm 1: Conv + ReLU + LayerNorm"));
}

TEST_CASE("inferred layers: a weight's demodulation and noise injected are no residual joins") {
  // StyleGAN2's StyledConvs: the style's Linear, the conv weight modulated and demodulated
  // (w * s, then * rsqrt(w.pow(2).sum() + eps)), one conv; noise drawn and added with its
  // weight (NoiseInjection); a bias and LeakyReLU.
  Mod modconv{"ModulatedConv2d",
              {linear(), op("aten::view"), op("aten::mul"), op("aten::mul"), op("aten::pow"), op("aten::sum"), op("aten::add"), op("aten::rsqrt"),
               op("aten::view"), op("aten::mul"), op("aten::view"), op("aten::reshape"), conv(), op("aten::view")},
              nullptr};
  Mod noise{"NoiseInjection", {op("aten::new_empty"), op("aten::normal_"), op("aten::mul"), op("aten::add")}, nullptr};
  Mod styled{"StyledConv", {modconv, noise, op("aten::add"), leaf("LeakyReLU", {"aten::leaky_relu"})}, nullptr};
  BareRun r = bare_run(Mod{"Synthesis", {linear(), leaf("LeakyReLU", {"aten::leaky_relu"}), op("aten::repeat"), styled, styled, styled, styled},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision >= 0.9);
  CHECK(s.block_recall >= 0.5 - 1e-9);  // each StyledConv; not yet the ModulatedConv2d inside
  for (const char* layer : {"Noise 1", "Noise 4"}) CHECK(has_layer(r.annotation.tree, layer));  // the draw, its weight and the sum
}

TEST_CASE("inferred layers: an encoder of one kind of block repeated, strided convs between, is that many blocks") {
  // nnU-Net's PlainConvUNet: encoder stages of two Conv-InstanceNorm-LeakyReLU each, the first
  // conv strided (no pooling between stages); the decoder a transposed conv, the skip's
  // concatenation and the same two convs; a 1x1 segmentation conv.
  auto cna = [] {
    return Mod{"ConvDropoutNormReLU", {conv(), leaf("InstanceNorm2d", {"aten::instance_norm"}), leaf("LeakyReLU", {"aten::leaky_relu_"})},
               nullptr};
  };
  Mod stage{"StackedConvBlocks", {Mod{"Sequential", {cna(), cna()}, nullptr}}, nullptr};
  Mod up = leaf("ConvTranspose2d", {"aten::conv_transpose2d"});
  Mod net{"PlainConvUNet", {stage, stage, stage, stage, up, op("aten::cat"), stage, up, op("aten::cat"), stage, up, op("aten::cat"), stage, conv()},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each stage, encoder's and decoder's
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a module of one weight op that computes before it, called again, is a block each call") {
  // DGCNN's EdgeConvs: each finds every point's k nearest neighbours (pairwise distances, top-k),
  // gathers them and builds the edge features, then one Conv2d, BatchNorm2d and LeakyReLU, and
  // the max over the neighbours; three of them, then an embedding conv and a head.
  Mod edge{"EdgeConv",
           {op("aten::transpose"), op("aten::matmul"), op("aten::mul"), op("aten::pow"), op("aten::sum"), op("aten::neg"), op("aten::sub"),
            op("aten::topk"), op("aten::arange"), op("aten::add"), op("aten::index"), op("aten::repeat"), op("aten::sub"), op("aten::cat"),
            op("aten::permute"), Mod{"Sequential", {conv(), bn(), leaf("LeakyReLU", {"aten::leaky_relu"})}, nullptr}, op("aten::max")},
           nullptr};
  BareRun r = bare_run(Mod{"DGCNN", {edge, edge, edge, op("aten::cat"), conv1d(), op("aten::max"), linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each EdgeConv from its neighbour search to its max, and its Sequential
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a reflection padding is a layer of its own, its conv's module with it") {
  // fast_neural_style's TransformerNet: ConvLayers (nn.ReflectionPad2d, then Conv2d), each
  // followed by the net's InstanceNorm2d and ReLU; residual blocks of two; UpsampleConvLayers
  // (F.interpolate, then the padding and the conv). And CycleGAN's ResNet generator, the same
  // steps as one flat Sequential.
  auto in = [] { return leaf("InstanceNorm2d", {"aten::instance_norm"}); };
  auto padded = [] {
    return Mod{"ConvLayer", {Mod{"ReflectionPad2d", {op("aten::pad", {"aten::reflection_pad2d"})}, nullptr}, conv()}, nullptr};
  };
  Mod res{"ResidualBlock", {padded(), in(), relu_module(), padded(), in(), op("aten::add")}, nullptr};
  Mod up{"UpsampleConvLayer", {op("aten::upsample_nearest2d"), Mod{"ReflectionPad2d", {op("aten::pad", {"aten::reflection_pad2d"})}, nullptr}, conv()},
         nullptr};
  BareRun r = bare_run(Mod{"TransformerNet", {padded(), in(), relu_module(), padded(), in(), relu_module(), res, res, res, up, in(), relu_module(),
                                              up, in(), relu_module(), padded()},
                           nullptr});
  AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // the padding no view of the conv's
  CHECK(s.block_recall == doctest::Approx(1.0));  // each ConvLayer, residual block and UpsampleConvLayer
  CHECK(s.node_precision == doctest::Approx(1.0));
  Mod flat{"Sequential", {}, nullptr};
  for (int i = 0; i < 4; ++i)
    for (Mod m : {Mod{"ReflectionPad2d", {op("aten::pad", {"aten::reflection_pad2d"})}, nullptr}, conv(), in(), relu_module()})
      flat.items.push_back(std::move(m));
  r = bare_run(Mod{"ResnetGenerator", {flat}, nullptr});
  s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // every module one op: no two in one layer
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: an RNN given a packed sequence reads its batch size and restores its order as its own") {
  // NARM's encoder: embeddings, their dropout, pack_padded_sequence, nn.GRU (which reads
  // batch_sizes[0] to the host before its op and, the sequence unsorted, puts its state back
  // in the batch's order after it), pad_packed_sequence, then the attention's Linears.
  Mod gru = leaf("GRU", {"aten::select", "aten::item", "aten::select", "aten::as_strided", "aten::item", "aten::gru", "aten::index_select"});
  BareRun r = bare_run(Mod{"NARM",
                           {leaf("Embedding", {"aten::embedding"}), dropout(), op("aten::_pack_padded_sequence"), gru,
                            op("aten::_pad_packed_sequence"), op("aten::select"), op("aten::permute"), linear(), linear(), op("aten::add"),
                            leaf("Sigmoid", {"aten::sigmoid"}), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // the reads and the GRU one unit
}

TEST_CASE("inferred layers: features and their cheap copies concatenated and cut back are one module") {
  // GhostNet's bottlenecks: GhostModules (a 1x1 Conv-BN-ReLU, a depthwise Conv-BN-ReLU on its
  // output, the two concatenated and sliced to the width wanted), the second without ReLUs;
  // a stride-2 bottleneck adds a depthwise Conv-BN between and a projection shortcut. Stages
  // of one stride-2 bottleneck and one plain one.
  auto step = [](bool act) {
    Mod s{"Sequential", {conv(), bn()}, nullptr};
    if (act) s.items.push_back(relu_module());
    return s;
  };
  auto ghost = [&](bool act) { return Mod{"GhostModule", {step(act), step(act), op("aten::cat"), op("aten::slice")}, nullptr}; };
  Mod same{"GhostBottleneck", {ghost(true), ghost(false), op("aten::add")}, nullptr};
  Mod down{"GhostBottleneck", {ghost(true), Mod{"Sequential", {conv(), bn()}, nullptr}, ghost(false),
                               Mod{"Sequential", {conv(), bn(), conv(), bn()}, nullptr}, op("aten::add")},
           nullptr};
  Mod net{"GhostNet", {conv(), bn(), relu_module(), same}, nullptr};
  for (int i = 0; i < 3; ++i) net.items.insert(net.items.end(), {down, same});
  net.items.insert(net.items.end(), {op("aten::mean"), linear()});
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.9);  // every bottleneck and GhostModule; not yet the two-step shortcut
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Ghost module 8: 2 Conv-Norm + cat"));
}

TEST_CASE("inferred layers: a conv on an MLP's tokens laid out as a map is one module with its reshapes") {
  // PVT v2's and SegFormer's feed-forward: fc1, DWConv (the tokens transposed and viewed as a
  // map, a depthwise conv, flattened and transposed back), GELU, fc2; pre-norm layers of an
  // attention and that feed-forward.
  Mod dwconv{"DWConv", {op("aten::transpose"), op("aten::view"), conv(), op("aten::flatten"), op("aten::transpose")}, nullptr};
  Mod mlp{"Mlp", {linear(), dwconv, leaf("GELU", {"aten::gelu"}), dropout(), linear(), dropout()}, nullptr};
  Mod layer{"Block", {layer_norm(), separate_qkv_attention(), op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"PVTv2", {linear(), layer_norm(), layer, layer, layer, layer_norm(), op("aten::mean"), linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each layer, its MLP and its DWConv
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // the flatten a view of the DWConv's, no nn.Flatten
}

TEST_CASE("inferred layers: residual units whose first opens with its weight op activate after their sum") {
  // Deep Crossing's residual units (FuxiCTR's ResidualBlock): Linear, ReLU, Linear, the sum,
  // then the ReLU module again; after the stacked embeddings and their flatten, and before the
  // scoring Linear and its Sigmoid.
  Mod unit{"ResidualBlock", {Mod{"Sequential", {linear(), relu_module(), linear()}, nullptr}, op("aten::add"), relu_module()}, nullptr};
  Mod net{"DeepCrossing", {leaf("Embedding", {"aten::embedding"}), leaf("Embedding", {"aten::embedding"}), op("aten::stack"), op("aten::flatten")},
          nullptr};
  for (int i = 0; i < 3; ++i) net.items.push_back(unit);
  net.items.insert(net.items.end(), {linear(), leaf("Sigmoid", {"aten::sigmoid"})});
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each unit from its first Linear to its ReLU
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the norm of branches summed with the input is the block's own") {
  // RepViT's token mixer RepVGGDW: bn((conv_bn(x) + conv1(x)) + x), between channel mixers
  // (Residual: Conv2d_BN, GELU, Conv2d_BN, the sum).
  auto conv_bn = [] { return Mod{"Conv2d_BN", {conv(), bn()}, nullptr}; };
  Mod dw{"RepVGGDW", {conv_bn(), conv(), op("aten::add"), op("aten::add"), bn()}, nullptr};
  Mod channel{"Residual", {Mod{"Sequential", {conv_bn(), leaf("GELU", {"aten::gelu"}), conv_bn()}, nullptr}, op("aten::add")}, nullptr};
  Mod net{"RepViT", {conv_bn(), leaf("GELU", {"aten::gelu"}), conv_bn()}, nullptr};
  for (int i = 0; i < 4; ++i) net.items.insert(net.items.end(), {dw, channel});
  net.items.insert(net.items.end(), {op("aten::mean"), linear()});
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision == doctest::Approx(1.0));  // each RepVGGDW ends at its BatchNorm, no block opens there
  // (Not yet each Conv2d_BN: the GELU after one is grouped with it, as a Sequential's would be.)
}

TEST_CASE("inferred layers: a ghost batch norm and a GLU written by hand are one unit each") {
  // TabNet's GLU_Layer: a Linear, GBN (the batch chunked, one BatchNorm1d applied to each
  // chunk, concatenated back), then x[:, :d] * torch.sigmoid(x[:, d:]); GLU_Blocks of two, the
  // second summed back and scaled ((x + glu(x)) * sqrt(0.5)).
  Mod gbn{"GBN", {op("aten::chunk")}, nullptr};
  for (int c = 0; c < 4; ++c) gbn.items.push_back(leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"}));
  gbn.items.push_back(op("aten::cat"));
  Mod glu{"GLU_Layer", {linear(), gbn, op("aten::slice"), op("aten::slice"), op("aten::sigmoid"), op("aten::mul")}, nullptr};
  Mod block{"GLU_Block", {glu, glu, op("aten::add"), op("aten::mul")}, nullptr};
  BareRun r = bare_run(Mod{"TabNetEncoder", {leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"}), block, block, block, linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.5 - 1e-9);  // each GBN and GLU_Layer; not yet each GLU_Block
  for (const char* layer : {"Ghost BatchNorm 1", "GLU 6"}) CHECK(has_layer(r.annotation.tree, layer));
}

TEST_CASE("inferred layers: between message-passing layers the activation and dropout are the model's own ops") {
  // PyTorch Geometric's examples: x = F.dropout(F.relu(conv(x)), training=self.training)
  // between GCNConvs (transform, the normalised adjacency's sparse product, bias), then
  // log_softmax.
  Mod gcn{"GCNConv", {linear(), op("aten::_sparse_mm"), op("aten::add")}, nullptr};
  Mod net{"GCN", {}, nullptr};
  for (int k = 0; k < 3; ++k) net.items.insert(net.items.end(), {gcn, op("aten::relu"), op("aten::dropout")});
  net.items.insert(net.items.end(), {gcn, op("aten::log_softmax")});
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // the relus and dropouts one leaf, the model's
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a linear's resolve_conj a tick after it is one op of its module") {
  Mod ffn{"FFN", {dropout(), linear(), relu_module(), dropout(), Mod{"Linear", {op("aten::linear"), rounded_child("aten::resolve_conj", 0, 1)}, nullptr}}, nullptr};
  BareRun r = bare_run(Mod{"Net", {conv(), bn(), relu_module(), op("aten::mean"), ffn}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));  // not a loose op of the model after the head
}

TEST_CASE("inferred layers: a weight set in place before its conv is the conv's module") {
  // PixelCNN's MaskedConv2d: self.weight.data *= self.mask (mul_, then the .data assignment's
  // _has_compatible_shallow_copy_type), then the conv; in residual blocks of ReLU and convs.
  Mod masked{"MaskedConv2d", {op("aten::mul_"), op("aten::_has_compatible_shallow_copy_type"), op("aten::conv2d")}, nullptr};
  Mod relu{"ReLU", {op("aten::relu")}, nullptr};
  Mod net{"PixelCNN", {masked}, nullptr};
  for (int k = 0; k < 3; ++k)
    net.items.push_back(Mod{"ResidualBlock", {Mod{"Sequential", {relu, conv(), relu, masked, relu, conv()}, nullptr}, op("aten::add")}, nullptr});
  net.items.insert(net.items.end(), {relu, conv()});
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));  // no relu holding the mask's mul_
}

TEST_CASE("inferred layers: soft-gated experts alike on one input are a block each, from the backward's gradient sums") {
  // PLE's and MMoE's experts as DeepCTR writes them: each a DNN of (Linear, ReLU, Dropout)
  // twice, all on the concatenated embeddings, stacked; then a gate per task (a Linear, its
  // softmax, the weighted sum) and a tower. Repetition alone cuts them at each Linear.
  Mod layer_pair{"DNN", {linear(), relu_module(), dropout(), linear(), relu_module(), dropout()}, nullptr};
  Mod net{"PLE", {leaf("Embedding", {"aten::embedding"}), leaf("Embedding", {"aten::embedding"}), op("aten::cat")}, nullptr};
  for (int k = 0; k < 4; ++k) net.items.push_back(shared_input(layer_pair));
  net.items.push_back(op("aten::stack"));
  for (int task = 0; task < 2; ++task)
    net.items.insert(net.items.end(), {shared_input(linear()), op("aten::softmax"), op("aten::unsqueeze"), op("aten::matmul"),
                                       op("aten::squeeze"), linear(), op("aten::sigmoid")});
  StepOps autograd;
  autograd.backward_nodes = true;
  BareRun r = bare_run(net, autograd);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each expert's DNN exactly
}

TEST_CASE("inferred layers: an attention that writes its weighted sum into the output by index keeps its out-projection") {
  // Informer's ProbAttention inside its AttentionLayer: the projections, the sampled scores,
  // the top queries' softmax and weighted sum written into a mean context by index
  // (context[b, h, top, :] = attn @ v), then the out-projection.
  Mod prob{"ProbAttention",
           {op("aten::transpose"), op("aten::matmul"), op("aten::topk"), op("aten::mean"), op("aten::matmul"), op("aten::softmax"),
            op("aten::matmul"), op("aten::arange"), op("aten::unsqueeze"), op("aten::index_put_"), op("aten::transpose"),
            op("aten::contiguous")},
           nullptr};
  Mod attention{"AttentionLayer", {linear(), op("aten::view"), linear(), op("aten::view"), linear(), op("aten::view"), prob, op("aten::view"), linear()},
                nullptr};
  Mod layer{"EncoderLayer", {layer_norm(), attention, dropout(), op("aten::add"), layer_norm(), linear(), leaf("GELU", {"aten::gelu"}), linear(), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"Informer", {linear(), layer, layer, layer_norm(), linear()}, nullptr});
  const AnnotationTree& t = r.annotation.tree;
  bool found = false;
  for (NodeId n = 0; n < t.size(); ++n) {
    if (!t.name_of(n).starts_with("Attention ")) continue;
    found = true;
    const std::vector<std::string> kids = child_names(t, n);
    CHECK(std::count_if(kids.begin(), kids.end(), [](const std::string& c) { return c.starts_with("Linear"); }) == 4);
  }
  CHECK(found);
}

TEST_CASE("inferred layers: a decoder's time steps, unrolled in Python around RNN cells, are no blocks") {
  // LAS's speller: per step the token's embedding and the last context concatenated, two
  // LSTMCells, attention over the listener's keys and values (bmm, softmax, bmm), the state
  // and context concatenated into the character classifier; no module wraps a step.
  Mod speller{"Speller", {}, nullptr};
  for (int step = 0; step < 4; ++step)
    speller.items.insert(speller.items.end(),
                         {leaf("Embedding", {"aten::embedding"}), op("aten::cat"), leaf("LSTMCell", {"aten::lstm_cell"}),
                          leaf("LSTMCell", {"aten::lstm_cell"}),
                          Mod{"Attention", {op("aten::unsqueeze"), op("aten::bmm"), op("aten::softmax"), op("aten::bmm"), op("aten::squeeze")}, nullptr},
                          op("aten::cat"), linear()});
  BareRun r = bare_run(Mod{"LAS", {leaf("LSTM", {"aten::lstm"}), linear(), linear(), speller}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision == doctest::Approx(1.0));  // no "Block: 2 LSTM + Attention" per step
}

TEST_CASE("inferred layers: two heads on one input end no MLP run, from the backward's gradient sums") {
  // PyTorch's VAE example: F.relu(fc1(x)), then fc21 and fc22 on it (mean and log-variance),
  // the reparameterisation, F.relu(fc3(z)), sigmoid(fc4(h3)). No module groups a Linear, its
  // relu and a head.
  Mod vae{"VAE", {linear(), op("aten::relu"), shared_input(linear()), linear(), op("aten::randn_like"), op("aten::mul"), op("aten::exp"),
                  op("aten::mul"), op("aten::add"), linear(), op("aten::relu"), linear(), op("aten::sigmoid")},
          nullptr};
  StepOps autograd;
  autograd.backward_nodes = true;
  BareRun r = bare_run(vae, autograd);
  CHECK_FALSE(has_layer(r.annotation.tree, "MLP 1: Linear + ReLU + Linear"));
}

TEST_CASE("inferred layers: convs of several kernel sizes on one input, stacked and averaged, are one module") {
  // TimesNet's Inception_Block_V1: torch.stack([k(x) for k in self.kernels], -1).mean(-1), twice
  // with a GELU between, in each block; the backward shows each conv but the last sharing x, and
  // the last too in the first, whose input the block's residual sum takes as well.
  Mod kernels{"Inception_Block_V1", {shared_input(conv()), shared_input(conv()), conv(), op("aten::stack"), op("aten::mean")}, nullptr};
  Mod first_kernels{"Inception_Block_V1", {shared_input(conv()), shared_input(conv()), shared_input(conv()), op("aten::stack"), op("aten::mean")},
                    nullptr};
  Mod block{"TimesBlock", {op("aten::reshape"), op("aten::permute"), Mod{"Sequential", {first_kernels, leaf("GELU", {"aten::gelu"}), kernels}, nullptr},
                           op("aten::permute"), op("aten::reshape"), op("aten::add")},
            nullptr};
  StepOps autograd;
  autograd.backward_nodes = true;
  BareRun r = bare_run(Mod{"TimesNet", {linear(), block, layer_norm(), block, layer_norm(), linear()}, nullptr}, autograd);
  CHECK(has_layer(r.annotation.tree, "Parallel convs 4"));  // two per block, with their stack and mean
  const AnnotationTree& t = r.annotation.tree;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.name_of(n).starts_with("Parallel convs")) CHECK(child_names(t, n).size() == 5);  // three convs, the stack, the mean
}

TEST_CASE("inferred layers: x * sigmoid(x) written by hand is one activation, a squeeze-excitation's scaling is not") {
  // A speech encoder's feed-forward modules with a Swish module (the backward shows the
  // sigmoid's input taken by the product too), then a conv block with a squeeze-excitation
  // whose sigmoid scales the block's input.
  Mod swish{"Swish", {shared_input(op("aten::sigmoid")), op("aten::mul")}, nullptr};
  Mod ff{"FeedForwardModule", {layer_norm(), linear(), swish, dropout(), linear(), dropout()}, nullptr};
  Mod layer{"Layer", {ff, op("aten::mul"), op("aten::add"), layer_norm()}, nullptr};
  StepOps autograd;
  autograd.backward_nodes = true;
  BareRun r = bare_run(Mod{"Encoder", {linear(), layer, layer, layer, linear()}, nullptr}, autograd);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "SiLU 1"));

  Mod se{"SqueezeExcitation", {op("aten::adaptive_avg_pool2d"), conv(), relu_module(), conv(), leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul")}, nullptr};
  BareRun with_se = bare_run(Mod{"Net", {conv(), bn(), relu_module(), se, conv(), bn(), relu_module(), se, linear()}, nullptr}, autograd);
  CHECK_FALSE(has_layer(with_se.annotation.tree, "SiLU 1"));
  CHECK(has_layer(with_se.annotation.tree, "Sigmoid 1"));
}

TEST_CASE("inferred layers: a NAS search's mixed edges, candidates weighted and summed one by one, are a block each") {
  // DARTS' search network: per edge, the architecture weights unbound, then sum(w * op(x)) over
  // a zero op (x.mul(0.), strided first in a reduction), the identity, pools with their norms,
  // a separable and a dilated conv; the cell sums its edges and concatenates its states.
  auto seq = [](const char* cls, std::vector<Mod> items) { return Mod{cls, std::move(items), nullptr}; };
  auto relu = [] { return leaf("ReLU", {"aten::relu"}); };
  auto mixed = [&](bool reduction) {
    Mod zero = reduction ? leaf("Zero", {"aten::slice", "aten::slice", "aten::mul"}) : leaf("Zero", {"aten::mul"});
    Mod sep = seq("SepConv", {seq("Sequential", {relu(), conv(), conv(), bn(), relu(), conv(), conv(), bn()})});
    Mod dil = seq("DilConv", {seq("Sequential", {relu(), conv(), conv(), bn()})});
    Mod edge{"MixedOp", {op("aten::unbind"), zero, op("aten::mul"), op("aten::add")}, nullptr};
    edge.items.insert(edge.items.end(), {op("aten::mul"), op("aten::add")});  // the identity
    for (Mod m : {seq("Sequential", {leaf("MaxPool2d", {"aten::max_pool2d"}), bn()}), seq("Sequential", {leaf("AvgPool2d", {"aten::avg_pool2d"}), bn()}), sep, dil})
      edge.items.insert(edge.items.end(), {m, op("aten::mul"), op("aten::add")});
    return edge;
  };
  auto cell = [&](bool reduction) {
    Mod c{"Cell", {seq("ReLUConvBN", {seq("Sequential", {relu(), conv(), bn()})}), seq("ReLUConvBN", {seq("Sequential", {relu(), conv(), bn()})})}, nullptr};
    for (int step = 0; step < 2; ++step)  // a step sums an edge from each state so far: two, then three
      for (int e = 0; e < 2 + step; ++e) c.items.insert(c.items.end(), {op("aten::select"), mixed(reduction), op("aten::add")});
    c.items.push_back(op("aten::cat"));
    return c;
  };
  Mod net{"Network",
          {conv(), bn(), op("aten::softmax"), cell(false), op("aten::softmax"), cell(true), cell(false),
           leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), linear()},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.85);  // the mixed edges, their candidates of two units or more (the cells are not found)
  CHECK(has_layer(r.annotation.tree, "Mixed op 1: 6 candidates"));
  CHECK(s.node_precision >= 0.9);
}

TEST_CASE("inferred layers: a sine of a learned frequency between weight ops is one activation, positions' sines are not") {
  // An implicit filter (Hyena's, a SIREN's): Linear, Sin (sin(freq * x)), Linear, Sin, Linear,
  // over positions encoded by sines first (t * freqs, sin and cos: no weight op before them).
  Mod sin_act{"Sin", {op("aten::mul"), op("aten::sin")}, nullptr};
  Mod encoding{"PositionalEmbedding", {op("aten::arange"), op("aten::mul"), op("aten::sin"), op("aten::cos"), op("aten::cat")}, nullptr};
  Mod filter{"ImplicitFilter", {linear(), sin_act, linear(), sin_act, linear()}, nullptr};
  BareRun r = bare_run(Mod{"Net", {encoding, filter, linear()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Sin 2"));
  CHECK_FALSE(has_layer(r.annotation.tree, "Sin 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the same MLP run four times inside one layer is four modules (a soft mixture of experts)") {
  // Soft MoE in a pre-norm ViT block: the slots dispatched (einsum, softmaxes written by hand,
  // einsum), each
  // expert's MLP on its slots (a slice, Linear, GELU, Dropout, Linear, Dropout), stacked and
  // combined (einsum), then the residual sum.
  Mod expert{"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), dropout(), linear(), dropout()}, nullptr};
  Mod moe{"SoftMoE", {op("aten::einsum")}, nullptr};
  for (int sm = 0; sm < 2; ++sm)
    for (const char* o : {"aten::amax", "aten::sub", "aten::exp", "aten::sum", "aten::div"}) moe.items.push_back(op(o));
  moe.items.push_back(op("aten::einsum"));
  for (int e = 0; e < 4; ++e) moe.items.insert(moe.items.end(), {op("aten::slice"), op("aten::select"), expert});
  moe.items.insert(moe.items.end(), {op("aten::stack"), op("aten::einsum")});
  Mod block{"Block", {layer_norm(), separate_qkv_attention(), op("aten::add"), layer_norm(), moe, op("aten::add")}, nullptr};
  Mod vit{"ViT", {conv(), op("aten::flatten"), op("aten::transpose"), block, block, block, layer_norm(), linear()}, nullptr};
  BareRun r = bare_run(vit);
  CHECK(has_layer(r.annotation.tree, "MLP 12: Linear + GELU + Dropout + Linear + Dropout"));  // four in each of the three layers
  CHECK_FALSE(has_layer(r.annotation.tree, "MLP 13: Linear + GELU + Dropout + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision > 0.8);
}

TEST_CASE("inferred layers: a weight standardised by hand before each conv is the conv's, an input normalised once is not") {
  // BiT's StdConv2d as TransUNet writes it (var_mean of the weight, w - m, v + eps, the root,
  // the division, F.conv2d) in pre-activation bottlenecks: GroupNorm, ReLU, conv, three times.
  Mod std_conv = leaf("StdConv2d", {"aten::var_mean", "aten::sub", "aten::add", "aten::sqrt", "aten::div", "aten::conv2d"});
  Mod gn = leaf("GroupNorm", {"aten::group_norm"});
  Mod unit{"PreActBottleneck", {gn, relu_module(), std_conv, gn, relu_module(), std_conv, gn, relu_module(), std_conv, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"ResNetV2", {std_conv, gn, relu_module(), unit, unit, unit, linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));

  // A series normalised once (mean, x - m, var, + eps, root, division) before its embedding's
  // conv: the model's own ops, no conv's.
  Mod embed = leaf("TokenEmbedding", {"aten::conv1d"});
  Mod series{"Model", {op("aten::var_mean"), op("aten::sub"), op("aten::add"), op("aten::sqrt"), op("aten::div"), embed, linear(),
                       leaf("GELU", {"aten::gelu"}), linear()},
             nullptr};
  BareRun once = bare_run(series);
  CHECK(score_against(*once.bare.model, once.annotation, once.truth).leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a weight op scaled by hand, its input's product before it and its bias's sum after, is one unit") {
  // ProGAN's WSConv2d, conv(x * scale) + bias.view(1, -1, 1, 1), each followed by a LeakyReLU
  // and a PixelNorm, x / sqrt(mean(x ** 2) + eps), with no weight of its own: ConvBlocks.
  Mod ws = leaf("WSConv2d", {"aten::mul", "aten::conv2d", "aten::view", "aten::add"});
  Mod lrelu = leaf("LeakyReLU", {"aten::leaky_relu"});
  Mod pixel = leaf("PixelNorm", {"aten::pow", "aten::mean", "aten::add", "aten::sqrt", "aten::div"});
  Mod block{"ConvBlock", {ws, lrelu, pixel, ws, lrelu, pixel}, nullptr};
  Mod initial{"Sequential", {pixel, leaf("ConvTranspose2d", {"aten::conv_transpose2d"}), lrelu, ws, lrelu, pixel}, nullptr};
  Mod up = leaf("Upsample", {"aten::upsample_nearest2d"});
  BareRun r = bare_run(Mod{"Generator", {initial, up, block, up, block, up, block, ws}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));

  // StyleGAN2's EqualConv2d (its weight scaled: a product, then the conv) before a
  // FusedLeakyReLU (the bias viewed and added, the activation, its gain).
  Mod equal = leaf("EqualConv2d", {"aten::mul", "aten::conv2d"});
  Mod fused = leaf("FusedLeakyReLU", {"aten::view", "aten::add", "aten::leaky_relu", "aten::mul"});
  BareRun g = bare_run(Mod{"Discriminator", {equal, fused, equal, fused, equal, fused, linear()}, nullptr});
  CHECK(score_against(*g.bare.model, g.annotation, g.truth).leaf_f1 == doctest::Approx(1.0));

  // One product before one conv is its caller's (a squeeze-excitation's scale), its bias apart.
  Mod one{"Net", {conv(), relu_module(), op("aten::mul"), conv(), op("aten::view"), op("aten::add"), linear()}, nullptr};
  BareRun n = bare_run(one);
  CHECK(score_against(*n.bare.model, n.annotation, n.truth).leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the embeddings' dropout after their position sum is theirs, no first layer's") {
  // A video ViT (ViViT's): the tubelets' conv, flattened, the class token joined, the positions
  // added, the dropout; then pre-norm layers. The sum is loose, so it leads the first layer's repeat
  // until trimmed, and the dropout under it must go too.
  Mod attention{"Attention",
                {leaf("Linear", {"aten::linear"}), op("aten::reshape"), op("aten::permute"), op("aten::unbind"), op("aten::transpose"),
                 op("aten::matmul"), op("aten::mul"), op("aten::softmax"), leaf("Dropout", {"aten::dropout"}), op("aten::matmul"),
                 op("aten::transpose"), op("aten::reshape"), leaf("Linear", {"aten::linear"}), leaf("Dropout", {"aten::dropout"})},
                nullptr};
  Mod mlp{"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), leaf("Dropout", {"aten::dropout"}), linear(), leaf("Dropout", {"aten::dropout"})},
          nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod block{"Block", {ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  Mod conv3d = leaf("Conv3d", {"aten::conv3d"});
  Mod embed{"TubeletEmbeddings", {op("aten::permute"), conv3d, conv3d, op("aten::flatten"), op("aten::transpose")}, nullptr};
  BareRun r = bare_run(Mod{"VisionTransformer",
                           {embed, op("aten::tile"), op("aten::cat"), op("aten::add"), leaf("Dropout", {"aten::dropout"}), block, block, block,
                            ln, op("aten::select"), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a concatenation a sum takes at once is the branch the sum joins back, not the block's end") {
  // Wukong's layers: a linear-compress block and a factorisation-machine block (products by
  // their parameters, written by hand, and an MLP), concatenated, plus the input (projected by a
  // parameter where the width changes, by hand too), then a LayerNorm.
  Mod bn1d = leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"});
  Mod mlp{"MLP", {linear(), bn1d, relu_module(), dropout(), linear()}, nullptr};
  Mod lcb{"LinearCompressBlock", {op("aten::permute"), op("aten::matmul"), op("aten::permute")}, nullptr};
  Mod fmb{"FactorizationMachineBlock", {op("aten::permute"), op("aten::matmul"), op("aten::bmm"), op("aten::view"), layer_norm(), mlp, op("aten::view")},
          nullptr};
  Mod projection{"ResidualProjection", {op("aten::permute"), op("aten::matmul"), op("aten::permute")}, nullptr};
  Mod first{"WukongLayer", {lcb, fmb, op("aten::concat"), projection, op("aten::add"), layer_norm()}, nullptr};
  Mod layer{"WukongLayer", {lcb, fmb, op("aten::concat"), op("aten::add"), layer_norm()}, nullptr};
  BareRun r = bare_run(Mod{"Wukong", {leaf("Embedding", {"aten::embedding"}), linear(), op("aten::view"), op("aten::cat"), first, layer, layer,
                                      op("aten::view"), linear(), relu_module(), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.25);  // the two layers with no projection (the blocks inside are products by hand)
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a sum right after a product written by hand is its bias, not a residual join") {
  // Griffin's recurrent block: the input and gate Linears, then BlockDiagonalLinear gates
  // (reshape, einsum with the weight, + b) with their sigmoids, the gated product and the output
  // Linear, in one residual branch; then the MLP block.
  Mod gate{"BlockDiagonalLinear", {op("aten::reshape"), op("aten::einsum"), op("aten::add"), op("aten::reshape")}, nullptr};
  Mod lru{"RGLRU", {gate, leaf("Sigmoid", {"aten::sigmoid"}), gate, leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul"), op("aten::mul")}, nullptr};
  Mod recurrent{"RecurrentBlock", {linear(), leaf("GELU", {"aten::gelu"}), linear(), lru, op("aten::mul"), linear()}, nullptr};
  Mod mlp{"MLPBlock", {linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  Mod block{"ResidualBlock", {layer_norm(), recurrent, op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Griffin", {leaf("Embedding", {"aten::embedding"}), block, block, block, layer_norm(), linear()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  // Each half a block with its residual branch: the recurrent blocks and MLP blocks found (the
  // halves then read as stages of two blocks, not as layers; the gates inside are products by
  // hand, no units).
  CHECK(s.block_recall >= 0.5);
  CHECK(has_layer(r.annotation.tree, "Block 3: LayerNorm + 3 Linear + GELU + 2 Sigmoid"));
}
