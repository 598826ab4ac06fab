// Layers inferred for more families (ALBERT, PVT, Mamba, RepVGG, PoolFormer, a diffusion UNet,
// YOLOv8, SAM, EGNN, TimeSformer, TFT, a multi-task model's towers, BART), each written as its
// reference code writes it and scored against the module tree that made the ops, as in
// test_infer_layers.cpp.
#include "model_trace.h"

#include <string>
#include <vector>

using namespace strata;
using namespace strata::test;

TEST_CASE("inferred layers: a projection before nn.MultiheadAttention's packed in-projection is no part of it") {
  // ALBERT: the embeddings mapped to the hidden size by a Linear, then one post-norm layer on
  // nn.MultiheadAttention (batch_first: a transpose, its packed projection, a chunk). Its
  // cross-attention form (a transformer decoder's: the packed weight split, the query's
  // projection, then key and value's packed) keeps both projections.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  auto mha = [](std::vector<Mod> in) {
    Mod m{"MultiheadAttention", std::move(in), nullptr};
    for (const char* o : {"aten::view", "aten::transpose", "aten::div", "aten::bmm", "aten::softmax", "aten::bmm", "aten::transpose",
                          "aten::contiguous", "aten::view"})
      m.items.push_back(op(o));
    m.items.push_back(op("aten::linear"));
    m.items.push_back(op("aten::transpose"));
    return m;
  };
  Mod self = mha({op("aten::transpose"), op("aten::linear"), op("aten::chunk")});
  Mod layer{"AlbertLayer", {self, op("aten::add"), ln, lin, leaf("GELU", {"aten::gelu"}), lin, op("aten::add"), ln}, nullptr};
  BareRun r = bare_run(Mod{"Albert", {leaf("Embedding", {"aten::embedding"}), ln, lin, layer, layer, layer, lin}, nullptr});
  AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));

  Mod cross = mha({op("aten::transpose"), op("aten::split_with_sizes"), op("aten::split_with_sizes"), op("aten::linear"), op("aten::linear"),
                   op("aten::chunk")});
  Mod decoder{"DecoderLayer", {self, op("aten::add"), ln, cross, op("aten::add"), ln, lin, leaf("ReLU", {"aten::relu"}), lin, op("aten::add"), ln},
              nullptr};
  r = bare_run(Mod{"Decoder", {leaf("Embedding", {"aten::embedding"}), decoder, decoder, lin}, nullptr});
  s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a spatial-reduction attention's query, reduction and norm are the attention's") {
  // PVT's and SegFormer's attention: q(x); the map reduced by a strided conv and normed; kv
  // of the reduced map; scores, softmax, weighted sum; proj. One attention, its children the
  // modules.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"SRAttention",
                {lin, op("aten::reshape"), op("aten::permute"), op("aten::permute"), op("aten::reshape"), leaf("Conv2d", {"aten::conv2d"}),
                 op("aten::reshape"), op("aten::permute"), ln, lin, op("aten::reshape"), op("aten::permute"), op("aten::select"),
                 op("aten::select"), op("aten::transpose"), op("aten::matmul"), op("aten::mul"), op("aten::softmax"), op("aten::matmul"),
                 op("aten::transpose"), op("aten::reshape"), lin},
                nullptr};
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr};
  Mod block{"Block", {ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"PVT", {leaf("Conv2d", {"aten::conv2d"}), op("aten::reshape"), op("aten::transpose"), ln, block, block, block,
                                   ln, op("aten::mean"), lin},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Layer 2: attention + MLP"));
}

TEST_CASE("inferred layers: a selective scan written in Python is its mixer's: its sums and stack join no branches") {
  // Mamba's block: x + mixer(norm(x)). The mixer projects, convolves, then scans the sequence
  // in a Python loop (a state update summed per time step, the outputs stacked), gates and
  // projects out: one module, its own ops the scan's.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod mixer{"MambaMixer",
            {lin, op("aten::chunk"), op("aten::transpose"), leaf("Conv1d", {"aten::conv1d"}), op("aten::transpose"), op("aten::silu"), lin,
             op("aten::split_with_sizes"), lin, op("aten::softplus"), op("aten::exp"), op("aten::neg"), op("aten::zeros")},
            nullptr};
  for (int step = 0; step < 6; ++step)
    for (const char* o : {"aten::select", "aten::unsqueeze", "aten::mul", "aten::exp", "aten::mul", "aten::mul", "aten::add", "aten::mul", "aten::sum"})
      mixer.items.push_back(op(o));
  for (Mod m : {op("aten::stack"), op("aten::mul"), op("aten::add"), op("aten::silu"), op("aten::mul"), lin}) mixer.items.push_back(m);
  Mod norm{"RMSNorm", {op("aten::pow"), op("aten::mean"), op("aten::add"), op("aten::rsqrt"), op("aten::mul"), op("aten::mul")}, nullptr};
  Mod block{"MambaBlock", {norm, mixer, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"MambaLM", {leaf("Embedding", {"aten::embedding"}), block, block, block, norm, lin}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);  // (the mixer's F.silu calls are units of their own: the ops cannot tell them from nn.SiLU)
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks and their mixers
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a norm alone before a block, right after a block of its kind, is the identity branch's, no stem") {
  // RepVGG at training: relu(dense(x) + conv1x1(x) + bn(x)), each branch a module; the identity
  // branch's BatchNorm runs first, and only where the block keeps the shape.
  Mod conv_bn{"Sequential", {conv(), bn()}, nullptr};
  Mod down{"RepVGGBlock", {conv_bn, conv_bn, op("aten::add"), op("aten::add"), relu_module()}, nullptr};
  Mod same{"RepVGGBlock", {bn(), conv_bn, conv_bn, op("aten::add"), op("aten::add"), relu_module()}, nullptr};
  BareRun r = bare_run(Mod{"RepVGG",
                           {down, Mod{"Sequential", {down, same}, nullptr}, Mod{"Sequential", {down, same, same}, nullptr},
                            leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), leaf("Linear", {"aten::linear"})},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: nn.TransformerDecoderLayer's activation is a function, a view after linear1 apart") {
  // The profiler leaves the view linear1 returns its output through beside it where the
  // clock's rounding does not end both at one tick: F.relu is still the layer's own op.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod mha = multihead_attention();
  Mod layer{"TransformerDecoderLayer",
            {mha, drop, op("aten::add"), ln, lin, op("aten::view"), op("aten::relu"), drop, lin, drop, op("aten::add"), ln}, nullptr};
  BareRun r = bare_run(Mod{"Decoder", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, lin}, nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "ReLU 1"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a MetaFormer block whose token mixer holds no weights is one block, the stage's conv before it") {
  // PoolFormer: x + s1 * mixer(norm1(x)), then x + s2 * mlp(norm2(x)), the mixer pool(x) - x,
  // the layer scales' views first; a patch embedding's conv before each stage.
  Mod gn = leaf("GroupNorm", {"aten::group_norm"}), conv1x1 = conv();
  Mod block{"PoolFormerBlock",
            {op("aten::unsqueeze"), op("aten::unsqueeze"), gn, Mod{"Pooling", {leaf("AvgPool2d", {"aten::avg_pool2d"}), op("aten::sub")}, nullptr},
             op("aten::mul"), op("aten::add"), op("aten::unsqueeze"), op("aten::unsqueeze"), gn,
             Mod{"Mlp", {conv1x1, leaf("GELU", {"aten::gelu"}), conv1x1}, nullptr}, op("aten::mul"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"PoolFormer",
                           {conv(), Mod{"Sequential", {block, block}, nullptr}, conv(), Mod{"Sequential", {block, block}, nullptr}, gn,
                            op("aten::mean"), leaf("Linear", {"aten::linear"})},
                           nullptr});
  for (const char* name : {"Block 1: 2 GroupNorm + Pool + 2 Conv + GELU", "Block 4: 2 GroupNorm + Pool + 2 Conv + GELU"})
    CHECK(has_layer(r.annotation.tree, name));
  CHECK(has_layer(r.annotation.tree, "Conv 1"));  // the patch embedding, no block's
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a transformer layer recurring between other blocks (a diffusion UNet's) is still a layer, its GEGLU an MLP") {
  // Stable Diffusion's UNet: residual blocks, each followed by a spatial transformer of one
  // layer (self-attention, cross-attention, GEGLU feed-forward, each pre-norm), so the layer
  // never follows itself. Its feed-forward: proj, chunk, gelu, the product, a dropout, out.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"}), gn = leaf("GroupNorm", {"aten::group_norm"});
  Mod silu = leaf("SiLU", {"aten::silu"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod attention{"CrossAttention", {lin, lin, lin}, nullptr};
  for (const char* o : {"aten::reshape", "aten::transpose", "aten::reshape", "aten::transpose", "aten::reshape", "aten::transpose",
                        "aten::transpose", "aten::matmul", "aten::mul", "aten::softmax", "aten::matmul", "aten::transpose", "aten::reshape"})
    attention.items.push_back(op(o));
  attention.items.push_back(Mod{"Sequential", {lin, drop}, nullptr});
  Mod geglu{"GEGLU", {lin, op("aten::chunk"), op("aten::gelu"), op("aten::mul")}, nullptr};
  Mod layer{"BasicTransformerBlock",
            {ln, attention, op("aten::add"), ln, attention, op("aten::add"), ln, Mod{"FeedForward", {geglu, drop, lin}, nullptr}, op("aten::add")},
            nullptr};
  Mod spatial{"SpatialTransformer",
              {gn, conv(), op("aten::permute"), op("aten::reshape"), layer, op("aten::reshape"), op("aten::permute"), conv(), op("aten::add")},
              nullptr};
  Mod res{"ResBlock", {gn, silu, conv(), gn, silu, drop, conv(), op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"UNet", {conv(), res, spatial, res, spatial, gn, silu, conv()}, nullptr});
  // The GEGLU (its projection, the split, the GELU on one half, the product) is a gated unit.
  for (const char* name : {"Layer 1: attention + MLP", "Layer 2: attention + MLP", "MLP 2: Gate + Dropout + Linear"})
    CHECK(has_layer(r.annotation.tree, name));
}

TEST_CASE("inferred layers: a cross-stage partial module (YOLO's C2f) holds its blocks, from the conv it splits to the conv that fuses") {
  // Conv is conv, BatchNorm, SiLU; C2f: cv1, chunk, bottlenecks on the last part, cat of all
  // parts, cv2. Downsampling Convs stand between them.
  Mod conv_m{"Conv", {conv(), bn(), leaf("SiLU", {"aten::silu"})}, nullptr};
  Mod bottleneck{"Bottleneck", {conv_m, conv_m, op("aten::add")}, nullptr};
  auto c2f = [&](int n) {
    Mod m{"C2f", {conv_m, op("aten::chunk")}, nullptr};
    for (int k = 0; k < n; ++k) m.items.push_back(bottleneck);
    m.items.push_back(op("aten::cat"));
    m.items.push_back(conv_m);
    return m;
  };
  BareRun r = bare_run(Mod{"Yolo", {conv_m, conv_m, c2f(1), conv_m, c2f(2), conv_m, c2f(2), conv(), op("aten::mean")}, nullptr});
  AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "CSP 2: 2 blocks"));

  // YOLOv5's C3: cv3(cat(m(cv1(x)), cv2(x))), no split.
  auto c3 = [&](int n) {
    Mod m{"C3", {conv_m}, nullptr};
    for (int k = 0; k < n; ++k) m.items.push_back(bottleneck);
    for (Mod x : {conv_m, op("aten::cat"), conv_m}) m.items.push_back(x);
    return m;
  };
  r = bare_run(Mod{"Yolo5", {conv_m, conv_m, c3(1), conv_m, c3(2), conv_m, c3(1), conv(), op("aten::mean")}, nullptr});
  s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "CSP 2: 2 blocks"));
}

TEST_CASE("inferred layers: windowed and global attention blocks (SAM's encoder) are layers alike, the partition the block's") {
  // The block partitions its normed map into windows (view, permute, reshape) before the
  // attention and reverses it after, in its windowed layers only; the attention (qkv, scores,
  // proj) is one module in both.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"Attention", {lin}, nullptr};
  for (const char* o : {"aten::reshape", "aten::permute", "aten::reshape", "aten::unbind", "aten::mul", "aten::transpose", "aten::matmul",
                        "aten::softmax", "aten::matmul", "aten::view", "aten::permute", "aten::reshape"})
    attention.items.push_back(op(o));
  attention.items.push_back(lin);
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr};
  auto block = [&](bool windowed) {
    Mod m{"Block", {ln}, nullptr};
    if (windowed)
      for (const char* o : {"aten::view", "aten::permute", "aten::reshape"}) m.items.push_back(op(o));
    m.items.push_back(attention);
    if (windowed)
      for (const char* o : {"aten::view", "aten::permute", "aten::reshape"}) m.items.push_back(op(o));
    for (Mod x : {op("aten::add"), ln, mlp, op("aten::add")}) m.items.push_back(x);
    return m;
  };
  BareRun r = bare_run(Mod{"ImageEncoder", {conv(), op("aten::permute"), op("aten::add"), block(true), block(false), block(true), block(false),
                                           op("aten::permute"), conv(), op("aten::mean")},
                           nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "Layer 4: attention + MLP"));
}

TEST_CASE("inferred layers: an equivariant graph layer (EGNN's) gathers, runs its edge and coordinate MLPs, scatters, updates and adds back") {
  // Each layer: h[src], h[dst] and the squared distance concatenated, the edge MLP, the
  // coordinate MLP scaling the differences scattered to x, the messages scattered, the node
  // MLP on [h, agg], h + that. An input embedding first: no layer's transform.
  Mod lin = leaf("Linear", {"aten::linear"}), silu = leaf("SiLU", {"aten::silu"});
  Mod edge{"Sequential", {lin, silu, lin, silu}, nullptr}, coord{"Sequential", {lin, silu, lin}, nullptr}, node{"Sequential", {lin, silu, lin}, nullptr};
  Mod layer{"EGCL",
            {op("aten::index"), op("aten::index"), op("aten::sub"), op("aten::pow"), op("aten::sum"), op("aten::index"), op("aten::index"),
             op("aten::cat"), edge, op("aten::zeros_like"), coord, op("aten::mul"), op("aten::index_add_"), op("aten::add"),
             op("aten::zeros_like"), op("aten::index_add_"), op("aten::cat"), node, op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"EGNN", {lin, layer, layer, layer, lin, op("aten::sum")}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers and their three MLPs each
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: what one repeat of a block alone computes before its first unit is its caller's") {
  // TFT: a gated residual network selects the variables, the model takes the softmax of its
  // output, then runs one gated residual network per variable: the softmax falls between the
  // first two networks and is neither's.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod grn{"GRN", {lin, leaf("ELU", {"aten::elu"}), lin, leaf("Dropout", {"aten::dropout"}), Mod{"GLU", {lin, op("aten::glu")}, nullptr},
                  op("aten::add"), leaf("LayerNorm", {"aten::layer_norm"})},
          nullptr};
  BareRun r = bare_run(Mod{"TFT", {lin, grn, op("aten::softmax"), grn, grn, grn, op("aten::stack"), lin}, nullptr});
  // (its GLU module, a Linear and F.glu, is not told from a Linear and nn.GLU)
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: attention halves pair into layers though one holds another and a projection more (TimeSformer's)") {
  // Divided space-time attention: a temporal half (its attention, then a Linear), a spatial
  // half (its attention), an MLP half, each pre-norm and added back, three blocks.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"Attention", {lin}, nullptr};
  for (const char* o : {"aten::reshape", "aten::permute", "aten::unbind", "aten::transpose", "aten::matmul", "aten::mul", "aten::softmax",
                        "aten::matmul", "aten::transpose", "aten::reshape"})
    attention.items.push_back(op(o));
  attention.items.push_back(lin);
  Mod block{"DividedBlock",
            {op("aten::reshape"), op("aten::permute"), op("aten::reshape"), ln, attention, lin, op("aten::reshape"), op("aten::permute"),
             op("aten::reshape"), op("aten::add"), op("aten::reshape"), ln, attention, op("aten::reshape"), op("aten::add"), ln,
             Mod{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr}, op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"TimeSformer", {conv(), op("aten::flatten"), op("aten::transpose"), op("aten::add"), block, block, block, ln,
                                          op("aten::mean"), lin},
                           nullptr});
  CHECK(has_layer(r.annotation.tree, "Layer 3: attention + MLP"));
  CHECK_FALSE(has_layer(r.annotation.tree, "Layer 4: attention + MLP"));
}

TEST_CASE("inferred layers: MLPs of one kind outside the layers (a multi-task model's towers) are modules") {
  // MMoE: expert MLPs stacked, then per task a gate (Linear, softmax, the weighted sum) and a
  // tower (Linear, ReLU, Linear). The towers recur apart, between gates.
  Mod lin = leaf("Linear", {"aten::linear"}), relu = leaf("ReLU", {"aten::relu"});
  Mod expert{"Expert", {Mod{"Sequential", {lin, relu, leaf("Dropout", {"aten::dropout"}), lin, relu}, nullptr}}, nullptr};
  Mod tower{"Sequential", {lin, relu, lin}, nullptr};
  Mod root{"MMoE", {expert, expert, expert, op("aten::stack")}, nullptr};
  for (int task = 0; task < 2; ++task)
    for (Mod m : {lin, op("aten::softmax"), op("aten::unsqueeze"), op("aten::mul"), op("aten::sum"), tower}) root.items.push_back(m);
  root.items.push_back(op("aten::cat"));
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the experts and the towers
  CHECK(s.node_precision == doctest::Approx(1.0));
  CHECK(has_layer(r.annotation.tree, "MLP 2: Linear + ReLU + Linear"));
}

TEST_CASE("inferred layers: a post-norm attention that scales its query keeps its out-projection (BART's, DistilBERT's)") {
  // BartAttention: q_proj(x) * scaling, k_proj, v_proj, scores, softmax, F.dropout, the
  // weighted sum, out_proj; the layer adds, norms, then fc1, F.gelu, fc2, adds and norms. No
  // output modules (BERT's scale the scores).
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"BartAttention", {lin, op("aten::mul"), lin, lin}, nullptr};
  for (const char* o : {"aten::view", "aten::transpose", "aten::view", "aten::transpose", "aten::view", "aten::transpose", "aten::transpose",
                        "aten::matmul", "aten::softmax", "aten::dropout", "aten::matmul", "aten::transpose", "aten::reshape"})
    attention.items.push_back(op(o));
  attention.items.push_back(lin);
  Mod layer{"BartEncoderLayer",
            {attention, op("aten::dropout"), op("aten::add"), ln, lin, op("aten::gelu"), lin, op("aten::dropout"), op("aten::add"), ln}, nullptr};
  BareRun r = bare_run(Mod{"Bart", {leaf("Embedding", {"aten::embedding"}), ln, op("aten::dropout"), layer, layer, layer, lin}, nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "Output 1: Linear + LayerNorm"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));  // the layers and their attentions
}

TEST_CASE("inferred layers: an op of aten's own after a linear, at its end tick or the next, is the linear's") {
  // aten::linear on a batch of sequences returns through _unsafe_view (matmul's); the trace puts
  // it after the linear, starting at the tick the linear ends and lasting one. No model calls
  // _unsafe_view: it is the linear's, where a view could be its caller's.
  Mod lin{"Linear", {op("aten::linear"), rounded_child("aten::_unsafe_view", 1)}, nullptr};
  Mod mlp{"Mlp", {lin, leaf("SiLU", {"aten::silu"}), lin}, nullptr};
  Mod block{"Block", {leaf("LayerNorm", {"aten::layer_norm"}), mlp, op("aten::add")}, nullptr};
  const AccuracyScore s = bare_score(Mod{"Net", {leaf("Embedding", {"aten::embedding"}), block, block, block, lin}, nullptr});
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: residual units without norms that activate first end at their sum (HiFi-GAN's, EnCodec's)") {
  // SEANet's residual unit: shortcut(x) + block(x), the block ELU, conv, ELU, conv; units in a
  // row, then an ELU and a strided conv down. The ELU after a sum is the next unit's.
  Mod elu = leaf("ELU", {"aten::elu"});
  Mod unit{"SEANetResnetBlock", {Mod{"Sequential", {elu, conv1d(), elu, conv1d()}, nullptr}, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Encoder", {conv1d(), unit, unit, elu, conv1d(), unit, unit, elu, conv1d()}, nullptr});
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the units and their blocks
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a U-Net's upsampling, padding to the skip and concatenation open an Up module with the double conv") {
  // The common U-Net's Up: upsample, F.pad the map to the skip's size, cat, DoubleConv. Its
  // encoder's Down modules as before; a flat decoder (upsample, cat, double conv in the model's
  // forward) keeps its concatenations its own.
  Mod dbl{"DoubleConv", {}, nullptr};
  for (int k = 0; k < 2; ++k)
    for (Mod m : {conv(), bn(), relu_module()}) dbl.items.push_back(m);
  Mod down{"Down", {leaf("MaxPool2d", {"aten::max_pool2d"}), dbl}, nullptr};
  Mod upsample = leaf("Upsample", {"aten::upsample_bilinear2d"});
  Mod up{"Up", {upsample, op("aten::pad"), op("aten::cat"), dbl}, nullptr};
  BareRun r = bare_run(Mod{"UNet", {dbl, down, down, down, up, up, up, conv()}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Up 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
  CHECK(s.block_recall == doctest::Approx(1.0));  // the double convs, the Down and the Up modules
  CHECK(s.node_precision == doctest::Approx(1.0));

  BareRun flat = bare_run(Mod{"UNet", {dbl, down, down, down, upsample, op("aten::cat"), dbl, upsample, op("aten::cat"), dbl, conv()}, nullptr});
  CHECK_FALSE(has_layer(flat.annotation.tree, "Up 1"));
}

TEST_CASE("inferred layers: Falcon's parallel layer: rotary angles from an einsum inside the attention, one norm, the MLP a module, dropout(attn + mlp) + x") {
  // x + dropout(attention(ln(x)) + mlp(ln(x))): the fused query_key_value, its heads sliced,
  // a rotary module computing its angles by an outer product (einsum, no softmax after it) and
  // rotating the query and key, the scores, then the dense projection; the MLP's two Linears
  // and GELU; the attention's and the MLP's outputs summed, the dropout on the sum, the join.
  Mod rotary{"RotaryEmbedding",
             {op("aten::arange"), op("aten::einsum"), op("aten::cat"), op("aten::cos"), op("aten::sin"), op("aten::mul"),
              op("aten::slice"), op("aten::neg"), op("aten::cat"), op("aten::mul"), op("aten::add"), op("aten::mul"), op("aten::slice"),
              op("aten::neg"), op("aten::cat"), op("aten::mul"), op("aten::add")},
             nullptr};
  Mod attention{"FalconAttention",
                {leaf("Linear", {"aten::linear"}), op("aten::view"), op("aten::slice"), op("aten::index"), op("aten::index"),
                 op("aten::transpose"), op("aten::reshape"), op("aten::transpose"), op("aten::reshape"), rotary, op("aten::reshape"),
                 op("aten::transpose"), op("aten::matmul"), op("aten::mul"), op("aten::add"), op("aten::softmax"),
                 leaf("Dropout", {"aten::dropout"}), op("aten::matmul"), op("aten::permute"), op("aten::reshape"),
                 leaf("Linear", {"aten::linear"})},
                nullptr};
  Mod mlp{"FalconMLP", {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod layer{"FalconDecoderLayer",
            {leaf("LayerNorm", {"aten::layer_norm"}), attention, mlp, op("aten::add"), leaf("Dropout", {"aten::dropout"}), op("aten::add")},
            nullptr};
  Mod root{"Falcon", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, leaf("LayerNorm", {"aten::layer_norm"}),
                      leaf("Linear", {"aten::linear"})},
           nullptr};
  BareRun r = bare_run(root);
  CHECK(has_layer(r.annotation.tree, "Attention 3"));  // the whole attention, its projections to its dense
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions and MLPs
  // Its rotary angles are a unit of their own; this rotary module also applies them (most,
  // Llama's, return cos and sin to the attention, which rotates): that node is not its call.
  CHECK(has_layer(r.annotation.tree, "Rotary embedding 3"));
  CHECK(s.node_precision > 0.75);
}

TEST_CASE("inferred layers: a parallel layer's dropout between its attention and its MLP's first Linear is the attention's") {
  // CodeGen's and GPT-J's block: x + attn(ln(x)) + mlp(ln(x)), the attention ending with its
  // resid_dropout, the MLP's fc_in right after it on the same normed input.
  Mod attention{"CodeGenAttention",
                {leaf("Linear", {"aten::linear"}), op("aten::reshape"), op("aten::split"), op("aten::permute"), op("aten::permute"),
                 op("aten::permute"), op("aten::transpose"), op("aten::matmul"), op("aten::div"), op("aten::softmax"),
                 leaf("Dropout", {"aten::dropout"}), op("aten::matmul"), op("aten::permute"), op("aten::reshape"),
                 leaf("Linear", {"aten::linear"}), leaf("Dropout", {"aten::dropout"})},
                nullptr};
  Mod mlp{"CodeGenMLP",
          {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"}), leaf("Dropout", {"aten::dropout"})},
          nullptr};
  Mod layer{"CodeGenBlock", {leaf("LayerNorm", {"aten::layer_norm"}), attention, mlp, op("aten::add"), op("aten::add")}, nullptr};
  Mod root{"CodeGen", {leaf("Embedding", {"aten::embedding"}), leaf("Dropout", {"aten::dropout"}), layer, layer, layer,
                       leaf("LayerNorm", {"aten::layer_norm"}), leaf("Linear", {"aten::linear"})},
           nullptr};
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the layers, their attentions and MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: BEiT's attention builds its qkv bias by a concatenation before its one projection") {
  // qkv_bias = cat(q_bias, zeros, v_bias), F.linear(x, qkv.weight, qkv_bias), then a relative
  // position bias gathered from a table and added to the scores; gamma_1 * attn(norm1(x)).
  Mod attention{"BeitAttention",
                {op("aten::cat"), op("aten::linear"), op("aten::reshape"), op("aten::permute"), op("aten::unbind"), op("aten::mul"),
                 op("aten::transpose"), op("aten::matmul"), op("aten::view"), op("aten::index"), op("aten::view"), op("aten::permute"),
                 op("aten::unsqueeze"), op("aten::add"), op("aten::softmax"), leaf("Dropout", {"aten::dropout"}), op("aten::matmul"),
                 op("aten::transpose"), op("aten::reshape"), leaf("Linear", {"aten::linear"}), leaf("Dropout", {"aten::dropout"})},
                nullptr};
  Mod mlp{"Mlp", {leaf("Linear", {"aten::linear"}), leaf("GELU", {"aten::gelu"}), leaf("Linear", {"aten::linear"})}, nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod block{"BeitBlock", {ln, attention, op("aten::mul"), op("aten::add"), ln, mlp, op("aten::mul"), op("aten::add")}, nullptr};
  Mod root{"Beit", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"), op("aten::cat"), block, block, block,
                    op("aten::mean"), ln, leaf("Linear", {"aten::linear"})},
           nullptr};
  const AccuracyScore s = bare_score(root);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions and MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: talking-heads attention mixes its heads with linears around its softmax: one attention") {
  // CaiT's TalkingHeadAttn: the scores permuted to put the heads last, proj_l, permuted back,
  // the softmax, the same with proj_w, then the weighted sum and the output projection.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod attention{"TalkingHeadAttn",
                {lin, op("aten::reshape"), op("aten::permute"), op("aten::select"), op("aten::mul"), op("aten::select"),
                 op("aten::select"), op("aten::transpose"), op("aten::matmul"), op("aten::permute"), lin, op("aten::permute"),
                 op("aten::softmax"), op("aten::permute"), lin, op("aten::permute"), leaf("Dropout", {"aten::dropout"}),
                 op("aten::matmul"), op("aten::transpose"), op("aten::reshape"), lin, leaf("Dropout", {"aten::dropout"})},
                nullptr};
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr};
  Mod ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod block{"LayerScaleBlock", {ln, attention, op("aten::mul"), op("aten::add"), ln, mlp, op("aten::mul"), op("aten::add")}, nullptr};
  const AccuracyScore s = bare_score(Mod{"Cait", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"), block,
                                                  block, block, ln, lin},
                                         nullptr});
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their attentions and MLPs
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: gMLP's block: the MLP its normed input goes through, with a spatial gating unit and its last dropout") {
  // x + mlp_channels(norm(x)): fc1, GELU, dropout, the gate (chunk, norm, a projection across
  // the tokens between transposes, the product with the other half), fc2, dropout.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod gate{"SpatialGatingUnit", {op("aten::chunk"), ln, op("aten::transpose"), lin, op("aten::transpose"), op("aten::mul")}, nullptr};
  Mod mlp{"GatedMlp", {lin, leaf("GELU", {"aten::gelu"}), drop, gate, lin, drop}, nullptr};
  Mod block{"SpatialGatingBlock", {ln, mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"gMLP", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"), block, block, block, ln,
                                    op("aten::mean"), lin},
                           nullptr});
  CHECK(has_layer(r.annotation.tree, "Gate 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // the blocks, their MLPs and gates
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a highway's two halves each through an activation make no gated unit") {
  // A character-aware LM's highway written in its forward: h = hw(x); t, g = h.chunk(2);
  // g = sigmoid(g); g * relu(t) + (1 - g) * x.
  BareRun r = bare_run(Mod{"Highway",
                           {leaf("Embedding", {"aten::embedding"}), leaf("Conv1d", {"aten::conv1d"}), op("aten::relu"), op("aten::max"),
                            leaf("Linear", {"aten::linear"}), op("aten::chunk"), op("aten::sigmoid"), op("aten::relu"), op("aten::mul"),
                            op("aten::rsub"), op("aten::mul"), op("aten::add"), leaf("Linear", {"aten::linear"})},
                           nullptr});
  CHECK_FALSE(has_layer(r.annotation.tree, "Gate 1"));
}

TEST_CASE("inferred layers: a stack of Linears and their activations is no module of two of them called again") {
  // NeRF's MLP: for each of its pts_linears, F.relu(layer(h)); no module holds two of them.
  Mod root{"NeRF", {}, nullptr};
  for (int k = 0; k < 6; ++k) root.items.insert(root.items.end(), {leaf("Linear", {"aten::linear"}), op("aten::relu")});
  root.items.push_back(leaf("Linear", {"aten::linear"}));
  BareRun r = bare_run(root);
  CHECK_FALSE(has_layer(r.annotation.tree, "Block 1: 2 Linear + 2 ReLU"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: split attention is one module, and its sums of a split's parts close no residual block") {
  // ResNeSt's SplAtConv2d inside a bottleneck: the radix convs' output split and summed
  // (sum() of the parts: two adds), pooled, two 1x1 convs, a radix softmax, the parts weighted
  // and summed again; only the bottleneck's add joins a branch back to its input.
  Mod cbr{"Sequential", {conv(), bn(), relu_module()}, nullptr};
  Mod splat{"SplAtConv2d",
            {conv(), bn(), relu_module(), op("aten::split"), op("aten::add"), op("aten::add"),
             leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), conv(), bn(), relu_module(), conv(), op("aten::view"),
             op("aten::transpose"), op("aten::softmax"), op("aten::reshape"), op("aten::view"), op("aten::split"), op("aten::mul"),
             op("aten::mul"), op("aten::add"), op("aten::add")},
            nullptr};
  Mod bottleneck{"Bottleneck", {cbr, splat, conv(), bn(), op("aten::add_"), relu_module()}, nullptr};
  BareRun r = bare_run(model({bottleneck, bottleneck, bottleneck}));
  CHECK(has_layer(r.annotation.tree, "Block 3: 2 Conv + 2 BatchNorm + 2 ReLU + Split attention"));  // a bottleneck each
  CHECK(has_layer(r.annotation.tree, "Split attention 3"));
  CHECK_FALSE(has_layer(r.annotation.tree, "Block 4"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a mask made once before the first layer is not the first layer's, where the others open with views only") {
  // OPT's decoder makes its causal mask (full, triu, views, rsub, mul, add) before its first
  // layer; each layer views what the one before returned back to its shape first.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"Attention", {lin, op("aten::mul"), lin, op("aten::view"), op("aten::transpose"), lin, op("aten::view"),
                              op("aten::transpose"), op("aten::bmm"), op("aten::add"), op("aten::softmax"), drop, op("aten::bmm"),
                              op("aten::transpose"), op("aten::reshape"), lin},
                nullptr};
  Mod mlp{"Mlp", {lin, leaf("ReLU", {"aten::relu"}), lin}, nullptr};
  Mod layer{"Layer", {ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  Mod viewed_layer{"Layer", {op("aten::view"), ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  Mod root{"Decoder", {leaf("Embedding", {"aten::embedding"}), op("aten::full"), op("aten::triu"), op("aten::unsqueeze"), op("aten::rsub"),
                       op("aten::mul"), op("aten::add"), layer, viewed_layer, viewed_layer, ln, lin},
           nullptr};
  BareRun r = bare_run(root);
  // The first layer opens at its norm: the mask's ops are the decoder's.
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "aten::triu")
      CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]) == "Model");
}

TEST_CASE("inferred layers: an LSTM cell written by hand, unrolled over the frames: one cell unit per step, the frames' slices the forward's") {
  // A ConvLSTM: for each frame, x[:, t] sliced, concatenated with the hidden state, one conv
  // for all the gates, split, three sigmoids and a tanh, c = f * c + i * g, h = o * tanh(c).
  Mod cell{"ConvLSTMCell",
           {op("aten::cat"), conv(), op("aten::split"), leaf("Sigmoid", {"aten::sigmoid"}), leaf("Sigmoid", {"aten::sigmoid"}),
            leaf("Sigmoid", {"aten::sigmoid"}), op("aten::tanh"), op("aten::mul"), op("aten::mul"), op("aten::add"), op("aten::tanh"),
            op("aten::mul")},
           nullptr};
  Mod root{"ConvLSTM", {op("aten::zeros"), op("aten::zeros")}, nullptr};
  for (int t = 0; t < 4; ++t) root.items.insert(root.items.end(), {op("aten::slice"), op("aten::select"), cell});
  root.items.insert(root.items.end(), {op("aten::stack"), conv()});
  StepOps step;
  step.loss = {"aten::mse_loss"};
  BareRun r = bare_run(root, step);
  CHECK(has_layer(r.annotation.tree, "LSTM cell 4"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));  // each call of the cell
  // The first frame's slice and the concatenation are the forward's, no batch picked.
  const AnnotationTree& t = r.annotation.tree;
  NodeId first_slice = kNoNode;
  for (NodeId n = 0; n < t.size() && first_slice == kNoNode; ++n)
    if (t.kind[n] == NodeKind::Op && t.name_of(n) == "aten::slice") first_slice = n;
  REQUIRE(first_slice != kNoNode);
  CHECK(t.phase[first_slice] == PhaseKind::Forward);
}

TEST_CASE("inferred layers: ResMLP's Affine (one addcmul) is its norm unit") {
  // x + ls1 * transpose(linear_tokens(transpose(norm1(x)))), x + ls2 * mlp(norm2(x)), the
  // norms Affine modules: torch.addcmul(beta, alpha, x).
  Mod affine = leaf("Affine", {"aten::addcmul"}), lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), drop, lin, drop}, nullptr};
  Mod block{"ResBlock",
            {affine, op("aten::transpose"), lin, op("aten::transpose"), op("aten::mul"), op("aten::add"), affine, mlp, op("aten::mul"),
             op("aten::add")},
            nullptr};
  BareRun r = bare_run(Mod{"ResMLP", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), op("aten::transpose"), block, block, block,
                                      affine, op("aten::mean"), lin},
                           nullptr});
  CHECK(has_layer(r.annotation.tree, "Affine 7"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a Llama-style rotary embedding module is one unit, its application the attention's own") {
  // HF's LlamaRotaryEmbedding inside the attention: the inverse frequencies and positions
  // indexed, cast and expanded, their product transposed, concatenated, cos and sin, cast
  // back; then apply_rotary_pos_emb (a function: the attention's ops) and the scores.
  Mod lin = leaf("Linear", {"aten::linear"});
  Mod rotary{"LlamaRotaryEmbedding",
             {op("aten::unsqueeze"), op("aten::slice"), op("aten::unsqueeze"), op("aten::to"), op("aten::expand"), op("aten::slice"),
              op("aten::unsqueeze"), op("aten::to"), op("aten::matmul"), op("aten::transpose"), op("aten::cat"), op("aten::cos"),
              op("aten::sin"), op("aten::to"), op("aten::to")},
             nullptr};
  Mod attention{"LlamaAttention", {lin, lin, lin, op("aten::view"), op("aten::transpose"), op("aten::view"), op("aten::transpose"),
                                   op("aten::view"), op("aten::transpose"), rotary},
                nullptr};
  for (int half = 0; half < 2; ++half)
    for (const char* o : {"aten::unsqueeze", "aten::mul", "aten::slice", "aten::neg", "aten::cat", "aten::mul", "aten::add"})
      attention.items.push_back(op(o));
  for (const char* o : {"aten::transpose", "aten::matmul", "aten::div", "aten::add", "aten::softmax", "aten::matmul", "aten::transpose",
                        "aten::reshape"})
    attention.items.push_back(op(o));
  attention.items.push_back(lin);
  Mod norm = leaf("LlamaRMSNorm", {"aten::to", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::to", "aten::mul"});
  Mod mlp{"LlamaMLP", {lin, leaf("SiLU", {"aten::silu"}), lin, op("aten::mul"), lin}, nullptr};
  Mod layer{"LlamaDecoderLayer", {norm, attention, op("aten::add"), norm, mlp, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Llama", {leaf("Embedding", {"aten::embedding"}), layer, layer, layer, norm, lin}, nullptr});
  CHECK(has_layer(r.annotation.tree, "Rotary embedding 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.99);
  CHECK(s.block_recall == doctest::Approx(1.0));
  CHECK(s.node_precision == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a downsampling bottleneck with a pooled projection shortcut is a variant of the plain one, no sublayer of a tuple") {
  // timm's ResNet-D, two blocks a stage: the first downsamples, its shortcut an average pool,
  // a 1x1 conv and a norm computed after the branch; the plain one follows. The two kinds
  // alternate, yet each block is a module of its own.
  Mod cbr{"ConvBnAct", {conv(), bn(), relu_module()}, nullptr};
  Mod shortcut{"Sequential", {leaf("AvgPool2d", {"aten::avg_pool2d"}), conv(), bn()}, nullptr};
  Mod down{"Bottleneck", {cbr, cbr, conv(), bn(), shortcut, op("aten::add_"), relu_module()}, nullptr};
  Mod plain{"Bottleneck", {cbr, cbr, conv(), bn(), op("aten::add_"), relu_module()}, nullptr};
  Mod stage{"Sequential", {down, plain}, nullptr};
  BareRun r = bare_run(model({stage, stage, stage}));
  CHECK(has_layer(r.annotation.tree, "Block 6: 3 Conv + 3 BatchNorm + 3 ReLU"));  // the third stage's plain block, alone
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).node_precision > 0.95);
}

TEST_CASE("inferred layers: squeeze and excitation squeezing by the map's mean is one gate") {
  // timm's SqueezeExcite: x.mean((2, 3), keepdim=True), conv_reduce, act, conv_expand, gate,
  // x * gate; inside an inverted residual.
  Mod se{"SqueezeExcite", {op("aten::mean"), conv(), leaf("SiLU", {"aten::silu_"}), conv(), leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul")},
         nullptr};
  Mod block{"InvertedResidual", {conv(), bn(), leaf("SiLU", {"aten::silu_"}), conv(), bn(), leaf("SiLU", {"aten::silu_"}), se, conv(), bn(),
                                 op("aten::add")},
            nullptr};
  BareRun r = bare_run(model({block, block, block}));
  CHECK(has_layer(r.annotation.tree, "SqueezeExcitation 3"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a ConvNeXt block's MLP after its norm is a module of its residual branch") {
  // timm's ConvNeXtBlock: conv_dw, permute, norm, mlp (fc1, GELU, dropout, fc2, dropout),
  // permute, gamma, add.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), drop, lin, drop}, nullptr};
  Mod block{"ConvNeXtBlock", {conv(), op("aten::permute"), leaf("LayerNorm", {"aten::layer_norm"}), mlp, op("aten::permute"),
                              op("aten::mul"), op("aten::add")},
            nullptr};
  BareRun r = bare_run(model({block, block, block}));
  CHECK(has_layer(r.annotation.tree, "MLP 3: Linear + GELU + Dropout + Linear + Dropout"));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: LayerDrop's draw before each layer (an if on a tensor) is the encoder loop's, not the layer's") {
  // Hugging Face's encoders: dropout_probability = torch.rand([]); if training and
  // dropout_probability < layerdrop: skip the layer. rand, lt, is_nonzero before each layer.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention = separate_qkv_attention(true);
  Mod feed_forward{"FeedForward", {lin, leaf("GELU", {"aten::gelu"}), lin, drop}, nullptr};
  Mod layer{"EncoderLayer", {ln, attention, op("aten::add"), ln, feed_forward, op("aten::add")}, nullptr};
  Mod root{"Encoder", {leaf("Conv1d", {"aten::conv1d"}), op("aten::transpose"), ln}, nullptr};
  for (int k = 0; k < 3; ++k) root.items.insert(root.items.end(), {op("aten::rand"), op("aten::lt"), op("aten::is_nonzero"), layer});
  root.items.push_back(lin);
  BareRun r = bare_run(root);
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "aten::rand")
      CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]) == "Model");
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the view a decoder layer returns its output through closes that layer, not the next") {
  // OPT's decoder layer: ... hidden_states = (residual + hidden_states).view(shape). Every
  // layer but the first is then led by a view, and one follows the last layer too.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention = separate_qkv_attention();
  Mod layer{"DecoderLayer", {ln, attention, op("aten::add"), op("aten::reshape"), ln, lin, relu_module(), lin, op("aten::add"),
                             op("aten::view")},
            nullptr};
  Mod root{"Decoder", {leaf("Embedding", {"aten::embedding"}), op("aten::triu"), op("aten::add"), layer, layer, layer, ln, lin}, nullptr};
  BareRun r = bare_run(root);
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: disentangled attention's position projections are the attention's, the positions sliced once the encoder's") {
  // DeBERTa: content scores, then each relative-position projection's product added to them
  // before the softmax; the encoder slices the relative positions once for all layers.
  Mod lin = leaf("Linear", {"aten::linear"}), drop = leaf("Dropout", {"aten::dropout"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod self{"DisentangledSelfAttention",
           {lin, op("aten::view"), op("aten::permute"), op("aten::chunk"), op("aten::add"), op("aten::add"), op("aten::div"),
            op("aten::transpose"), op("aten::matmul"), drop, lin, op("aten::view"), op("aten::permute"), op("aten::transpose"),
            op("aten::matmul"), op("aten::add"), lin, op("aten::view"), op("aten::permute"), op("aten::div_"), op("aten::clamp"),
            op("aten::transpose"), op("aten::matmul"), op("aten::gather"), op("aten::add_"), op("aten::softmax"), drop, op("aten::matmul"),
            op("aten::permute"), op("aten::contiguous"), op("aten::view")},
           nullptr};
  Mod attention{"Attention", {self, lin, drop, op("aten::add"), ln}, nullptr};
  Mod layer{"Layer", {attention, lin, leaf("GELU", {"aten::gelu"}), lin, drop, op("aten::add"), ln}, nullptr};
  Mod root{"Encoder", {leaf("Embedding", {"aten::embedding"}), ln, drop, op("aten::mul"), op("aten::arange"), op("aten::sub"), op("aten::slice"),
                       op("aten::unsqueeze"), op("aten::as_strided"), layer, layer, layer},
           nullptr};
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "aten::slice")
      CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]) == "Model");
}

TEST_CASE("inferred layers: stages of an inverted residual that sums nothing, then one that sums, are two blocks each") {
  // timm's EfficientNet: a stage's first block changes the shape (no sum), the others sum
  // back past their drop path. Between two sums the blocks run twice in one stage, three
  // times across a stage of one block.
  Mod silu = leaf("SiLU", {"aten::silu_"});
  Mod se{"SqueezeExcite", {op("aten::mean"), conv(), silu, conv(), leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul")}, nullptr};
  Mod drop_path{"DropPath", {op("aten::new_empty"), op("aten::bernoulli_"), op("aten::div_"), op("aten::mul")}, nullptr};
  Mod down{"InvertedResidual", {conv(), bn(), silu, conv(), bn(), silu, se, conv(), bn()}, nullptr};
  Mod plain{"InvertedResidual", {conv(), bn(), silu, conv(), bn(), silu, se, conv(), bn(), drop_path, op("aten::add")}, nullptr};
  Mod stage{"Sequential", {down, plain}, nullptr};
  Mod single{"Sequential", {down}, nullptr};
  BareRun r = bare_run(model({stage, stage, single, stage, stage}));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall > 0.9);
}

TEST_CASE("inferred layers: a pre-activation block whose branch runs one thing twice stays one block") {
  // Norm, activation and a separable conv (depthwise, pointwise), twice, then the sum: the
  // same run twice between every two sums is one branch, not two blocks.
  Mod sep{"SeparableConv", {conv(), conv()}, nullptr};
  Mod block{"PreActSepBlock", {bn(), relu_module(), sep, bn(), relu_module(), sep, op("aten::add")}, nullptr};
  BareRun r = bare_run(model({block, block, block, block}));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a weight-standardised conv is one unit, and norm-free blocks activate first") {
  // NFNet: ScaledStdConv2d normalises its own weight (batch_norm with no running statistics,
  // reshaped back as the weight) before the conv; GammaAct scales its activation in place.
  // A NormFreeBlock activates its input, scales it by beta, runs its branch, scales it by
  // alpha and sums it back: the activation opens the block.
  Mod std_conv{"ScaledStdConv2d", {op("aten::reshape"), op("aten::mul"), op("aten::view"), op("aten::batch_norm"), op("aten::reshape_as"),
                                   op("aten::conv2d")},
               nullptr};
  Mod gamma_act{"GammaAct", {op("aten::gelu"), op("aten::mul_")}, nullptr};
  Mod se{"SEModule", {op("aten::mean"), conv(), relu_module(), conv(), leaf("Sigmoid", {"aten::sigmoid"}), op("aten::mul")}, nullptr};
  Mod block{"NormFreeBlock", {gamma_act, op("aten::mul"), std_conv, gamma_act, std_conv, gamma_act, std_conv, se, op("aten::mul"), op("aten::add")},
            nullptr};
  Mod root{"NormFreeNet", {std_conv, gamma_act, std_conv, block, block, block, block, gamma_act,
                           leaf("AdaptiveAvgPool2d", {"aten::adaptive_avg_pool2d"}), op("aten::flatten"), leaf("Linear", {"aten::linear"})},
           nullptr};
  BareRun r = bare_run(root);
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);
  CHECK(s.block_recall > 0.9);
}

TEST_CASE("inferred layers: identical encoder blocks before a bottleneck and the first skip's sum are blocks") {
  // Demucs: four encoder blocks (conv, ReLU, conv, GLU) with no join between them, an LSTM,
  // then the decoder, each block after a skip's sum (cropped to the block's length). The first sum closes no residual block
  // of the encoder: the encoder's calls repeat inside what it closes.
  Mod glu = leaf("GLU", {"aten::glu"}), relu = leaf("ReLU", {"aten::relu"});
  Mod encoder_block{"Sequential", {conv1d(), relu, conv1d(), glu}, nullptr};
  Mod decoder_block{"Sequential", {conv1d(), glu, leaf("ConvTranspose1d", {"aten::conv_transpose1d"}), relu}, nullptr};
  Mod encoder{"ModuleList", {encoder_block, encoder_block, encoder_block, encoder_block}, nullptr};
  Mod root{"Demucs", {op("aten::mean"), op("aten::std"), op("aten::sub"), op("aten::div"), encoder, op("aten::permute"),
                      leaf("LSTM", {"aten::lstm"}), leaf("Linear", {"aten::linear"}), op("aten::permute")},
           nullptr};
  for (int k = 0; k < 4; ++k) root.items.insert(root.items.end(), {op("aten::slice"), op("aten::add"), decoder_block});
  BareRun r = bare_run(root);
  size_t encoder_blocks = 0;
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    encoder_blocks += r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n).ends_with(": 2 Conv + ReLU + GLU");
  CHECK(encoder_blocks == 2 * 4);  // in each of the two steps
  // Each decoder block upsamples, then the skip is summed: the sum closes no residual branch
  // (the map it adds was made in the encoder), it stands between the decoder's blocks.
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: the exact GELU written by hand (x 0.5 (1 + erf(x / sqrt 2))) is one activation") {
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod gelu{"GELU", {op("aten::mul"), op("aten::div"), op("aten::erf"), op("aten::add"), op("aten::mul")}, nullptr};
  Mod block{"MlpBlock", {ln, lin, gelu, lin, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Net", {leaf("Embedding", {"aten::embedding"}), block, block, block, ln, lin}, nullptr});
  CHECK(has_layer(r.annotation.tree, "GELU 3"));
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).leaf_f1 > 0.95);
}

TEST_CASE("inferred layers: a mask a layer applies to its output closes that layer, not the next") {
  // FastSpeech's FFT block: ... output = output.masked_fill(mask.unsqueeze(-1), 0) at the end
  // of each layer; one follows the last layer too.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"}), drop = leaf("Dropout", {"aten::dropout"});
  Mod attention = separate_qkv_attention();
  Mod layer{"FFTBlock", {attention, drop, op("aten::add"), ln, lin, relu_module(), lin, drop, op("aten::add"), ln, op("aten::unsqueeze"),
                         op("aten::masked_fill")},
            nullptr};
  Mod root{"Encoder", {leaf("Embedding", {"aten::embedding"}), op("aten::eq"), op("aten::add"), layer, layer, layer, lin}, nullptr};
  BareRun r = bare_run(root);
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: a first block with a projection shortcut after a stem, its kind recurring without, holds no stem") {
  // SKNet: the stem's conv, norm and activation, then the units: a 1x1 conv, the selective
  // kernel's two branches fused by split attention, a 1x1 conv, the first unit's projection
  // shortcut, the sum. The stem is cut from the first unit, a variant of the others.
  Mod cbr{"Sequential", {conv(), bn(), relu_module()}, nullptr};
  Mod sk{"SKConv", {cbr, cbr, op("aten::stack"), op("aten::sum"), op("aten::mean"), cbr, conv(), op("aten::view"), op("aten::softmax"),
                    op("aten::mul"), op("aten::sum")},
         nullptr};
  Mod cb{"Sequential", {conv(), bn()}, nullptr};
  Mod first{"SKUnit", {cbr, sk, cb, cb, op("aten::add"), relu_module()}, nullptr};
  Mod unit{"SKUnit", {cbr, sk, cb, op("aten::add"), relu_module()}, nullptr};
  BareRun r = bare_run(model({first, unit, unit}));
  CHECK(has_layer(r.annotation.tree, "Split attention 3"));
  size_t units = 0;
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    units += r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n).starts_with("Block ") &&
             r.annotation.tree.name_of(n).ends_with(" + Split attention");
  CHECK(units == 2 * 3);  // every unit, in each of the two steps
}

TEST_CASE("inferred layers: a drop path drawn uniformly and floored is one dropout, the layer's rather than its half's module's") {
  // Hugging Face's drop_path (timm's first): keep_prob + torch.rand(shape), floor_, then
  // x.div(keep_prob) * mask, applied by the layer to each branch before its sum.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention{"Attention", {lin, lin, lin, op("aten::view"), op("aten::permute"), op("aten::matmul"), op("aten::div"), op("aten::softmax"),
                              op("aten::matmul"), op("aten::permute"), op("aten::view"), lin},
                nullptr};
  Mod mlp{"Mlp", {lin, leaf("GELU", {"aten::gelu"}), lin}, nullptr};
  Mod drop_path{"DropPath", {op("aten::rand"), op("aten::add"), op("aten::floor_"), op("aten::div"), op("aten::mul")}, nullptr};
  Mod layer{"Layer", {ln, attention, drop_path, op("aten::add"), ln, mlp, drop_path, op("aten::add")}, nullptr};
  BareRun r = bare_run(Mod{"Encoder", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), layer, layer, layer, ln, lin}, nullptr});
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "aten::floor_")
      CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]).starts_with("Dropout "));
  const AccuracyScore s = score_against(*r.bare.model, r.annotation, r.truth);
  CHECK(s.leaf_f1 > 0.95);
  CHECK(s.block_recall == doctest::Approx(1.0));
}

TEST_CASE("inferred layers: CLIP as Hugging Face writes it: QuickGELU is one activation, the text tower's causal mask its caller's") {
  // Two towers of the same pre-norm layers; the MLP's activation is x * sigmoid(1.702 x); the
  // text tower makes its causal mask (full, triu, views, rsub, mul) before its first layer.
  Mod lin = leaf("Linear", {"aten::linear"}), ln = leaf("LayerNorm", {"aten::layer_norm"});
  Mod attention = separate_qkv_attention();
  Mod quick_gelu{"QuickGELUActivation", {op("aten::mul"), op("aten::sigmoid"), op("aten::mul")}, nullptr};
  Mod mlp{"MLP", {lin, quick_gelu, lin}, nullptr};
  Mod layer{"EncoderLayer", {ln, attention, op("aten::add"), ln, mlp, op("aten::add")}, nullptr};
  Mod vision{"VisionTower", {leaf("Conv2d", {"aten::conv2d"}), op("aten::flatten"), ln, layer, layer, ln}, nullptr};
  Mod text{"TextTower", {leaf("Embedding", {"aten::embedding"}), op("aten::add"), op("aten::full"), op("aten::triu"), op("aten::unsqueeze"),
                         op("aten::expand"), op("aten::rsub"), op("aten::mul"), layer, layer, ln},
           nullptr};
  BareRun r = bare_run(Mod{"CLIP", {vision, text, lin}, nullptr});
  CHECK(has_layer(r.annotation.tree, "GELU 4"));
  for (NodeId n = 0; n < r.annotation.tree.size(); ++n)
    if (r.annotation.tree.phase[n] == PhaseKind::Forward && r.annotation.tree.name_of(n) == "aten::triu")
      CHECK(r.annotation.tree.name_of(r.annotation.tree.parent[n]) == "Model");
  CHECK(score_against(*r.bare.model, r.annotation, r.truth).block_recall > 0.9);
}
