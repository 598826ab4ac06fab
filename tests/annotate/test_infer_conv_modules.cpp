// Inferred layers of a sequence model's conv modules (ContextNet's, as openspeech writes it):
// the output lengths computed between a conv and its norm, a squeeze-excitation over the valid
// steps (a sum divided by the lengths) with a Swish written by hand, and blocks with a shortcut
// after one without; and a token layer's conv half (XCiT's local patch interaction), its
// reshapes to a map and back its own; a Mamba mixer's norms back to back.
#include "model_trace.h"

#include <doctest/doctest.h>

#include <string>

using namespace strata;
using namespace strata::test;

namespace {

// Swish as a module of x * x.sigmoid(): the backward shows the sigmoid's input taken by the
// product too.
Mod swish() { return Mod{"Swish", {shared_input(op("aten::sigmoid")), op("aten::mul")}, nullptr}; }

// ContextNetConvModule: the conv, the output lengths ((len + 2 * pad - kernel) // stride + 1),
// BatchNorm1d, and Swish where it activates; `first` marks the conv as taking the block's input
// beside the shortcut.
Mod conv_module(bool activation, bool first = false) {
  Mod conv = first ? shared_input(conv1d()) : conv1d();
  Mod m{"ContextNetConvModule",
        {conv, op("aten::add"), op("aten::sub"), op("aten::sub"), op("aten::floor_divide"), op("aten::add"),
         leaf("BatchNorm1d", {"aten::add_", "aten::batch_norm"})},
        nullptr};
  if (activation) m.items.push_back(swish());
  return m;
}

// ContextNetSEModule: the sum over time divided by the lengths, a Sequential of Linear, Swish
// and Linear, the sigmoid, unsqueezed and repeated over time, times the input.
Mod squeeze_excitation() {
  return Mod{"ContextNetSEModule",
             {shared_input(op("aten::sum")), op("aten::unsqueeze"), op("aten::div"), Mod{"Sequential", {linear(), swish(), linear()}, nullptr},
              op("aten::sigmoid"), op("aten::unsqueeze"), op("aten::repeat"), op("aten::mul")},
             nullptr};
}

// A ContextNetBlock: its conv modules, the SE, then (with a residual) the residual conv module
// on the block's input added in place, and Swish.
Mod block(bool residual) {
  Mod b{"ContextNetBlock", {conv_module(true, residual)}, nullptr};
  if (residual) b.items.push_back(conv_module(true));
  b.items.push_back(squeeze_excitation());
  if (residual) b.items.insert(b.items.end(), {conv_module(false), op("aten::add_")});
  b.items.push_back(swish());
  return b;
}

BareRun contextnet() {
  StepOps autograd;
  autograd.backward_nodes = true;
  return bare_run(Mod{"ContextNet", {op("aten::transpose"), block(false), block(true), block(true), block(false), op("aten::transpose"), linear()},
                      nullptr},
                  autograd);
}

}  // namespace

TEST_CASE("inferred layers: the output lengths a conv module computes between its conv and its norm are that module's") {
  BareRun r = contextnet();
  // Each conv module is one layer: the conv, the lengths' arithmetic, the norm (and its Swish).
  CHECK(has_layer(r.annotation.tree, "Conv-Norm 7: Conv + BatchNorm"));  // a residual conv module: no activation
  CHECK(has_layer(r.annotation.tree, "Conv-Norm 1: Conv + BatchNorm + SiLU"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 >= 0.9);  // (the SE's sigmoid, its own op, is a unit)
}

TEST_CASE("inferred layers: a sum divided by the lengths, then two weight ops and a sigmoid scaling the input, is a squeeze-excitation") {
  BareRun r = contextnet();
  CHECK(has_layer(r.annotation.tree, "SqueezeExcitation 4"));
  // The Swish between its Linears is one activation inside it.
  const AnnotationTree& t = r.annotation.tree;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.name_of(n).starts_with("SqueezeExcitation")) {
      size_t silu = 0;
      for (const std::string& kid : child_names(t, n)) silu += kid.starts_with("SiLU");
      CHECK(silu == 1);
    }
}

TEST_CASE("inferred layers: blocks with a shortcut after one without open where the backward shows their input shared") {
  // The first block has no shortcut: the sum that closes the second would take both in; each
  // block with a shortcut opens at its first conv, whose input the residual conv module takes.
  BareRun r = contextnet();
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.6);  // both blocks with a shortcut and every conv module and SE
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Block 2: 3 Conv + 3 BatchNorm + 3 SiLU + SqueezeExcitation"));
}

TEST_CASE("inferred layers: a pre-norm half of convs alone on tokens is a module with its reshapes, its norm the layer's") {
  // XCiT's blocks: norm1 and the cross-covariance attention, norm3 and LPI (the tokens laid out
  // as a map, conv, GELU, BatchNorm, conv, back to tokens), norm2 and the Mlp, each scaled by its
  // layer scale before the sum. Not a Conformer's layer (two feed-forwards, a conv module holding
  // its norm): the norms are the block's.
  Mod attention{"XCA", {linear(), op("aten::reshape"), op("aten::permute"), op("aten::unbind"), op("aten::linalg_vector_norm"), op("aten::clamp_min"),
                        op("aten::expand_as"), op("aten::div"), op("aten::linalg_vector_norm"), op("aten::clamp_min"), op("aten::expand_as"),
                        op("aten::div"), op("aten::transpose"), op("aten::matmul"), op("aten::mul"), op("aten::softmax"), dropout(), op("aten::matmul"),
                        op("aten::permute"), op("aten::reshape"), linear(), dropout()},
                 nullptr};
  Mod lpi{"LPI", {op("aten::permute"), op("aten::reshape"), conv(), leaf("GELU", {"aten::gelu"}), bn(), conv(), op("aten::reshape"), op("aten::permute")},
          nullptr};
  Mod mlp{"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), dropout(), linear(), dropout()}, nullptr};
  Mod block{"XCABlock", {layer_norm(), attention, op("aten::mul"), op("aten::add"), layer_norm(), lpi, op("aten::mul"), op("aten::add"), layer_norm(), mlp,
                         op("aten::mul"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"Xcit", {conv(), bn(), op("aten::flatten"), op("aten::transpose"), block, block, block, layer_norm(), linear()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Conv module 3: Conv + GELU + BatchNorm + Conv"));
  CHECK(has_layer(r.annotation.tree, "MLP 3: Linear + GELU + Dropout + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions, LPIs (with their reshapes) and Mlps
}

TEST_CASE("inferred layers: RMSNorms back to back each keep their own cast into float32") {
  // Jamba's Mamba mixer norms dt, B and C one after the other, each as Llama's RMSNorm writes it
  // (x.to(float32), pow, mean, + eps, rsqrt, product, cast back, the weight's product): the cast
  // opening one norm is not the one before's cast back.
  Mod norm = leaf("JambaRMSNorm", {"aten::to", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::to", "aten::mul"});
  Mod mixer{"JambaMambaMixer",
            {linear(), op("aten::transpose"), op("aten::chunk"), conv1d(), op("aten::slice"), leaf("SiLU", {"aten::silu"}), op("aten::transpose"),
             linear(), op("aten::split_with_sizes"), norm, norm, norm, linear(), leaf("Softplus", {"aten::softplus"}), op("aten::transpose"),
             op("aten::mul"), op("aten::exp"), op("aten::mul"), op("aten::add"), op("aten::matmul"), op("aten::stack"), op("aten::add"),
             leaf("SiLU", {"aten::silu"}), op("aten::mul"), linear()},
            nullptr};
  Mod layer{"JambaMambaDecoderLayer", {norm, mixer, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Jamba", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, norm, linear()}, nullptr});
  const AnnotationTree& t = r.annotation.tree;
  size_t norms = 0;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.name_of(n).starts_with("RMSNorm ")) {
      ++norms;
      CHECK(child_names(t, n).size() == 8);
    }
  CHECK(norms >= 13);  // each layer's, its mixer's three, the final one (and the backward's)
}
