// Layers inferred from the op sequence (core/annotate/infer_layers.cpp), scored against the
// module tree that made the ops: each case is a small model written as its module calls, traced
// once with its truth's hid= ranges and annotated with them stripped, as the accuracy bench
// does (bench/annotate_accuracy.cpp). A case checks a class of model, not one trace's layers.
#include "model_trace.h"

#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

TEST_CASE("inferred layers: a conv, its norm and its in-place activation are one layer, as ConvNormActivation is") {
  Mod cna{"Conv2dNormActivation", {conv(), bn(), relu_module()}, nullptr};
  AccuracyScore s = bare_score(model({cna, cna, leaf("MaxPool2d", {"aten::max_pool2d"}), cna}));
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.blocks == 6);  // three a forward, two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: an activation after a conv and its norm is their group's, in place or not, as nn.ReLU in a Sequential is") {
  // Sequential(Conv2d, BatchNorm2d, ReLU()): the ReLU returns a new tensor (aten::relu), as
  // F.relu does; the ops cannot tell the two, and the module is the commoner.
  Mod cbr{"Sequential", {conv(), bn(), leaf("ReLU", {"aten::relu"})}, nullptr};
  Mod block{"DoubleConv", {cbr, cbr}, nullptr};
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  AccuracyScore s = bare_score(Mod{"Net", {block, pool, block, pool, block, op("aten::flatten"), leaf("Linear", {"aten::linear"})}, nullptr});
  CHECK(s.block_recall == doctest::Approx(1.0));  // the double convs and their Sequentials
  CHECK(s.node_precision == doctest::Approx(1.0));
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
  BareRun r = bare_run(vit({b, b, merge, b, b, merge, b, b}));
  CHECK(has_layer(r.annotation.tree, "Stage 3: 2 layers"));
  AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: nn.TransformerEncoderLayer's feed-forward is inline: no MLP layer") {
  // norm_first: nn.MultiheadAttention's own function (packed in-projection, bmm), then the
  // feed-forward with F.relu, the layer's own op between its linears.
  Mod mha = multihead_attention();
  Mod tel{"TransformerEncoderLayer",
          {layer_norm(), mha, dropout(), op("aten::add"), layer_norm(), linear(), op("aten::relu"), dropout(), linear(), dropout(),
           op("aten::add")},
          nullptr};
  AccuracyScore s = bare_score(vit({tel, tel, tel}));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the mask computed once before the first layer is not the first layer's") {
  // A post-norm encoder on hand-written attention (BERT's modules: the output projection,
  // dropout, add and norm of each half in an output module): (1 - mask) * -inf is computed by
  // the model before its layers, for all of them; the first layer starts at its projections,
  // as the others do.
  Mod attention{"SelfAttention",
                {linear(), op("aten::view"), op("aten::permute"), linear(), op("aten::view"), op("aten::permute"), linear(),
                 op("aten::view"), op("aten::permute"), op("aten::transpose"), op("aten::matmul"), op("aten::div"), op("aten::add"),
                 op("aten::softmax"), dropout(), op("aten::matmul"), op("aten::permute"), op("aten::view")},
                nullptr};
  Mod output{"SelfOutput", {linear(), dropout(), op("aten::add"), layer_norm()}, nullptr};
  Mod layer{"EncoderLayer", {attention, output, linear(), leaf("GELU", {"aten::gelu"}), output}, nullptr};
  Mod root{"Encoder",
           {leaf("Embedding", {"aten::embedding"}), leaf("Embedding", {"aten::embedding"}), op("aten::add"), layer_norm(),
            dropout(), op("aten::slice"), op("aten::unsqueeze"), op("aten::unsqueeze"), op("aten::to"), op("aten::rsub"),
            op("aten::mul"), layer, layer, layer, linear()},
           nullptr};
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.node_precision == doctest::Approx(1.0));
  // Each layer is found with exactly its ops: the first one too.
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.name_of(n).starts_with("Layer 1"))
      for (NodeId c : r.annotation.tree.children(n)) CHECK(r.annotation.tree.name_of(c) != "aten::rsub");
}

TEST_CASE("inferred layers: a decoder layer's self-attention, cross-attention and MLP are one layer; summed embeddings are no block") {
  // nn.Transformer, post-norm: token and position embeddings summed, two encoder layers
  // (attention, MLP), two decoder layers (self-attention, cross-attention by slices of one
  // packed weight, MLP).
  auto mha = [](bool cross) {
    Mod m{"MultiheadAttention", {}, nullptr};
    if (cross)
      for (const char* o : {"aten::split_with_sizes", "aten::linear", "aten::linear", "aten::chunk"}) m.items.push_back(op(o));
    else
      for (const char* o : {"aten::linear", "aten::chunk"}) m.items.push_back(op(o));
    for (const char* o : {"aten::view", "aten::transpose", "aten::view", "aten::transpose", "aten::view", "aten::transpose",
                          "aten::div", "aten::bmm", "aten::softmax", "aten::dropout", "aten::bmm", "aten::transpose", "aten::view",
                          "aten::linear", "aten::view"})
      m.items.push_back(op(o));
    return m;
  };
  auto half = [](Mod sub) { return std::vector<Mod>{std::move(sub), dropout(), op("aten::add"), layer_norm()}; };
  std::vector<Mod> ff = {linear(), op("aten::relu"), dropout(), linear(), dropout(), op("aten::add"), layer_norm()};
  Mod enc{"TransformerEncoderLayer", half(mha(false)), nullptr};
  enc.items.insert(enc.items.end(), ff.begin(), ff.end());
  Mod dec{"TransformerDecoderLayer", half(mha(false)), nullptr};
  for (Mod& m : half(mha(true))) dec.items.push_back(std::move(m));
  dec.items.insert(dec.items.end(), ff.begin(), ff.end());
  Mod emb = leaf("Embedding", {"aten::embedding"});
  Mod root{"Seq2Seq",
           {emb, emb, op("aten::add"), emb, emb, op("aten::add"), Mod{"TransformerEncoder", {enc, enc, layer_norm()}, nullptr},
            Mod{"TransformerDecoder", {dec, dec, layer_norm()}, nullptr}, linear()},
           nullptr};
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.blocks == 8);  // two encoder and two decoder layers, two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.leaf_f1 > 0.99);  // each attention one unit, its projections its own ops
  CHECK_FALSE(has_layer(r.annotation.tree, "Block 1: 2 Embedding"));
}

TEST_CASE("inferred layers: a block that splits its input, runs one half through a branch and concatenates is a block with that branch") {
  // ShuffleNetV2, two stages: a stage's first block has two branches on the whole input; the
  // others chunk the input in two, run one half through branch2, concatenate and shuffle the
  // channels.
  auto cbr = [] { return std::vector<Mod>{conv(), bn(), relu_module()}; };
  auto seq = [](std::vector<std::vector<Mod>> parts) {
    Mod m{"Sequential", {}, nullptr};
    for (auto& p : parts) m.items.insert(m.items.end(), p.begin(), p.end());
    return m;
  };
  Mod branch2 = seq({cbr(), {conv(), bn()}, cbr()});
  const std::vector<Mod> shuffle = {op("aten::cat"), op("aten::view"), op("aten::transpose"), op("aten::contiguous"), op("aten::view")};
  Mod down{"InvertedResidual", {seq({{conv(), bn()}, cbr()}), branch2}, nullptr};
  down.items.insert(down.items.end(), shuffle.begin(), shuffle.end());
  Mod unit{"InvertedResidual", {op("aten::chunk"), branch2}, nullptr};
  unit.items.insert(unit.items.end(), shuffle.begin(), shuffle.end());
  Mod root{"ShuffleNet", {conv(), bn(), relu_module(), leaf("MaxPool2d", {"aten::max_pool2d"}), down, unit, unit, down, unit, unit},
           nullptr};
  root.items.push_back(leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}));
  root.items.push_back(leaf("Linear", {"aten::linear"}));
  const AccuracyScore s = bare_score(root);
  // Per forward: the four later blocks, their branch2, the two first blocks, their branch1
  // and branch2; two forwards.
  CHECK(s.blocks == 28);
  // Every one: the first blocks' branches too, which run one after the other with nothing
  // between, told apart by branch2's kind split off in the other blocks.
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

namespace {

// A routed mixture of four experts: a router, its top-k, each expert between a gather and a
// scatter back.
Mod routed_experts() {
  Mod expert{"Expert", {linear(), leaf("GELU", {"aten::gelu"}), linear()}, nullptr};
  Mod moe{"MoELayer", {op("aten::reshape"), linear(), op("aten::softmax"), op("aten::topk"), op("aten::zeros_like")}, nullptr};
  for (int e = 0; e < 4; ++e) {
    for (const char* o : {"aten::eq", "aten::nonzero_numpy", "aten::index_select"}) moe.items.push_back(op(o));
    moe.items.push_back(expert);
    for (const char* o : {"aten::index", "aten::unsqueeze", "aten::mul", "aten::index_add"}) moe.items.push_back(op(o));
  }
  moe.items.push_back(op("aten::reshape"));
  return moe;
}

}  // namespace

TEST_CASE("inferred layers: a routed half (router, top-k, experts between gathers and scatters) is a mixture of experts with its experts") {
  Mod block{"MoEBlock", {layer_norm(), hand_attention(), op("aten::add"), layer_norm(), routed_experts(), op("aten::add")}, nullptr};
  const AccuracyScore s = bare_score(vit({block, block}));
  CHECK(s.blocks == 2 * (2 + 2 + 2 + 8));  // blocks, attentions, mixtures, experts; two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: nn.Flatten before a head is a unit of its own; an aten op that runs others inside is one op") {
  // A siamese encoder called twice, then cosine_similarity (its products and sums run inside
  // it) scaled by the root: no layer is made of cosine_similarity's own ops.
  Mod encoder{"Sequential",
              {conv(), bn(), relu_module(), leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), leaf("Flatten", {"aten::flatten"}),
               linear()},
              nullptr};
  Mod root{"Siamese",
           {encoder, encoder,
            op("aten::cosine_similarity",
               {"aten::mul", "aten::sum", "aten::mul", "aten::sum", "aten::mul", "aten::sqrt", "aten::clamp_min", "aten::div"}),
            op("aten::mul")},
           nullptr};
  BareRun r = bare_run(root);
  CHECK_FALSE(has_layer(r.annotation.tree, "aten::cosine_similarity"));
  CHECK(has_layer(r.annotation.tree, "Flatten 1"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).leaf_f1 == doctest::Approx(1.0));
}

namespace {

// Llama's RMSNorm, written by hand: the mean of the square, its inverse root, the scale.
Mod rms_norm() { return leaf("RMSNorm", {"aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"}); }

// Llama's attention: bias-free q/k/v projections, rotary positions applied to q and k (products,
// halves swapped by chunk, neg and cat, sums), grouped-query heads repeated, causal scores.
Mod rotary_attention() {
  Mod a{"Attention", {}, nullptr};
  for (int p = 0; p < 3; ++p) {
    a.items.push_back(linear());
    a.items.push_back(op("aten::view"));
    a.items.push_back(op("aten::transpose"));
  }
  for (int p = 0; p < 2; ++p)
    for (const char* o : {"aten::mul", "aten::chunk", "aten::neg", "aten::cat", "aten::mul", "aten::add"}) a.items.push_back(op(o));
  for (const char* o : {"aten::repeat_interleave", "aten::repeat_interleave", "aten::transpose", "aten::matmul", "aten::div", "aten::add",
                        "aten::softmax", "aten::matmul", "aten::transpose", "aten::reshape"})
    a.items.push_back(op(o));
  a.items.push_back(linear());
  return a;
}

// SwiGLU: down(silu(gate(x)) * up(x)), the product the module's own op.
Mod swiglu() { return {"MLP", {linear(), leaf("SiLU", {"aten::silu"}), linear(), op("aten::mul"), linear()}, nullptr}; }

Mod decoder_lm(const Mod& mlp_module, int depth, const Mod& norm = rms_norm()) {
  Mod layer{"DecoderLayer", {norm, rotary_attention(), op("aten::add"), norm, mlp_module, op("aten::add")}, nullptr};
  Mod root{"DecoderLM",
           {leaf("Embedding", {"aten::embedding"}), op("aten::full"), op("aten::triu"),
            leaf("RotaryEmbedding", {"aten::arange", "aten::outer", "aten::cat", "aten::cos", "aten::sin"})},
           nullptr};
  for (int l = 0; l < depth; ++l) root.items.push_back(layer);
  root.items.push_back(norm);
  root.items.push_back(linear());
  return root;
}

}  // namespace

TEST_CASE("inferred layers: a Llama-style decoder: RMSNorm written by hand is one norm, rotary attention one unit, SwiGLU an MLP") {
  BareRun r = bare_run(decoder_lm(swiglu(), 3));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(has_layer(r.annotation.tree, "RMSNorm 1"));
  CHECK(s.blocks == 2 * 3 * 3);  // each layer, its attention and its MLP; two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(s.leaf_f1 >= 0.99);  // all but the rotary table's ops, loose in the root
}

TEST_CASE("inferred layers: a LayerNorm written by hand (centred, then scaled and shifted) is one norm unit") {
  // ConvNeXt's channels-first LayerNorm: u = mean(x), s = mean((x - u)^2),
  // (x - u) / sqrt(s + eps), then weight[:, None, None] * x + bias[:, None, None].
  Mod ln2d = leaf("LayerNorm2d", {"aten::mean", "aten::sub", "aten::pow", "aten::mean", "aten::add", "aten::sqrt", "aten::sub",
                                  "aten::div", "aten::slice", "aten::unsqueeze", "aten::mul", "aten::slice", "aten::unsqueeze", "aten::add"});
  Mod block{"Block", {conv(), ln2d, conv(), leaf("GELU", {"aten::gelu"}), conv(), op("aten::add")}, nullptr};
  BareRun r = bare_run(model({block, block, block}));
  CHECK(has_layer(r.annotation.tree, "LayerNorm 1"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: ConvNeXt's downsampling with a LayerNorm written by hand: the norm after a stage's last add is the downsampling's") {
  // (x - u) computed again before the epsilon's sum, and the weight's and bias's [:, None, None]
  // as torch 1.13 records them; the norm right after a block's add opens the downsampling (a
  // norm after an add is post-norm only where most adds have one).
  Mod ln_cf = leaf("LayerNorm", {"aten::mean", "aten::sub", "aten::pow", "aten::mean", "aten::sub", "aten::add", "aten::sqrt", "aten::div",
                                 "aten::slice", "aten::unsqueeze", "aten::unsqueeze", "aten::as_strided", "aten::mul", "aten::slice",
                                 "aten::as_strided", "aten::unsqueeze", "aten::unsqueeze", "aten::as_strided", "aten::add"});
  Mod block{"Block",
            {conv(), op("aten::permute"), layer_norm(), linear(), leaf("GELU", {"aten::gelu"}), linear(), op("aten::mul"), op("aten::permute"),
             op("aten::add")},
            nullptr};
  Mod down{"Sequential", {ln_cf, conv()}, nullptr};
  Mod stage1{"Sequential", {block}, nullptr}, stage3{"Sequential", {block, block, block}, nullptr};
  Mod root{"ConvNeXt",
           {Mod{"Sequential", {conv(), ln_cf}, nullptr}, stage1, down, stage1, down, stage3, down, stage1, op("aten::mean"), layer_norm(),
            linear()},
           nullptr};
  BareRun r = bare_run(root);
  CHECK(has_layer(r.annotation.tree, "LayerNorm 11"));  // four written by hand, six in the blocks, the head's
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a sparse MoE with a gated shared expert: gated experts whole, the shared one an expert, one join") {
  // Qwen-MoE's block: router softmax and top-k, each expert a SwiGLU between a gather and an
  // index_add_, then the shared expert scaled by a sigmoid gate and summed with the routed
  // output before the residual add; or, as some write it, the gate first.
  for (bool gate_first : {false, true}) {
    CAPTURE(gate_first);
    Mod moe{"SparseMoeBlock", {op("aten::view"), linear(), op("aten::softmax"), op("aten::topk"), op("aten::sum"), op("aten::div"),
                               op("aten::zeros_like"), op("aten::one_hot"), op("aten::permute")},
            nullptr};
    for (int e = 0; e < 4; ++e) {
      for (const char* o : {"aten::select", "aten::where", "aten::index"}) moe.items.push_back(op(o));
      moe.items.push_back(swiglu());
      for (const char* o : {"aten::unsqueeze", "aten::index", "aten::mul", "aten::index_add_"}) moe.items.push_back(op(o));
    }
    if (!gate_first) moe.items.push_back(swiglu());  // the shared expert
    for (Mod m : {linear(), leaf("Sigmoid", {"aten::sigmoid"})}) moe.items.push_back(m);
    if (gate_first) moe.items.push_back(swiglu());
    for (const char* o : {"aten::mul", "aten::add", "aten::view"}) moe.items.push_back(op(o));
    const AccuracyScore s = bare_score(decoder_lm(moe, 2));
    CHECK(s.blocks == 2 * 2 * (3 + 5));  // each layer, attention, MoE and its five SwiGLUs; two forwards
    CHECK(s.block_recall == doctest::Approx(1.0));
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
}

TEST_CASE("inferred layers: pre-activation blocks alternating with downsampling ones are blocks, not layers of sublayers") {
  // BN, ReLU, conv twice inline in the block (no residual-function module), a downsampling
  // block adding a pooling and a projection shortcut: the two kinds alternate, as a stage of
  // two blocks each makes them, yet each is a block of its own.
  Mod plain{"PreActBlock", {bn(), relu_module(), conv(), bn(), relu_module(), conv(), op("aten::add")}, nullptr};
  Mod down{"PreActBlock",
           {bn(), relu_module(), conv(), bn(), relu_module(), conv(), leaf("AvgPool2d", {"aten::avg_pool2d"}), conv(), op("aten::add")},
           nullptr};
  BareRun r = bare_run(model({plain, down, plain, down, plain}));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  for (NodeId i = 0; i < r.annotation.tree.size(); ++i) {
    CHECK_FALSE(r.annotation.tree.name_of(i).starts_with("Layer "));
    CHECK_FALSE(r.annotation.tree.name_of(i).starts_with("MLP"));
  }
}

TEST_CASE("inferred layers: an EmbeddingBag over a 2-D batch of bags makes its offsets and flattens its ids itself; one may copy its result") {
  Mod bag = leaf("EmbeddingBag", {"aten::arange", "aten::reshape", "aten::embedding_bag"});
  Mod copying = leaf("EmbeddingBag", {"aten::arange", "aten::reshape", "aten::embedding_bag", "aten::copy_"});
  Mod root{"Recommender", {}, nullptr};
  for (int f = 0; f < 4; ++f) {
    root.items.push_back(op("aten::select"));
    root.items.push_back(f % 2 ? copying : bag);
  }
  for (Mod m : {op("aten::stack"), op("aten::view"), linear(), leaf("ReLU", {"aten::relu"}), linear()}) root.items.push_back(m);
  BareRun r = bare_run(root);
  // Each op a line: index, op, its module, its inferred layer path.
  const std::string dump = truth_dump(*r.bare.model, r.annotation, r.truth, 0);
  int bag_ops = 0;
  for (size_t at = 0, end; at < dump.size(); at = end + 1) {
    end = dump.find('\n', at);
    if (end == std::string::npos) end = dump.size();
    const std::string line = dump.substr(at, end - at);
    if (line.find("(EmbeddingBag)") == std::string::npos) continue;
    ++bag_ops;
    CHECK_MESSAGE(line.find("/Embedding ") != std::string::npos, line);
  }
  CHECK(bag_ops == 4 * 3 + 2);
}

TEST_CASE("inferred layers: the first of a run of one-unit blocks (DCN's cross layers) is cut from what came before it") {
  Mod cross{"CrossLayer", {linear(), op("aten::mul"), op("aten::add")}, nullptr};
  Mod root{"DCN", {}, nullptr};
  for (int f = 0; f < 3; ++f)
    for (Mod m : {op("aten::slice"), op("aten::select"), leaf("Embedding", {"aten::embedding"})}) root.items.push_back(m);
  for (Mod m : {bn(), op("aten::cat"), cross, cross, cross, linear()}) root.items.push_back(m);
  const AccuracyScore s = bare_score(root);
  CHECK(s.blocks == 2 * 3);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: message passing layers start at their gather (or the transform before it) and hold their own sums") {
  // GraphSAGE: gather the neighbours' features, sum them into their targets, a self and a
  // neighbour linear summed; the model norms and activates between layers (PyTorch
  // Geometric's convs return before both). GIN-like sums ((1 + eps) x + messages) inside the
  // layer are no residual joins.
  Mod sage{"SAGELayer",
           {op("aten::index"), op("aten::zeros_like"), op("aten::unsqueeze"), op("aten::expand_as"), op("aten::scatter_add_"), linear(),
            op("aten::unsqueeze"), op("aten::mul"), linear(), op("aten::add")},
           nullptr};
  Mod relu = leaf("ReLU", {"aten::relu"});
  Mod graph{"GraphSAGE", {sage, layer_norm(), relu, sage, layer_norm(), relu, sage, linear()}, nullptr};
  const AccuracyScore s = bare_score(graph);
  CHECK(s.blocks == 2 * 3);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  // GCN: transform first, then gather and sum, the self term added; the model's activation
  // and dropout between layers are not the layer's.
  Mod gcn{"GCNLayer",
          {linear(), op("aten::index_select"), op("aten::zeros_like"), op("aten::index_add_"), op("aten::mul"), op("aten::add")},
          nullptr};
  Mod net{"GCN", {gcn, relu, dropout(), gcn, relu, dropout(), gcn, linear()}, nullptr};
  const AccuracyScore g = bare_score(net);
  CHECK(g.block_recall == doctest::Approx(1.0));
  CHECK(g.node_precision == doctest::Approx(1.0));
  // A residual sum after the activation is the model's too: x = x + F.relu(conv(x)).
  Mod res{"ResGCN", {linear()}, nullptr};
  for (int k = 0; k < 3; ++k) res.items.insert(res.items.end(), {gcn, relu, op("aten::add")});
  res.items.push_back(linear());
  const AccuracyScore r = bare_score(res);
  CHECK(r.blocks == 2 * 3);
  CHECK(r.block_recall == doctest::Approx(1.0));
  CHECK(r.node_precision == doctest::Approx(1.0));
}


TEST_CASE("inferred layers: a routed half is a mixture of experts beside nn.MultiheadAttention too") {
  Mod mha = multihead_attention();
  Mod block{"MoEBlock", {layer_norm(), mha, dropout(), op("aten::add"), layer_norm(), routed_experts(), op("aten::add")}, nullptr};
  const AccuracyScore s = bare_score(vit({block, block}));
  CHECK(s.blocks == 2 * (2 + 2 + 8));  // blocks, mixtures, experts; two forwards
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a graph attention layer starts at the projections it gathers, its scores' activation inside it") {
  Mod gat{"GATLayer",
          {linear(), op("aten::view"), linear(), op("aten::view"), op("aten::index"), op("aten::index"), op("aten::add"),
           leaf("LeakyReLU", {"aten::leaky_relu"}), op("aten::mul"), op("aten::sum"), op("aten::exp"), op("aten::zeros"),
           op("aten::unsqueeze"), op("aten::expand_as"), op("aten::scatter_add_"), op("aten::index"), op("aten::div"), op("aten::zeros"),
           op("aten::index"), op("aten::unsqueeze"), op("aten::mul"), op("aten::index_add_"), op("aten::reshape")},
          nullptr};
  Mod elu = leaf("ELU", {"aten::elu"});  // the model's, between layers: x = F.elu(conv(x))
  Mod net{"GAT", {gat, elu, dropout(), gat, elu, dropout(), gat, linear()}, nullptr};
  const AccuracyScore s = bare_score(net);
  CHECK(s.blocks == 2 * 3);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a DenseNet concatenating after each layer in its loop: the concatenation is the loop's, not the next layer's") {
  // x = torch.cat([x, layer(x)], 1) for each layer of a stage; transitions between stages.
  Mod layer{"DenseLayer", {bn(), relu_module(), conv(), bn(), relu_module(), conv()}, nullptr};
  Mod stage{"DenseStage", {layer, op("aten::cat"), layer, op("aten::cat"), layer, op("aten::cat")}, nullptr};
  Mod transition{"Transition", {bn(), relu_module(), conv(), leaf("AvgPool2d", {"aten::avg_pool2d"})}, nullptr};
  Mod root{"DenseNet", {conv(), stage, transition, stage, transition, stage, bn(), leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}),
                        op("aten::flatten"), linear()},
           nullptr};
  const AccuracyScore s = bare_score(root);
  // Every layer and every stage (its layers and its concatenations) found with exactly its ops;
  // the transitions stand between stages.
  CHECK(s.block_recall >= 2.0 * (9 + 3) / double(s.blocks) - 1e-9);
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a DenseNet whose layers concatenate their inputs first: the concatenation after the last layer is the stage's") {
  // torchvision's _DenseLayer: cat(inputs), norm, relu, conv, norm, relu, conv; its _DenseBlock
  // concatenates all the features at the end, before the transition.
  Mod layer{"DenseLayer", {op("aten::cat"), bn(), relu_module(), conv(), bn(), relu_module(), conv()}, nullptr};
  Mod stage{"DenseBlock", {layer, layer, layer, op("aten::cat")}, nullptr};
  Mod transition{"Transition", {bn(), relu_module(), conv(), leaf("AvgPool2d", {"aten::avg_pool2d"})}, nullptr};
  Mod root{"DenseNet", {conv(), bn(), relu_module(), leaf("MaxPool2d", {"aten::max_pool2d"}), stage, transition, stage, transition, stage, bn(),
                        leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), linear()},
           nullptr};
  const AccuracyScore s = bare_score(root);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a block computing its projection shortcut first holds it, and opens a stage") {
  Mod bottleneck{"Bottleneck", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), conv(), bn(), op("aten::add"), relu_module()}, nullptr};
  Mod shortcut{"Sequential", {conv(), bn()}, nullptr};
  Mod first{"Bottleneck", {shortcut, conv(), bn(), relu_module(), conv(), bn(), relu_module(), conv(), bn(), op("aten::add"), relu_module()},
            nullptr};
  auto net = [&](std::vector<Mod> stages) {
    Mod root{"Net", {conv(), bn(), relu_module()}, nullptr};
    for (Mod& m : stages) root.items.push_back(std::move(m));
    for (Mod m : {leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), linear()}) root.items.push_back(m);
    return root;
  };
  Mod stage3{"Sequential", {first, bottleneck, bottleneck}, nullptr};
  Mod stage2{"Sequential", {first, bottleneck}, nullptr};
  Mod last{"Sequential", {first}, nullptr};
  // Three blocks a stage; and two, where the downsampling kind (the plain block plus its
  // projection) is as frequent as the plain one.
  for (const auto& [root, stage] : {std::pair{net({stage3, stage3}), "Stage 2: 3 blocks"}, std::pair{net({stage2, stage2, last}), "Stage 2: 2 blocks"}}) {
    BareRun r = bare_run(root);
    CHECK(has_layer(r.annotation.tree, stage));
    const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
    // Every block: each stage, each bottleneck (the first with its shortcut, computed first:
    // no stem cut from it) and each shortcut.
    CHECK(s.block_recall == doctest::Approx(1.0));
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
}

TEST_CASE("inferred layers: a norm between a permute and the permute back is one LayerNorm2d; a permute on one side only is the block's") {
  // A ConvNeXt written by hand: LayerNorm2d wraps nn.LayerNorm in permutes (stem and
  // downsamplings); each block permutes once before its norm and once after its MLP.
  Mod norm2d{"LayerNorm2d", {op("aten::permute"), leaf("LayerNorm", {"aten::layer_norm"}), op("aten::permute")}, nullptr};
  Mod block{"ConvNeXtBlock",
            {conv(), op("aten::permute"), leaf("LayerNorm", {"aten::layer_norm"}), leaf("Linear", {"aten::linear"}),
             leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"}), op("aten::mul"), op("aten::permute"), op("aten::add")},
            nullptr};
  Mod stage{"Sequential", {block, block}, nullptr};
  Mod down{"Sequential", {norm2d, conv()}, nullptr};
  Mod root{"ConvNeXt", {Mod{"Sequential", {conv(), norm2d}, nullptr}, stage, down, stage, down, stage, op("aten::mean"),
                        leaf("LayerNorm", {"aten::layer_norm"}), leaf("Linear", {"aten::linear"})},
           nullptr};
  BareRun r = bare_run(root);
  CHECK(has_layer(r.annotation.tree, "LayerNorm2d 1"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: Gemma's RMSNorm (in float32, scaled by 1 + weight, cast back) is one norm") {
  Mod gemma_norm = leaf("GemmaRMSNorm", {"aten::to", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::to",
                                         "aten::add", "aten::mul", "aten::type_as"});
  BareRun r = bare_run(decoder_lm(swiglu(), 3, gemma_norm));
  CHECK(has_layer(r.annotation.tree, "RMSNorm 1"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: an RMSNorm whose 1 + weight is reshaped to broadcast first is one norm") {
  // Griffin's: x * rsqrt(mean(square(x)) + eps) * (1 + scale.reshape(...)).
  Mod griffin_norm = leaf("RMSNorm", {"aten::square", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::reshape", "aten::add",
                                      "aten::mul"});
  BareRun r = bare_run(decoder_lm(swiglu(), 3, griffin_norm));
  CHECK(has_layer(r.annotation.tree, "RMSNorm 1"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the input an unrolled decoder concatenates for its cell each step is no join closing a block") {
  // An LSTMCell decoder with additive attention, unrolled in Python: per step, the query's
  // projection, scores, a softmax, the context, then cat([token, context]) into the cell.
  Mod root{"Seq2Seq", {leaf("Embedding", {"aten::embedding"}), leaf("LSTM", {"aten::zeros", "aten::lstm"}), linear(),
                       leaf("Embedding", {"aten::embedding"})},
           nullptr};
  for (int t = 0; t < 4; ++t)
    for (Mod m : {linear(), op("aten::unsqueeze"), op("aten::add"), op("aten::tanh"), linear(), op("aten::squeeze"), op("aten::softmax"),
                  op("aten::mul"), op("aten::sum"), op("aten::select"), op("aten::cat"), leaf("LSTMCell", {"aten::lstm_cell"}), linear()})
      root.items.push_back(m);
  root.items.push_back(op("aten::stack"));
  BareRun r = bare_run(root);
  for (NodeId i = 0; i < r.annotation.tree.size(); ++i) CHECK_FALSE(r.annotation.tree.name_of(i).starts_with("Block "));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a U-Net's double convs are blocks; its decoder's concatenation of a skip after upsampling joins no branch") {
  Mod double_conv{"DoubleConv", {conv(), bn(), relu_module(), conv(), bn(), relu_module()}, nullptr};
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  Mod down{"Down", {pool, double_conv}, nullptr};
  Mod up = leaf("ConvTranspose2d", {"aten::conv_transpose2d"});
  Mod root{"UNet", {double_conv, down, down, up, op("aten::cat"), double_conv, up, op("aten::cat"), double_conv, conv()}, nullptr};
  const AccuracyScore s = bare_score(root);
  // Per forward: five double convs and two downs; every double conv is found.
  CHECK(s.blocks == 14);
  CHECK(s.block_recall >= 10.0 / 14 - 1e-9);
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: one module called twice back to back (a siamese encoder) is a block each time, a loose op more or less") {
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  Mod head = leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"});
  Mod encoder{"Encoder", {conv(), bn(), relu_module(), pool, conv(), bn(), relu_module(), head, leaf("Flatten", {"aten::flatten"}), linear()},
              nullptr};
  Mod encoder_copying = encoder;  // the runtime adds a copy in one call
  encoder_copying.items.insert(encoder_copying.items.begin() + 4, op("aten::copy_"));
  const AccuracyScore s = bare_score(model({encoder, encoder_copying, op("aten::cosine_similarity")}));
  CHECK(s.blocks == 4);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: repeats that open with lookups claim no call: the lookups may be the caller's") {
  // Features looked up at the root, then each passed through one MLP module.
  Mod mlp{"Sequential", {linear(), relu_module(), linear()}, nullptr};
  Mod root{"TwoTower", {leaf("Embedding", {"aten::embedding"}), leaf("EmbeddingBag", {"aten::embedding_bag"}), op("aten::cat"), mlp,
                        leaf("Embedding", {"aten::embedding"}), leaf("EmbeddingBag", {"aten::embedding_bag"}), op("aten::cat"), mlp,
                        op("aten::t"), op("aten::matmul")},
           nullptr};
  CHECK(bare_score(root).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: convs back to back (depthwise, then pointwise) are one separable conv, before a norm or without one") {
  Mod sep{"SeparableConv2d", {conv(), conv()}, nullptr};
  SUBCASE("pre-activation blocks: norm, activation, separable conv, twice, then the add") {
    Mod block{"PreActSepBlock", {bn(), relu_module(), sep, bn(), relu_module(), sep, op("aten::add")}, nullptr};
    const AccuracyScore s = bare_score(model({block, block, block}));
    CHECK(s.block_recall == doctest::Approx(1.0));
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
  SUBCASE("Xception's middle flow: activation, separable conv, norm, three times, then the add") {
    Mod block{"XceptionBlock", {relu_module(), sep, bn(), relu_module(), sep, bn(), relu_module(), sep, bn(), op("aten::add")}, nullptr};
    const AccuracyScore s = bare_score(model({block, block, block}));
    // Every separable conv is found (18 of the 24 blocks); the blocks themselves are not: the
    // ops cannot tell a ReLU that opens the next block from one that ends a conv's group.
    CHECK(s.block_recall >= 18.0 / 24 - 1e-9);
  }
}

TEST_CASE("inferred layers: a norm of the branch's output before it joins (Swin V2's res-post-norm) is the layer's, not the MLP's") {
  Mod merge{"PatchMerging", {op("aten::slice"), op("aten::slice"), op("aten::cat"), linear(), layer_norm()}, nullptr};
  Mod b{"SwinBlockV2", {hand_attention(), layer_norm(), op("aten::add"), mlp(), layer_norm(), op("aten::add")}, nullptr};
  Mod root{"SwinV2", {conv(), leaf("Permute", {"aten::permute"}), layer_norm(), b, b, merge, b, b, merge, b, b, layer_norm(), linear()}, nullptr};
  BareRun r = bare_run(root);
  for (int k = 1; k <= 6; ++k) CHECK(has_layer(r.annotation.tree, "MLP " + std::to_string(k) + ": Linear + GELU + Dropout + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall >= 0.65);
}

TEST_CASE("inferred layers: a position bias each attention computes with its own MLP (Swin V2's cpb_mlp) is the attention's") {
  auto attention = [](bool bias_mlp) {
    Mod a{"WindowAttentionV2", {}, nullptr};
    if (bias_mlp) {
      a.items.push_back(Mod{"Sequential", {linear(), relu_module(), linear()}, nullptr});
      for (const char* o : {"aten::view", "aten::index", "aten::view", "aten::permute", "aten::contiguous", "aten::sigmoid", "aten::mul"})
        a.items.push_back(op(o));
    }
    for (Mod m : {linear(), op("aten::reshape"), op("aten::permute"), op("aten::unbind"), op("aten::transpose"), op("aten::matmul"),
                  op("aten::add"), op("aten::softmax"), dropout(), op("aten::matmul"), op("aten::transpose"), op("aten::reshape"), linear(),
                  dropout(), op("aten::view"), op("aten::permute"), op("aten::reshape")})  // the windows back into the map
      a.items.push_back(m);
    return a;
  };
  SUBCASE("the bias MLP and what combines it are inside each attention, the MLP a module of its own") {
    Mod b{"SwinBlockV2", {attention(true), layer_norm(), op("aten::add"), mlp(), layer_norm(), op("aten::add")}, nullptr};
    Mod root{"SwinV2", {conv(), leaf("Permute", {"aten::permute"}), layer_norm(), b, b, b, b, layer_norm(), linear()}, nullptr};
    BareRun r = bare_run(root);
    CHECK(has_layer(r.annotation.tree, "Bias MLP 4"));  // named apart from the layers' MLPs, numbered on its own
    CHECK(has_layer(r.annotation.tree, "MLP 1: Linear + GELU + Dropout + Linear + Dropout"));
    const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
    CHECK(s.block_recall == doctest::Approx(1.0));  // each block, each attention, each MLP and each bias MLP
    CHECK(s.node_precision == doctest::Approx(1.0));
  }
  SUBCASE("a projection and its activation before each attention, with nothing combined after them, are its input") {
    Mod b{"Block", {linear(), leaf("GELU", {"aten::gelu"}), attention(false), op("aten::add"), layer_norm()}, nullptr};
    Mod root{"Net", {leaf("Embedding", {"aten::embedding"}), b, b, b, linear()}, nullptr};
    CHECK(bare_score(root).block_recall == doctest::Approx(1.0));  // each attention without them, each block
  }
}

TEST_CASE("inferred layers: what every attention computes first (Swin's relative position index) stays in the first one too, a view more or less") {
  auto attention = [](bool extra_view) {
    Mod a{"ShiftedWindowAttention", {op("aten::index"), op("aten::view"), op("aten::permute")}, nullptr};
    if (extra_view) a.items.push_back(op("aten::as_strided"));
    for (Mod m : {op("aten::pad"), op("aten::view"), linear(), op("aten::reshape"), op("aten::permute"), op("aten::transpose"),
                  op("aten::matmul"), op("aten::add"), op("aten::softmax"), dropout(), op("aten::matmul"), op("aten::transpose"),
                  op("aten::reshape"), linear(), dropout(), op("aten::view"), op("aten::permute"), op("aten::reshape")})
      a.items.push_back(m);
    return a;
  };
  auto block = [&](bool extra_view) {
    return Mod{"SwinBlock", {layer_norm(), attention(extra_view), op("aten::add"), layer_norm(), mlp(), op("aten::add")}, nullptr};
  };
  Mod root{"Swin", {conv(), leaf("Permute", {"aten::permute"}), layer_norm(), block(true), block(false), block(false), block(false),
                    layer_norm(), linear()},
           nullptr};
  const AccuracyScore s = bare_score(root);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: views alone between residual halves (MaxViT's window departition) make no block") {
  Mod attn_half{"Sequential", {layer_norm(), hand_attention(), dropout()}, nullptr};
  Mod mlp_half{"Sequential", {layer_norm(), linear(), leaf("GELU", {"aten::gelu"}), linear(), dropout()}, nullptr};
  Mod partition{"PartitionAttentionLayer",
                {op("aten::reshape"), op("aten::permute"), op("aten::reshape"), attn_half, op("aten::add"), mlp_half, op("aten::add"),
                 op("aten::reshape"), op("aten::permute"), op("aten::reshape")},
                nullptr};
  Mod mbconv{"MBConv", {conv(), bn(), leaf("GELU", {"aten::gelu"}), conv(), bn(), conv(), op("aten::add")}, nullptr};
  Mod layer{"MaxVitLayer", {mbconv, partition, partition}, nullptr};
  Mod root{"MaxVit", {conv(), bn(), leaf("GELU", {"aten::gelu"}), layer, layer, layer, leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}),
                      op("aten::flatten"), linear()},
           nullptr};
  BareRun r = bare_run(root);
  const AnnotationTree& t = r.annotation.tree;
  for (NodeId n = 0; n < t.size(); ++n)
    if (t.kind[n] == NodeKind::Layer) CHECK_FALSE(t.name_of(n).ends_with(":"));
  // The halves either side of the views pair into layers, two per MaxViT layer.
  CHECK(has_layer(t, "Layer 6: attention + MLP"));
}

TEST_CASE("inferred layers: units are named as PyTorch names their modules, an op it has no name for by its own") {
  Mod root{"Net",
           {conv(), leaf("InstanceNorm2d", {"aten::instance_norm"}), leaf("ReLU6", {"aten::relu6"}), conv(),
            leaf("Hardswish", {"aten::hardswish"}), op("aten::affine_grid_generator"), op("aten::grid_sampler"), conv(),
            leaf("Hardsigmoid", {"aten::hardsigmoid"}), op("aten::flatten"), leaf("RNN", {"aten::rnn_tanh"}), linear()},
           nullptr};
  BareRun r = bare_run(root);
  for (const char* name : {"InstanceNorm 1", "ReLU6 1", "Hardswish 1", "GridSampler 1", "Hardsigmoid 1", "RNN 1"})
    CHECK_MESSAGE(has_layer(r.annotation.tree, name), name);
}

TEST_CASE("inferred layers: a block that adds nothing back (the first of a MobileNet or MnasNet stack) opens a stage") {
  auto ir = [](bool residual) {
    Mod m{"InvertedResidual", {conv(), bn(), relu_module(), conv(), bn(), relu_module(), conv(), bn()}, nullptr};
    if (residual) m.items.push_back(op("aten::add"));
    return m;
  };
  Mod stack{"Sequential", {ir(false), ir(true), ir(true)}, nullptr};
  Mod root{"MNASNet", {conv(), bn(), relu_module(), stack, stack, stack, leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}),
                       op("aten::flatten"), linear()},
           nullptr};
  BareRun r = bare_run(root);
  CHECK(has_layer(r.annotation.tree, "Stage 3: 3 blocks"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each stack and each residual block
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a causal mask built before the first layer is not its attention's, even where later leads hold a view more") {
  // nn.TransformerDecoder's layers on nn.MultiheadAttention (batch first: a transpose leads each
  // attention); torch.triu(torch.full(...)) made by the model first; the profiler records an
  // as_strided more before the later attentions.
  auto mha = [](bool extra_view) {
    Mod m{"MultiheadAttention", {}, nullptr};
    if (extra_view) m.items.push_back(op("aten::as_strided"));
    for (const char* o : {"aten::transpose", "aten::linear", "aten::chunk", "aten::view", "aten::transpose", "aten::baddbmm",
                          "aten::softmax", "aten::dropout", "aten::bmm", "aten::transpose", "aten::view", "aten::linear", "aten::view"})
      m.items.push_back(op(o));
    return m;
  };
  auto layer = [&](bool extra_view) {
    return Mod{"TransformerEncoderLayer",
               {mha(extra_view), dropout(), op("aten::add"), layer_norm(), linear(), op("aten::relu"), dropout(), linear(), dropout(),
                op("aten::add"), layer_norm()},
               nullptr};
  };
  Mod root{"Decoder",
           {leaf("Embedding", {"aten::embedding"}), op("aten::add"), op("aten::full"), op("aten::triu"), layer(false), layer(true),
            layer(true), linear()},
           nullptr};
  BareRun r = bare_run(root);
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.name_of(n) == "aten::triu") CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]) == "Model");
}

TEST_CASE("inferred layers: an Attention U-Net: gates on the skips, up-convolutions, double convs") {
  // Decoder steps: upsample + conv + norm + ReLU (an up_conv), a gate on the skip (two 1x1
  // projections with norms, summed, ReLU, a projection to one score with its norm, sigmoid,
  // the product with the skip), the concatenation, a double conv.
  Mod double_conv{"Sequential", {conv(), bn(), relu_module(), conv(), bn(), relu_module()}, nullptr};
  Mod up{"Sequential", {leaf("Upsample", {"aten::upsample_nearest2d"}), conv(), bn(), relu_module()}, nullptr};
  Mod projection{"Sequential", {conv(), bn()}, nullptr};
  Mod gate{"AttentionGate",
           {projection, projection, op("aten::add"), relu_module(), Mod{"Sequential", {conv(), bn(), leaf("Sigmoid", {"aten::sigmoid"})}, nullptr},
            op("aten::mul")},
           nullptr};
  Mod pool = leaf("MaxPool2d", {"aten::max_pool2d"});
  Mod root{"AttUNet", {double_conv, pool, double_conv, pool, double_conv}, nullptr};
  for (int level = 0; level < 2; ++level)
    for (const Mod& m : {up, gate, op("aten::cat"), double_conv}) root.items.push_back(m);
  root.items.push_back(conv());
  BareRun r = bare_run(root);
  CHECK(has_layer(r.annotation.tree, "Attention gate 2"));
  CHECK(has_layer(r.annotation.tree, "Up-conv 2: Upsample + Conv + BatchNorm + ReLU"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  // All but the gates' score projections (conv, norm and sigmoid: F.sigmoid and nn.Sigmoid
  // look the same).
  CHECK(s.block_recall >= 1.0 - 4.0 / double(s.blocks) - 1e-9);
}

TEST_CASE("inferred layers: the upsampling that ends a global pooling's branch (ASPP's) is no up-convolution of the next conv") {
  Mod cbr{"Sequential", {conv(), bn(), relu_module()}, nullptr};
  Mod pooling{"ASPPPooling",
              {leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), conv(), leaf("ReLU", {"aten::relu"}),
               op("aten::upsample_bilinear2d")},
              nullptr};
  Mod aspp{"ASPP", {pooling, cbr, cbr, op("aten::cat"), cbr}, nullptr};
  Mod root{"Seg", {cbr, leaf("MaxPool2d", {"aten::max_pool2d"}), cbr, aspp, conv()}, nullptr};
  BareRun r = bare_run(root);
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n) CHECK_FALSE(r.annotation.tree.name_of(n).starts_with("Up-conv"));
}
