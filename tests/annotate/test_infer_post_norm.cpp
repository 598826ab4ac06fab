// Post-norm transformer layers written by hand (Hugging Face's BERT, RecBole's): the output
// modules that project, add and norm each half, and the halves the layer calls.
#include "model_trace.h"

#include <doctest/doctest.h>

using namespace strata;
using namespace strata::test;

namespace {

// BERT's self-attention as Hugging Face writes it: query, key and value modules, the scores
// scaled, the weighted sum laid back out.
Mod bert_self_attention() {
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod attention{"SelfAttention", {}, nullptr};
  for (int p = 0; p < 3; ++p)
    for (Mod m : {lin, op("aten::view"), op("aten::permute")}) attention.items.push_back(m);
  for (Mod m : {op("aten::transpose"), op("aten::matmul"), op("aten::div"), op("aten::softmax"), drop, op("aten::matmul"), op("aten::permute"),
                op("aten::contiguous"), op("aten::view")})
    attention.items.push_back(m);
  return attention;
}

}  // namespace

TEST_CASE("inferred layers: between a BERT layer's two output modules, its Linear and activation are the Intermediate module") {
  // Hugging Face's BERT: Attention (SelfAttention, then SelfOutput: dense, dropout, add,
  // LayerNorm), Intermediate (dense, nn.GELU), Output (dense, dropout, add, LayerNorm).
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod output{"Output", {lin, drop, op("aten::add"), ln}, nullptr};
  Mod layer{"BertLayer",
            {Mod{"Attention", {bert_self_attention(), output}, nullptr}, Mod{"Intermediate", {lin, leaf("GELU", {"aten::gelu"})}, nullptr}, output},
            nullptr};
  BareRun r = bare_run(Mod{"Bert", {leaf("Embedding", {"aten::embedding"}), ln, drop, layer, layer, layer, lin}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions, output and intermediate modules
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Intermediate 3: Linear + GELU"));
  CHECK(has_layer(r.annotation.tree, "Attention sublayer 3: Attention + Output"));
}

TEST_CASE("inferred layers: a post-norm layer's halves that add and norm inside are the modules it calls") {
  // RecBole's transformer layer: an attention module that ends with its dense, dropout, the
  // add and LayerNorm, then a feed-forward module (dense, GELU, dense, dropout, add, LayerNorm).
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention = bert_self_attention();
  attention.cls = "MultiHeadAttention";
  for (Mod m : {lin, drop, op("aten::add"), ln}) attention.items.push_back(m);
  Mod feed_forward{"FeedForward", {lin, leaf("GELU", {"aten::gelu"}), lin, drop, op("aten::add"), ln}, nullptr};
  Mod layer{"TransformerLayer", {attention, feed_forward}, nullptr};
  BareRun r = bare_run(Mod{"Encoder", {leaf("Embedding", {"aten::embedding"}), ln, drop, layer, layer, layer, lin}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions and feed-forwards
}
