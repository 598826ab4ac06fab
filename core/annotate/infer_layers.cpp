// Layers inferred from the forward's op sequence when the trace has no module frames and no
// ranges around the ops, by what PyTorch's modules are:
//   units   the leaf modules: a weight op (conv, linear, embedding, an RNN over all its steps),
//           a norm (BatchNorm with the counter it bumps first; one written by hand: RMSNorm),
//           an activation, a pooling, a dropout (a random mask applied by a product too:
//           stochastic depth), noise drawn and added, a resampling, a reflection padding;
//           attention as one unit from its in-projection through the scores, softmax and
//           weighted sum to its out-projection (separate q/k/v projections are child units of
//           it, a packed one is part of it);
//           gates: squeeze and excitation, an additive attention gate on a U-Net's skip;
//   groups  a weight op with the norm and activation that follow it (ConvNormActivation; a
//           BatchNorm after the activation too),
//           with the upsampling right before it (an up-convolution);
//           convs back to back with nothing between, one separable conv (depthwise, pointwise);
//           a padding with its conv (and the resize before); a conv on an MLP's tokens laid
//           out as a map, with those reshapes; two groups concatenated and cut back (Ghost);
//   blocks  what a residual connection closes: the ops from where the block's input was made
//           to the add that joins it back (with the activation or, post-norm, the norm that
//           follows the add), and inside it the residual function when that is units only,
//           or a ShuffleNet unit's branches (the one split off; in a downsampling unit, the
//           run of that kind before the concatenation and the run before it);
//           blocks of one kind that alternate with another (attention, MLP) pair into a layer
//           wherever they follow each other, and, where attention is written by hand or
//           absent, what each pre-norm half adds after its norm is the module it calls (an
//           MLP; an attention with its output dropout);
//           a run of blocks from one that changes the shape (a projection shortcut) to the
//           next is a stage (so is one from a block that adds nothing back: the first of a
//           MobileNet stack), with the concatenations its loop makes; a block of another kind
//           (a DenseNet's transition, a patch merging) stands between stages; a GNN's layers
//           are the repetitions of its scatters instead;
//           where no branches join (a U-Net, a VGG), the runs of units between resamplings
//           whose kind recurs (double convs), else a run of units repeated back to back (one
//           module called again: a siamese encoder);
//   model   the whole forward: the root module that holds the rest.
// Ops that are none of those (views, residual adds, concatenations, scores outside attention)
// stay loose in the innermost block around them, as they are in the module that calls them.
// Units are found in infer_units.cpp (those written by hand or spread over several ops in
// infer_written.cpp), blocks in infer_blocks.cpp; this file makes the layers of them and names
// them, and infer_sublayers.cpp what a block holds inside.
#include "core/annotate/infer_layers.h"
#include "core/annotate/infer_written.h"

#include <algorithm>
#include <map>
#include <set>

namespace strata::annot {

namespace infer {

std::string LayerMaker::readable(const Element& e) const {
  // A norm with its permutes around it (permuted_norms) is named as the class people write for
  // it, LayerNorm2d; its norm inside keeps the plain name.
  if (e.role == Role::Norm && !e.inner.empty() && e.kind != "ghost_norm")
    return readable_unit(e.kind, e.op) + (e.kind == "layer_norm" ? "2d" : " (permuted)");
  return readable_unit(e.kind, e.op);
}

NodeId LayerMaker::make(const std::string& name, NodeId parent, const std::vector<NodeId>& kids) {
  NodeId first = kids.front();
  NodeId id = b.add(NodeKind::Layer, name, parent, b.phase[first], b.begin[first], b.end[first]);
  for (NodeId k : kids) {
    b.parent[k] = id;
    b.widen(id, b.begin[k], b.end[k]);
  }
  return id;
}

// A layer node for a unit made of parts, over all its ops.
NodeId LayerMaker::layer_over(const Element& e, NodeId parent) {
  const NodeId n = b.add(NodeKind::Layer, numbered(readable(e)), parent, b.phase[e.ops.front()], b.begin[e.ops.front()], b.end[e.ops.front()]);
  for (NodeId op : e.ops) b.widen(n, b.begin[op], b.end[op]);
  return n;
}

// Nodes for the units under `parent`; loose ops stay there.
void LayerMaker::place_units(std::vector<Element>& els, NodeId parent) {
  for (Element& e : els) {
    if (!e.unit) {
      for (NodeId op : e.ops) b.parent[op] = parent;
      e.node = e.ops.front();
      continue;
    }
    // One module's parts are its own ops, but for the modules it calls (an attention's bias MLP).
    const bool calls = std::any_of(e.inner.begin(), e.inner.end(), [](const Element& in) { return !in.inner.empty(); });
    if (!e.inner.empty() && (!e.one_module || calls)) {
      e.node = layer_over(e, parent);
      if (!e.one_module) place_units(e.inner, e.node);
      else
        for (Element& in : e.inner) {
          if (in.inner.empty()) {
            for (NodeId op : in.ops) b.parent[op] = e.node;
            in.node = in.ops.front();
            continue;
          }
          in.node = layer_over(in, e.node);
          place_units(in.inner, in.node);
        }
      continue;
    }
    e.node = make(numbered(readable(e)), parent, e.ops);
  }
}

// What a block is, in words: "Block 3: 2 Conv + 2 BatchNorm + ReLU", "Layer 2: attention +
// MLP", "Layer 4: attention + conv + MLP" (a Conformer's); a GNN's layers "Graph layer 2:
// Linear + ReLU", a graph network's "Graph layer 1: 3 updates".
std::string LayerMaker::block_name(const std::vector<Element>& els, size_t from, size_t to, bool graph) {
  if (graph)
    if (const size_t updates = graph_updates(els, {from, to}).size(); updates >= 2)
      return numbered("Graph layer") + ": " + std::to_string(updates) + " updates";
  bool attn = false, mlp = false, conv = false;
  std::vector<std::pair<std::string, uint32_t>> seen;
  for (size_t j = from; j < to; ++j) {
    if (!els[j].unit) continue;
    attn |= els[j].kind == "attention";
    mlp |= els[j].kind == "linear";
    conv |= els[j].kind == "conv";
    std::string r = readable(els[j]);
    auto it = std::find_if(seen.begin(), seen.end(), [&](auto& x) { return x.first == r; });
    if (it == seen.end()) seen.push_back({r, 1});
    else ++it->second;
  }
  if (attn && mlp) return numbered("Layer") + (conv ? ": attention + conv + MLP" : ": attention + MLP");
  std::string name = numbered(graph ? "Graph layer" : "Block") + ":";
  for (size_t k = 0; k < seen.size(); ++k)
    name += (k ? " + " : " ") + (seen[k].second > 1 ? std::to_string(seen[k].second) + " " : std::string()) + seen[k].first;
  return name;
}

// A layer of the units in [from, to) and the loose ops between them, named by what it is and
// its units ("MLP 2: Linear + BatchNorm + ReLU + Linear"), where they share a parent; the layer,
// or kNoNode.
NodeId LayerMaker::unit_group(const std::string& what, const std::vector<Element>& els, size_t from, size_t to) {
  std::vector<NodeId> kids;
  std::string name;
  for (size_t j = from; j < to; ++j) {
    kids.push_back(els[j].node);
    if (els[j].unit) name += (name.empty() ? "" : " + ") + readable(els[j]);
  }
  const NodeId parent = b.parent[kids.front()];
  if (!std::all_of(kids.begin(), kids.end(), [&](NodeId n) { return b.parent[n] == parent; })) return kNoNode;
  return make(numbered(what) + ": " + name, parent, kids);
}

// Between two of them, the units that widen and activate (a Linear and its activation) are the
// Intermediate module (HF's BertIntermediate). Each half of the layer, what feeds an Output and
// that Output, is one call of the layer's: the attention and its output (HF's BertAttention,
// RecBole's attention with its add and norm), the Intermediate and its Output (a feed-forward
// module with its add and norm, RecBole's; HF's two modules in a row).
void LayerMaker::output_module(const std::vector<Element>& els, size_t f, size_t t) {
  size_t after_output = SIZE_MAX;  // just after the last Output made
  for (size_t j = f; j + 2 < t; ++j) {
    if (!els[j].unit || els[j].role != Role::Weight) continue;
    const size_t norm = add_and_norm_after(els, j, t);
    if (norm == 0) continue;
    NodeId feeds = kNoNode;  // what the half computes before its Output
    const char *half = nullptr, *parts = nullptr;
    if (after_output != SIZE_MAX && j == after_output + 2 && els[after_output].unit && els[after_output].role == Role::Weight &&
        els[after_output + 1].unit && els[after_output + 1].role == Role::Activation) {
      feeds = unit_group("Intermediate", els, after_output, j), half = "MLP", parts = ": Intermediate + Output";
    } else if (j > f && els[j - 1].unit && els[j - 1].kind == "attention") {
      feeds = els[j - 1].node, half = "Attention sublayer", parts = ": Attention + Output";
    }
    std::vector<NodeId> kids;
    for (size_t i = j; i <= norm; ++i) kids.push_back(els[i].node);
    const NodeId output = make(numbered("Output") + ": " + readable(els[j]) + " + " + readable(els[norm]), b.parent[kids.front()], kids);
    if (feeds != kNoNode && b.parent[feeds] == b.parent[output]) make(numbered(half) + parts, b.parent[output], {feeds, output});
    after_output = norm + 1;
    j = norm;
  }
}

void LayerMaker::run(NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
  std::vector<Element> els = units(ops);
  for (Element& e : els)  // what the backward shows of the data flow (shared_inputs.cpp)
    e.shares_input = std::any_of(e.ops.begin(), e.ops.end(), [&](NodeId op) { return c.flags[b.event[op]] & Context::kSharesInput; });
  els = written_swishes(parallel_convs(std::move(els)));
  pre_norm = pre_norm_model(els);
  const bool outputs = output_modules(els, pre_norm);
  if (outputs) split_output_projections(els);
  if (model_root && ops.size() >= 2) parent = make("Model", parent, ops);
  std::vector<std::pair<size_t, size_t>> blocks = message_passing_layers(els);
  const bool graph = !blocks.empty();
  // Between message-passing layers a graph network activates and drops out by function
  // (x = F.dropout(F.relu(conv(x)), training=...), as PyTorch Geometric's examples write it): ops of
  // the model's own, no modules.
  for (size_t k = 0, j = 0; graph && j < els.size(); ++j) {
    while (k < blocks.size() && blocks[k].second <= j) ++k;
    const bool inside = k < blocks.size() && blocks[k].first <= j;
    if (!inside && k > 0 && k < blocks.size() && els[j].unit && els[j].inner.empty() &&
        (els[j].role == Role::Activation || els[j].role == Role::Dropout))
      els[j].unit = false;
  }
  place_units(els, parent);
  if (blocks.empty()) blocks = residual_blocks(els, pre_norm);
  // Blocks of one kind after one without a shortcut (ContextNet's) recur once each opens where
  // the backward shows its input taken beside the shortcut.
  if (!graph && !pre_norm && !any_recurs(els, blocks))
    if (std::vector<Span> opened = residual_blocks(els, pre_norm, true); any_recurs(els, opened)) blocks = std::move(opened);
  bool plain = false;
  if (!any_recurs(els, blocks)) blocks = plain_blocks(els), plain = true;
  if (!any_recurs(els, blocks)) blocks = repeated_calls(els);
  alike_branches(els, blocks);
  const std::vector<Mixture> mixtures = weighted_mixtures(els);  // (els stay as they are from here)
  mixtures_as_blocks(mixtures, blocks);
  no_blocks_in_cell_loops(els, blocks);
  std::vector<std::string> sig;
  for (auto [f, t] : blocks) sig.push_back(signature(els, f, t));
  split_stem(els, blocks, sig);
  split_repeats(els, blocks, sig);
  calls_within_lone_blocks(els, blocks, sig);
  trim_dropouts(els, blocks, sig);
  close_with_output_ops(els, blocks, sig);
  trim_loose_leads(els, blocks, sig);
  trim_dropouts(els, blocks, sig);  // (one the loose lead hid: the embeddings' sum, then their dropout)
  last_block_without_sum(els, blocks, sig);
  copies_with_their_views(els, blocks);
  // Views alone between two residual halves (MaxViT's window departition and the next
  // partition) are no module's body: they stay loose, and the halves around them pair.
  size_t kept = 0;
  for (size_t k = 0; k < blocks.size(); ++k)
    if (std::any_of(els.begin() + long(blocks[k].first), els.begin() + long(blocks[k].second), [](const Element& e) { return e.unit; })) {
      if (kept != k) blocks[kept] = blocks[k], sig[kept] = std::move(sig[k]);
      ++kept;
    }
  blocks.resize(kept);
  sig.resize(kept);
  Stack stack = stack_layers(els, blocks, sig);
  std::vector<Span>& layers = stack.layers;
  const std::vector<Span>& tupled = stack.tupled;
  std::vector<std::string>& kinds = stack.kinds;
  const std::vector<Span> partial = cross_stage_partials(els, layers, kinds);
  std::vector<NodeId> block_nodes;
  for (auto [f, t] : layers) {
    std::vector<NodeId> kids;
    for (size_t j = f; j < t; ++j) kids.push_back(els[j].node);
    // A mixed edge is named for what it mixes.
    const Span span{f, t};
    auto mixture = std::find_if(mixtures.begin(), mixtures.end(), [&](const Mixture& m) { return m.whole == span; });
    block_nodes.push_back(make(mixture != mixtures.end() ? numbered("Mixed op") + ": " + std::to_string(mixture->candidates.size()) + " candidates"
                                                         : block_name(els, f, t, graph),
                               parent, kids));
  }
  // Cross-stage partial modules hold the blocks of the stack: they, not stages, group it.
  for (auto [f, t] : partial) {
    size_t inside = 0;
    for (auto [lf, lt] : layers) inside += lf >= f && lt <= t;
    std::vector<NodeId> kids;
    for (size_t j = f; j < t; ++j)
      if (const NodeId n = child_of(els[j].node, parent); kids.empty() || kids.back() != n) kids.push_back(n);
    make(numbered("CSP") + ": " + std::to_string(inside) + (inside == 1 ? " block" : " blocks"), parent, kids);
  }
  if (partial.empty()) stages(els, parent, layers, block_nodes, kinds);
  if (plain) unet_modules(els, layers, block_nodes, kinds);
  for (auto [f, t] : repeated_mlps(els, layers)) unit_group("MLP", els, f, t);
  // An activation of the conditioning sum (or of what the block before returned) and a
  // linear whose output is split at once (into a shift, a scale and a gate per half)
  // compute the modulation that conditions a block: one module (DiT's adaLN_modulation).
  for (size_t j = 1; j + 2 < els.size(); ++j)
    if (const size_t before = before_views(els, j);
        before > 0 && !els[before - 1].unit && els[before - 1].role == Role::Add && els[j].unit && els[j].role == Role::Activation &&
        els[j + 1].unit && els[j + 1].kind == "linear" && !els[j + 2].unit && is_split(els[j + 2].op)) {
      conditioned = true;
      unit_group("Modulation", els, j, j + 2);
    }
  // Layers of one block (a model may have both: an image tower of residual blocks, a text
  // tower of transformer layers).
  std::vector<Span> single;
  for (size_t l = 0, u = 0; l < layers.size(); ++l) {
    if (u < tupled.size() && blocks[tupled[u].first].first == layers[l].first) ++u;
    else single.push_back(layers[l]);
  }
  // A mixed edge's candidates of two units or more are modules (DARTS' SepConv, a pool and its norm).
  for (const Mixture& m : mixtures)
    if (std::find(single.begin(), single.end(), m.whole) != single.end())
      for (auto [cf, ct] : m.candidates) branch(els, cf, ct);
  for (auto [f, t] : single) {
    residual_branch(els, f, t);
    split_branch(els, f, t);
    shared_input_branches(els, f, t);
    const std::vector<Span> updates = graph_updates(els, {f, t});
    for (auto [uf, ut] : updates) unit_group("Update", els, uf, ut);
    if (!updates.empty()) continue;
    if (graph)
      for (auto [mf, mt] : message_mlps(els, {f, t})) unit_group("MLP", els, mf, mt);
    if (const Span mlp = update_mlp(els, {f, t}); mlp.second > mlp.first) unit_group("MLP", els, mlp.first, mlp.second);
  }
  for (auto [f, t] : single) parallel_branches(els, f, t);
  // nn.TransformerEncoderLayer and DecoderLayer compute their feed-forward inline: a layer
  // on nn.MultiheadAttention whose halves are attention but one. A layer with more halves
  // of other kinds beside its attention (a Conformer's feed-forwards and convolution module)
  // calls them as modules holding their norms, and a routed half is a module whatever the
  // attention; a layer of a conv mixer and an MLP alone (a MetaFormer's) norms before them.
  const bool on_mha = std::any_of(els.begin(), els.end(), [](const Element& e) { return e.kind == "attention" && e.multihead; });
  for (auto [from, to] : tupled) {
    size_t other = 0;
    bool conv_half = false;
    for (size_t k = from; k < to; ++k) {
      other += sig[k].find("attention") == std::string::npos;
      conv_half |= sig[k].find("attention") == std::string::npos && sig[k].find("conv") != std::string::npos;
    }
    // T5's layers (attention that scales neither its query nor its scores) call each half as a
    // module of its norm, its attention or feed-forward, its dropout and the sum.
    bool halves = pre_norm;
    for (size_t k = from; k < to && halves; ++k)
      halves = std::none_of(els.begin() + long(blocks[k].first), els.begin() + long(blocks[k].second),
                            [](const Element& e) { return e.unit && e.kind == "attention" && !unscaled_attention(e); });
    halves = halves && std::any_of(els.begin() + long(blocks[from].first), els.begin() + long(blocks[to - 1].second),
                                   [](const Element& e) { return e.unit && e.kind == "attention"; });
    for (size_t k = from; k < to; ++k) {
      if (halves) half_module(els, blocks[k].first, blocks[k].second);
      sublayer(els, blocks[k].first, blocks[k].second, k > from, on_mha && other <= 1, conv_half && other >= 3 && other < to - from, halves);
      if (on_mha && other <= 1) functional_activation(els, blocks[k].first, blocks[k].second);
    }
  }
  if (outputs)
    for (auto [from, to] : tupled) output_module(els, blocks[from].first, blocks[to - 1].second);
  // Runs still loose in their layer after its sublayers and MLPs were found (a soft mixture of
  // experts' MLPs, each on its slots).
  for (size_t k = 0; k < layers.size(); ++k)
    for (auto [f, t] : repeated_mlps_in_layer(els, layers[k]))
      if (std::all_of(els.begin() + long(f), els.begin() + long(t), [&](const Element& e) { return b.parent[e.node] == block_nodes[k]; }))
        unit_group("MLP", els, f, t);
  weight_norm_groups(els, factorised_convs(els), blocks);
}

// A U-Net's encoder: a pooling right before a block of a kind that recurs so, in a forward
// that upsamples after them (its decoder), opens a Down module with it. The first block,
// with no pooling before it, is the input's; a VGG's poolings, which end its stack, stay
// between blocks. Its decoder: an upsampling, a padding of the upsampled map to the skip's
// size and the skip's concatenation, right before a block of a kind that recurs so, open an
// Up module with it (that reconciling is a module's work; a flat decoder concatenates only).
void LayerMaker::unet_modules(const std::vector<Element>& els, const std::vector<Span>& layers, const std::vector<NodeId>& nodes,
                              const std::vector<std::string>& kinds) {
  std::map<std::string, int> pooled, upsampled;  // per kind: how many blocks a pooling (an upsampling) opens
  auto pool_before = [&](size_t k) {
    const size_t f = layers[k].first;
    return f > 0 && els[f - 1].unit && els[f - 1].role == Role::Pool && b.parent[els[f - 1].node] == b.parent[nodes[k]];
  };
  auto up_before = [&](size_t k) -> size_t {  // the upsampling's index, or SIZE_MAX
    size_t j = layers[k].first;
    bool joins = false, pads = false;
    while (j > 0 && !els[j - 1].unit && (els[j - 1].role == Role::Shape || els[j - 1].role == Role::Merge) &&
           b.parent[els[j - 1].node] == b.parent[nodes[k]]) {
      --j;
      joins |= els[j].role == Role::Merge;
      pads |= els[j].op == "aten::pad" || els[j].op == "aten::constant_pad_nd";
    }
    return joins && pads && j > 0 && upsamples(els[j - 1]) && b.parent[els[j - 1].node] == b.parent[nodes[k]] ? j - 1 : SIZE_MAX;
  };
  std::vector<size_t> ups(layers.size());
  size_t last = 0;
  for (size_t k = 0; k < layers.size(); ++k) {
    if (pool_before(k)) ++pooled[kinds[k]], last = layers[k].second;
    if ((ups[k] = up_before(k)) != SIZE_MAX) ++upsampled[kinds[k]];
  }
  if (std::none_of(els.begin() + long(last), els.end(), [](const Element& e) { return upsamples(e); })) return;
  for (size_t k = 0; k < layers.size(); ++k) {
    if (pool_before(k) && pooled[kinds[k]] >= 2) make(numbered("Down"), b.parent[nodes[k]], {els[layers[k].first - 1].node, nodes[k]});
    if (ups[k] != SIZE_MAX && upsampled[kinds[k]] >= 2) {
      std::vector<NodeId> kids;
      for (size_t j = ups[k]; j < layers[k].first; ++j) kids.push_back(els[j].node);
      kids.push_back(nodes[k]);
      make(numbered("Up"), b.parent[nodes[k]], kids);
    }
  }
}

// The ancestor of n (or n) right under p.
NodeId LayerMaker::child_of(NodeId n, NodeId p) const {
  while (b.parent[n] != p) n = b.parent[n];
  return n;
}

// Stages, where there are several: runs of blocks of the common kind. A block of another kind
// that holds the common kind's units in order (a downsampling block with its projection
// shortcut), or is that projection alone computed first, opens a stage; one that does not
// (a DenseNet's transition, a patch merging, a norm-first downsampling) stands between
// stages in none. Loose ops between a stage's blocks (a DenseNet loop's
// concatenations) are the stage's, and so are the same ops right after its last block.
void LayerMaker::stages(const std::vector<Element>& els, NodeId parent, const std::vector<std::pair<size_t, size_t>>& layers,
                        const std::vector<NodeId>& nodes, const std::vector<std::string>& sig) {
  if (nodes.size() < 4) return;
  std::map<std::string, int> count;
  for (auto& s : sig) ++count[s];
  auto holds = [](const std::string& kind, const std::string& inner) {  // inner's units, in order, within kind
    size_t at = 0;
    for (size_t from = 0; from < inner.size();) {
      const size_t end = inner.find_first_of(",;", from);
      const std::string unit = inner.substr(from, end - from + 1);
      at = kind.find(unit, at);
      if (at == std::string::npos) return false;
      at += unit.size();
      from = end + 1;
    }
    return true;
  };
  // The common kind is the most frequent, unless it is another recurring kind plus a
  // projection shortcut (a conv and its norm) and the stack opens with it: then it is the
  // stages' downsampling and the other their plain block (stages of two blocks).
  std::string common = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
  if (sig.front() == common)
    for (auto& [kind, n] : count)
      if (n >= 2 && signature_tokens(common) == signature_tokens(kind) + 2 && holds(common, kind)) common = kind;
  // Families: a kind with a projection shortcut (a conv and its norm more) is of the kind
  // without it where that one runs too. Where two such families run (BoTNet's bottlenecks,
  // then its attention blocks, each stage opening with its projecting block), each family's
  // blocks are its stages'.
  std::vector<std::string> family(sig);
  std::set<std::string> projecting;  // plain kinds that have a variant with a projection
  for (size_t k = 0; k < sig.size(); ++k)
    for (const auto& [kind, n] : count)
      if (with_projection(sig[k], kind)) family[k] = kind, projecting.insert(kind);
  const bool families = projecting.size() >= 2;
  auto common_of = [&](size_t k) -> const std::string& { return families && projecting.contains(family[k]) ? family[k] : common; };
  auto units_between = [&](size_t from, size_t to) {
    return std::any_of(els.begin() + long(from), els.begin() + long(to), [](const Element& e) { return e.unit; });
  };
  // A projection shortcut right before a block is that block's, computed first: it opens
  // the stage with it.
  auto projection = [&](size_t k) {
    return k + 1 < nodes.size() && !units_between(layers[k].second, layers[k + 1].first) && projection_shortcut(sig[k]);
  };
  // A block of the common kind that adds nothing back (it changes the shape: MobileNet's
  // and MnasNet's first block of a stack) opens a stage too, where a third of the blocks or
  // more add back (stages of two blocks, the first changing the shape: half of them).
  std::vector<uint8_t> adds_back(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) adds_back[k] = sums_back(els, layers[k].first, layers[k].second);
  const bool many_join = 3 * size_t(std::count(adds_back.begin(), adds_back.end(), 1)) >= nodes.size();
  std::vector<uint8_t> between(nodes.size());
  std::vector<std::pair<size_t, size_t>> runs;  // [first layer, last layer + 1)
  // The common kind and then a pooling of its output (a DenseNet's transition: norm,
  // activation, conv, pooling after its layers of norm, activation, conv) stands between
  // stages: it ends one, where a projection shortcut opens the next.
  auto pools_after = [&](const std::string& kind) {
    return kind.size() > common.size() && kind.ends_with("pool,") && !common.ends_with("pool,") && kind.starts_with(common);
  };
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string& kind = common_of(k);
    between[k] = (sig[k] != kind && !holds(sig[k], kind) && !projection(k)) || pools_after(sig[k]);
    const bool opens = k == 0 || (sig[k] != kind && !between[k]) || (many_join && !adds_back[k]) || (families && family[k] != family[k - 1]) ||
                       units_between(layers[k - 1].second, layers[k].first) || runs.empty() || runs.back().second != k;
    if (between[k]) continue;
    if (opens) runs.push_back({k, k + 1});
    else runs.back().second = k + 1;
  }
  if (runs.size() < 2 || runs.size() == nodes.size()) return;
  for (auto [first, last] : runs) {
    if (last - first < 2) continue;
    std::set<std::string_view> joins;  // the loose ops between its blocks, or opening each of them
    for (size_t k = first + 1; k < last; ++k)
      for (size_t j = layers[k - 1].second; j < layers[k].first; ++j) joins.insert(els[j].op);
    const Element& lead = els[layers[first].first];  // torchvision's _DenseLayer concatenates its inputs first
    if (!lead.unit && std::all_of(layers.begin() + long(first), layers.begin() + long(last),
                                  [&](auto& l) { return !els[l.first].unit && els[l.first].op == lead.op; }))
      joins.insert(lead.op);
    // The same ops after its last block are its own, also where the block standing next
    // took them (a DenseNet's last concatenation before the transition).
    const size_t stop = last == nodes.size() ? els.size() : between[last] ? layers[last].second : layers[last].first;
    size_t to = layers[last - 1].second;
    while (to < stop && !els[to].unit && joins.contains(els[to].op)) ++to;
    std::vector<NodeId> kids;
    for (size_t j = layers[first].first; j < to; ++j) {
      const bool taken = last < nodes.size() && j >= layers[last].first;  // from the block standing next
      if (const NodeId n = taken ? els[j].node : child_of(els[j].node, parent); kids.empty() || kids.back() != n) kids.push_back(n);
    }
    if (last < nodes.size() && to > layers[last].first) b.begin[nodes[last]] = b.begin[child_of(els[to].node, nodes[last])];
    // Named by how many blocks it runs ("Stage 2: 4 blocks"; a hierarchical transformer's:
    // "Stage 3: 6 layers").
    make(numbered("Stage") + ": " + std::to_string(last - first) + (sig[first].find('|') != std::string::npos ? " layers" : " blocks"),
         parent, kids);
  }
}

}  // namespace infer

using infer::Element;
using infer::LayerMaker;

std::string readable_unit(std::string_view kind, std::string_view op) {
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"conv", "Conv"}, {"batch_norm", "BatchNorm"}, {"layer_norm", "LayerNorm"}, {"rms_norm", "RMSNorm"}, {"response_norm", "GRN"}, {"group_norm", "GroupNorm"},
      {"instance_norm", "InstanceNorm"}, {"ghost_norm", "Ghost BatchNorm"},
      {"embedding", "Embedding"}, {"attention", "Attention"}, {"loss", "Loss"}, {"softmax", "Softmax"},
      {"dropout", "Dropout"}, {"noise", "Noise"}, {"pool", "Pool"}, {"bmm", "BMM"}, {"linear", "Linear"}, {"shortcut", "Shortcut"},
      {"mlp", "MLP"}, {"bias_mlp", "Bias MLP"}, {"parallel_convs", "Parallel convs"}, {"ops", "Ops"}, {"squeeze_excitation", "SqueezeExcitation"}, {"split_attention", "Split attention"}, {"attention_gate", "Attention gate"}, {"gate", "Gate"}, {"lstm_cell", "LSTM cell"}, {"rotary", "Rotary embedding"}};
  std::string_view bare = strip_prefix(op, "aten::");
  if (bare.starts_with("rnn_")) return "RNN";  // rnn_tanh, rnn_relu: nn.RNN, not its nonlinearity
  if (kind == "activation") {
    // The first that the op's name holds, so the longer names go first (relu6 before relu).
    static constexpr std::pair<std::string_view, std::string_view> acts[] = {
        {"leaky_relu", "LeakyReLU"}, {"prelu", "PReLU"},       {"relu6", "ReLU6"},       {"relu", "ReLU"},
        {"gelu", "GELU"},            {"silu", "SiLU"},         {"hardsigmoid", "Hardsigmoid"}, {"log_sigmoid", "LogSigmoid"},
        {"sigmoid", "Sigmoid"},      {"hardswish", "Hardswish"}, {"hardtanh", "Hardtanh"}, {"tanh", "Tanh"},
        {"glu", "GLU"},              {"selu", "SELU"},         {"celu", "CELU"},         {"elu", "ELU"},
        {"mish", "Mish"},            {"softplus", "Softplus"}, {"threshold", "ReLU"},    {"sin", "Sin"}};
    for (auto [k, n] : acts)
      if (op.find(k) != std::string_view::npos) return std::string(n);
    return "Activation";
  }
  for (auto [k, n] : names)
    if (k == kind) return std::string(n);
  if (bare.find("lstm") != std::string_view::npos) return "LSTM";
  if (bare.find("gru") != std::string_view::npos) return "GRU";
  if (bare.starts_with("upsample")) return "Upsample";
  if (bare == "flatten") return "Flatten";
  if (bare == "addcmul") return "Affine";  // beta + alpha * x: a norm-free model's norm
  if (bare == "unflatten") return "Unflatten";
  // Any other unit by its op, as PyTorch names the module: grid_sampler → GridSampler.
  std::string name;
  for (size_t i = 0; i < bare.size(); ++i) {
    if (bare[i] == '_') continue;
    const bool word_start = i == 0 || bare[i - 1] == '_';
    name += word_start && bare[i] >= 'a' && bare[i] <= 'z' ? char(bare[i] - 'a' + 'A') : bare[i];
  }
  return name.empty() ? std::string(kind) : name;
}

std::vector<InferredUnit> infer_units(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops) {
  LayerMaker maker{c, b, {}, {}};
  std::vector<Element> els = maker.units(ops);
  maker.place_units(els, parent);
  std::vector<InferredUnit> out;
  auto add = [&](const Element& e) { out.push_back({e.node, e.kind, maker.readable(e)}); };
  for (const Element& e : els) {
    if (!e.unit) continue;
    if (e.inner.empty() || e.one_module) add(e);
    else
      for (const Element& in : e.inner)
        if (in.unit) add(in);
  }
  return out;
}

void infer_layers(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
  LayerMaker maker{c, b, {}, {}};
  maker.run(parent, ops, model_root);
}

}  // namespace strata::annot
