// Attention units inferred where the scores are no matrix product (a graph attention's, an
// additive attention's, computed elementwise from the projection before the softmax) or are
// not normalised by a softmax (a retention's decayed scores), or have a bias computed by an MLP
// between them and the softmax (CrossFormer's dynamic position bias), or are scored by bmm as
// nn.MultiheadAttention's function does but written by hand (GPTBigCode's multi-query attention),
// or scale their query as fairseq writes attention, their layer dropping their output out, or
// scale nothing (T5's, whose layers call each half as a module).
#include "model_trace.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace strata;
using namespace strata::test;

namespace {

// A dense graph attention layer (GAT's): the projection viewed into heads, each end's score
// (a product with a and its sum), the two broadcast and added, LeakyReLU, the adjacency's mask,
// the softmax, its dropout, the neighbours' weighted sum (einsum), the heads concatenated or,
// in the last layer, averaged.
Mod gat_layer(bool last) {
  return Mod{"GATLayer",
             {linear(), op("aten::view"), op("aten::mul"), op("aten::sum"), op("aten::mul"), op("aten::sum"), op("aten::unsqueeze"),
              op("aten::unsqueeze"), op("aten::add"), leaf("LeakyReLU", {"aten::leaky_relu"}), op("aten::bitwise_not"),
              op("aten::masked_fill"), op("aten::softmax"), dropout(), op("aten::einsum"), op(last ? "aten::mean" : "aten::reshape")},
             nullptr};
}

}  // namespace

TEST_CASE("inferred layers: a graph attention whose scores are elementwise is one attention, its heads' mean included") {
  BareRun r = bare_run(Mod{"GAT", {dropout(), gat_layer(false), leaf("ELU", {"aten::elu"}), dropout(), gat_layer(true)}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // both layers, each exactly
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Attention 1"));
  CHECK(has_layer(r.annotation.tree, "Attention 2"));
}

TEST_CASE("inferred layers: elementwise ops and a softmax with no weighted sum after make no attention (a router's gate)") {
  // A mixture of experts' router: the gate's linear, a temperature's product, the softmax,
  // the top-k; then each expert's MLP.
  Mod router{"Router", {linear(), op("aten::mul"), op("aten::sum"), op("aten::softmax"), op("aten::topk")}, nullptr};
  Mod expert{"Expert", {linear(), leaf("ReLU", {"aten::relu"}), linear()}, nullptr};
  BareRun r = bare_run(Mod{"MoE", {router, expert, expert, op("aten::add")}, nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "Attention 1"));
}

namespace {

// torchscale's RetNet decoder layer: a pre-norm retention (q, k, v and a gate projected, the
// query scaled in place, the decayed scores q k^T ⊙ D normalised by their sum, no softmax, the
// weighted sum normed per head, times the gate's swish, the out-projection), then a
// feed-forward that flattens its input's leading dims first and views its output back.
Mod retnet_layer() {
  Mod retention{"MultiScaleRetention",
                {linear(), linear(), linear(), linear(), op("aten::mul_"), op("aten::view"), op("aten::transpose"), op("aten::matmul"),
                 op("aten::mul"), op("aten::abs"), op("aten::sum"), op("aten::clamp"), op("aten::div"), op("aten::matmul"),
                 op("aten::transpose"), layer_norm(), op("aten::reshape"), leaf("SiLU", {"aten::silu"}), op("aten::mul"), linear()},
                nullptr};
  Mod ffn{"FeedForwardNetwork", {op("aten::reshape"), linear(), leaf("GELU", {"aten::gelu"}), linear(), op("aten::view"), dropout()}, nullptr};
  return Mod{"DecoderLayer", {layer_norm(), retention, dropout(), op("aten::add"), layer_norm(), ffn, op("aten::add")}, nullptr};
}

}  // namespace

TEST_CASE("inferred layers: a retention, decayed scores and no softmax, is one attention with its gate and per-head norm") {
  BareRun r = bare_run(Mod{"RetNet", {leaf("Embedding", {"aten::embedding"}), retnet_layer(), retnet_layer(), retnet_layer(), layer_norm(), linear()}, nullptr});
  const AnnotationTree& t = r.annotation.tree;
  std::set<std::string> names;  // each step numbers them again
  for (NodeId n = 0; n < t.size(); ++n) {
    if (!t.name_of(n).starts_with("Attention ")) continue;
    names.insert(std::string(t.name_of(n)));
    const std::vector<std::string> kids = child_names(t, n);
    CAPTURE(t.name_of(n));
    CHECK(std::count_if(kids.begin(), kids.end(), [](const std::string& c) { return c.starts_with("Linear"); }) == 5);
    CHECK(std::count_if(kids.begin(), kids.end(), [](const std::string& c) { return c.starts_with("LayerNorm"); }) == 1);
  }
  CHECK(names.size() == 3);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);
  CHECK(s.node_precision > 0.9);  // the feed-forward's reshapes with it (block recall counts the retention's dropout as its own)
}

TEST_CASE("inferred layers: two products with no softmax and no projections of both operands make no attention") {
  // A graph network propagating by its adjacency: A @ X, a normalisation by the degree, A @ (.),
  // then the layer's one weight.
  Mod prop{"Propagate", {op("aten::matmul"), op("aten::div"), op("aten::matmul"), linear()}, nullptr};
  BareRun r = bare_run(Mod{"GCN", {linear(), leaf("ReLU", {"aten::relu"}), prop, leaf("ReLU", {"aten::relu"}), prop, linear()}, nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "Attention 1"));
}

TEST_CASE("inferred layers: an MLP between an attention's scores and its softmax, added to the scores, is that attention's bias") {
  // CrossFormer's attention: the scores, then its DynamicPosBias (a projection and three
  // LayerNorm-ReLU-Linear steps on a table of relative offsets), the result gathered by the
  // position index, permuted and added to the scores before the softmax.
  Mod step{"Sequential", {layer_norm(), relu_module(), linear()}, nullptr};
  Mod bias{"DynamicPosBias", {linear(), step, step, step}, nullptr};
  Mod attention{"Attention", {}, nullptr};
  for (Mod m : {linear(), op("aten::reshape"), op("aten::permute"), op("aten::select"), op("aten::select"), op("aten::select"),
                op("aten::mul"), op("aten::transpose"), op("aten::matmul"), bias, op("aten::view"), op("aten::index"), op("aten::view"),
                op("aten::permute"), op("aten::contiguous"), op("aten::unsqueeze"), op("aten::add"), op("aten::softmax"), dropout(),
                op("aten::matmul"), op("aten::transpose"), op("aten::reshape"), linear(), dropout()})
    attention.items.push_back(m);
  Mod mlp{"Mlp", {linear(), leaf("GELU", {"aten::gelu"}), dropout(), linear(), dropout()}, nullptr};
  Mod block{"CrossFormerBlock", {layer_norm(), attention, op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"CrossFormer", {conv(), op("aten::flatten"), layer_norm(), block, block, block, layer_norm(), linear()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Attention 3"));
  CHECK(has_layer(r.annotation.tree, "Bias MLP 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 >= 0.95);
  CHECK(s.block_recall >= 0.5);  // each block, attention, MLP and bias; the bias's steps are not
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: one projection split by sizes into a query and one shared key and value, scored by baddbmm, is attention written by hand") {
  // GPTBigCode's multi-query attention: c_attn's output split into the query and a key/value
  // pair the heads share, the scores by baddbmm onto an empty buffer, the mask by torch.where,
  // softmax, dropout, bmm, c_proj and its dropout, all the attention module's; nn.MultiheadAttention
  // chunks its packed projection instead, its caller owning the dropout after it.
  Mod attention{"GPTBigCodeAttention", {}, nullptr};
  for (Mod m : {linear(), op("aten::split_with_sizes"), op("aten::split_with_sizes"), op("aten::transpose"), op("aten::reshape"), op("aten::zeros"),
                op("aten::zero_"), op("aten::baddbmm"), op("aten::view"), op("aten::where"), op("aten::softmax"), dropout(), op("aten::view"),
                op("aten::bmm"), op("aten::view"), linear(), dropout()})
    attention.items.push_back(m);
  Mod mlp{"GPTBigCodeMLP", {linear(), leaf("GELUActivation", {"aten::gelu"}), linear(), dropout()}, nullptr};
  Mod block{"GPTBigCodeBlock", {layer_norm(), attention, op("aten::add"), layer_norm(), mlp, op("aten::add")}, nullptr};
  Mod embedding = leaf("Embedding", {"aten::embedding"});
  BareRun r = bare_run(Mod{"GPTBigCode", {embedding, embedding, op("aten::add"), dropout(), block, block, block, layer_norm(), linear()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "MLP 3: Linear + GELU + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions and MLPs
  CHECK(s.node_precision >= 0.9);
}

TEST_CASE("inferred layers: a pre-norm attention that scales its query leaves the dropout after it to its layer") {
  // Whisper's and mBART's layers as transformers writes them (BART's attention): q_proj(x) *
  // scaling, k_proj, v_proj, bmm, softmax, dropout, bmm, out_proj; then the layer's functional
  // dropout and the residual sum. GPT-2's attention scales its scores and owns that dropout.
  Mod attention{"WhisperAttention", {}, nullptr};
  for (Mod m : {linear(), op("aten::mul"), linear(), op("aten::view"), op("aten::transpose"), linear(), op("aten::view"), op("aten::transpose"),
                op("aten::view"), op("aten::transpose"), op("aten::reshape"), op("aten::reshape"), op("aten::reshape"), op("aten::bmm"),
                op("aten::softmax"), op("aten::dropout"), op("aten::bmm"), op("aten::view"), op("aten::transpose"), op("aten::reshape"), linear()})
    attention.items.push_back(m);
  Mod layer{"WhisperEncoderLayer",
            {layer_norm(), attention, op("aten::dropout"), op("aten::add"), layer_norm(), linear(), leaf("GELUActivation", {"aten::gelu"}),
             op("aten::dropout"), linear(), op("aten::dropout"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"WhisperEncoder", {conv1d(), leaf("GELUActivation", {"aten::gelu"}), op("aten::permute"), op("aten::add"), op("aten::dropout"),
                                              layer, layer, layer, layer_norm(), linear()},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers and their attentions, without that dropout
}

TEST_CASE("inferred layers: attention that scales neither query nor scores makes each half of its layer a module") {
  // T5 as transformers writes it: T5Block of T5LayerSelfAttention (layer_norm, SelfAttention,
  // dropout, the sum) and T5LayerFF (layer_norm, DenseReluDense: wi, ReLU, dropout, wo; dropout,
  // the sum). The first block's attention computes the relative position bias: the buckets (a log,
  // divided and scaled), the bias's embedding, added to the scores.
  Mod rms = leaf("T5LayerNorm", {"aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"});
  auto attention = [&](bool bias) {
    Mod a{"T5Attention", {}, nullptr};
    for (Mod m : {linear(), op("aten::view"), op("aten::transpose"), linear(), op("aten::view"), op("aten::transpose"), linear(), op("aten::view"),
                  op("aten::transpose"), op("aten::transpose"), op("aten::matmul")})
      a.items.push_back(m);
    if (bias)
      for (Mod m : {op("aten::arange"), op("aten::arange"), op("aten::sub"), op("aten::abs"), op("aten::lt"), op("aten::log"), op("aten::div"),
                    op("aten::mul"), op("aten::to"), op("aten::add"), op("aten::minimum"), op("aten::where"), op("aten::add"),
                    leaf("Embedding", {"aten::embedding"}), op("aten::permute"), op("aten::unsqueeze")})
        a.items.push_back(m);
    for (Mod m : {op("aten::add"), op("aten::softmax"), dropout(), op("aten::matmul"), op("aten::transpose"), op("aten::view"), linear()})
      a.items.push_back(m);
    return a;
  };
  auto block = [&](bool bias) {
    Mod self{"T5LayerSelfAttention", {rms, attention(bias), dropout(), op("aten::add")}, nullptr};
    Mod ff{"T5LayerFF", {rms, Mod{"T5DenseActDense", {linear(), relu_module(), dropout(), linear()}, nullptr}, dropout(), op("aten::add")}, nullptr};
    return Mod{"T5Block", {self, ff}, nullptr};
  };
  BareRun r = bare_run(Mod{"T5EncoderModel", {leaf("Embedding", {"aten::embedding"}), dropout(), block(true), block(false), block(false), rms, dropout(), linear()},
                           nullptr});
  CHECK(has_layer(r.annotation.tree, "Sublayer 6: RMSNorm + Linear + ReLU + Dropout + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their halves, attentions and feed-forwards
}
