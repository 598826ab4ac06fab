// Post-norm transformer layers written by hand (Hugging Face's BERT, RecBole's, XLM's): the output
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

TEST_CASE("inferred layers: a mask multiplied into each layer's input is no part of the attention after it") {
  // XLM's encoder loops over its attentions, norms and feed-forwards itself: x * mask after
  // the embeddings and after each layer, then the attention (its query scaled before the
  // scores), dropout, add, norm, the feed-forward inline, add, norm. Each attention module
  // starts at its query's projection.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"MultiHeadAttention", {lin, op("aten::view"), op("aten::transpose"), op("aten::div")}, nullptr};
  for (int p = 0; p < 2; ++p)
    for (Mod m : {lin, op("aten::view"), op("aten::transpose")}) attention.items.push_back(m);
  for (Mod m : {op("aten::transpose"), op("aten::matmul"), op("aten::masked_fill"), op("aten::softmax"), op("aten::dropout"),
                op("aten::matmul"), op("aten::transpose"), op("aten::contiguous"), op("aten::view"), lin})
    attention.items.push_back(m);
  Mod xlm{"XLM", {leaf("Embedding", {"aten::embedding"}), leaf("Embedding", {"aten::embedding"}), op("aten::add"), ln, op("aten::dropout")}, nullptr};
  for (int l = 0; l < 3; ++l)
    for (Mod m : {op("aten::unsqueeze"), op("aten::to"), op("aten::mul"), attention, op("aten::dropout"), op("aten::add"), ln, lin,
                  op("aten::gelu"), lin, op("aten::dropout"), op("aten::add"), ln})
      xlm.items.push_back(m);
  xlm.items.push_back(lin);
  BareRun r = bare_run(xlm);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each attention, from its query's projection to its out-projection
}

TEST_CASE("inferred layers: a mask made right before a repeated module is its caller's, not that module's") {
  // A BERT encoder-decoder: each stack's embeddings module (the position ids sliced, three
  // lookups, their sum, LayerNorm, dropout) before its layers; the model makes the decoder's
  // causal mask (full, triu, unsqueeze) right before the decoder's embeddings.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod emb = leaf("Embedding", {"aten::embedding"});
  Mod embeddings{"Embeddings", {op("aten::slice"), op("aten::slice"), op("aten::expand"), emb, emb, op("aten::add"), emb, op("aten::add_"), ln, drop},
                 nullptr};
  Mod output{"Output", {lin, drop, op("aten::add"), ln}, nullptr};
  Mod layer{"BertLayer",
            {Mod{"Attention", {bert_self_attention(), output}, nullptr}, Mod{"Intermediate", {lin, leaf("GELU", {"aten::gelu"})}, nullptr}, output},
            nullptr};
  Mod net{"EncoderDecoder", {embeddings, layer, layer, op("aten::full"), op("aten::triu"), op("aten::unsqueeze"), embeddings, layer, layer, lin},
          nullptr};
  BareRun r = bare_run(net);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // both embeddings modules, the decoder's from its first slice
}
