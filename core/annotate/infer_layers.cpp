// Layers inferred from the forward's op sequence when the trace has no module frames and no
// ranges around the ops, by what PyTorch's modules are:
//   units   the leaf modules: a weight op (conv, linear, embedding, an RNN over all its steps),
//           a norm (BatchNorm with the counter it bumps first; one written by hand: RMSNorm),
//           an activation, a pooling, a dropout (a random mask applied by a product too:
//           stochastic depth), a resampling;
//           attention as one unit from its in-projection through the scores, softmax and
//           weighted sum to its out-projection (separate q/k/v projections are child units of
//           it, a packed one is part of it);
//           gates: squeeze and excitation, an additive attention gate on a U-Net's skip;
//   groups  a weight op with the norm and activation that follow it (ConvNormActivation),
//           with the upsampling right before it (an up-convolution);
//           convs back to back with nothing between, one separable conv (depthwise, pointwise);
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
// them.
#include "core/annotate/infer_blocks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace strata::annot {

namespace {

using namespace infer;

struct Inference {
  Context& c;
  TreeBuilder& b;
  std::map<std::string, uint32_t> counters;  // per readable kind: how many named so far
  std::set<std::string> branch_kinds;         // kinds of the branches split blocks made
  bool conditioned = false;                   // the blocks modulate their halves (adaLN: DiT's)
  bool pre_norm = false;                      // the model normalises before its weight ops (pre_norm_model)

  std::vector<Element> units(const std::vector<NodeId>& ops) { return leaf_units(c, b, ops); }

  std::string readable(const Element& e) const {
    // A norm with its permutes around it (permuted_norms) is named as the class people write for
    // it, LayerNorm2d; its norm inside keeps the plain name.
    if (e.role == Role::Norm && !e.inner.empty()) return readable_unit(e.kind, e.op) + (e.kind == "layer_norm" ? "2d" : " (permuted)");
    return readable_unit(e.kind, e.op);
  }

  NodeId make(const std::string& name, NodeId parent, const std::vector<NodeId>& kids) {
    NodeId first = kids.front();
    NodeId id = b.add(NodeKind::Layer, name, parent, b.phase[first], b.begin[first], b.end[first]);
    for (NodeId k : kids) {
      b.parent[k] = id;
      b.widen(id, b.begin[k], b.end[k]);
    }
    return id;
  }

  std::string numbered(const std::string& what) { return what + " " + std::to_string(++counters[what]); }

  // A layer node for a unit made of parts, over all its ops.
  NodeId layer_over(const Element& e, NodeId parent) {
    const NodeId n = b.add(NodeKind::Layer, numbered(readable(e)), parent, b.phase[e.ops.front()], b.begin[e.ops.front()], b.end[e.ops.front()]);
    for (NodeId op : e.ops) b.widen(n, b.begin[op], b.end[op]);
    return n;
  }

  // Nodes for the units under `parent`; loose ops stay there.
  void place_units(std::vector<Element>& els, NodeId parent) {
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
  std::string block_name(const std::vector<Element>& els, size_t from, size_t to, bool graph) {
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
  // its units ("MLP 2: Linear + BatchNorm + ReLU + Linear"), where they share a parent.
  void unit_group(const std::string& what, const std::vector<Element>& els, size_t from, size_t to) {
    std::vector<NodeId> kids;
    std::string name;
    for (size_t j = from; j < to; ++j) {
      kids.push_back(els[j].node);
      if (els[j].unit) name += (name.empty() ? "" : " + ") + readable(els[j]);
    }
    const NodeId parent = b.parent[kids.front()];
    if (std::all_of(kids.begin(), kids.end(), [&](NodeId n) { return b.parent[n] == parent; })) make(numbered(what) + ": " + name, parent, kids);
  }

  // Between two of them, the units that widen and activate (a Linear and its activation) are the
  // Intermediate module (HF's BertIntermediate).
  void output_module(const std::vector<Element>& els, size_t f, size_t t) {
    size_t after_output = SIZE_MAX;  // just after the last Output made
    for (size_t j = f; j + 2 < t; ++j) {
      if (!els[j].unit || els[j].role != Role::Weight) continue;
      const size_t norm = add_and_norm_after(els, j, t);
      if (norm == 0) continue;
      if (after_output != SIZE_MAX && j == after_output + 2 && els[after_output].unit && els[after_output].role == Role::Weight &&
          els[after_output + 1].unit && els[after_output + 1].role == Role::Activation)
        unit_group("Intermediate", els, after_output, j);
      std::vector<NodeId> kids;
      for (size_t i = j; i <= norm; ++i) kids.push_back(els[i].node);
      make(numbered("Output") + ": " + readable(els[j]) + " + " + readable(els[norm]), b.parent[kids.front()], kids);
      after_output = norm + 1;
      j = norm;
    }
  }

  void run(NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
    std::vector<Element> els = units(ops);
    for (Element& e : els)  // what the backward shows of the data flow (shared_inputs.cpp)
      e.shares_input = std::any_of(e.ops.begin(), e.ops.end(), [&](NodeId op) { return c.flags[b.event[op]] & Context::kSharesInput; });
    pre_norm = pre_norm_model(els);
    const bool outputs = output_modules(els, pre_norm);
    if (outputs) split_output_projections(els);
    if (model_root && ops.size() >= 2) parent = make("Model", parent, ops);
    place_units(els, parent);
    std::vector<std::pair<size_t, size_t>> blocks = message_passing_layers(els);
    const bool graph = !blocks.empty();
    if (blocks.empty()) blocks = residual_blocks(els, pre_norm);
    bool plain = false;
    if (!any_recurs(els, blocks)) blocks = plain_blocks(els), plain = true;
    if (!any_recurs(els, blocks)) blocks = repeated_calls(els);
    std::vector<std::string> sig;
    for (auto [f, t] : blocks) sig.push_back(signature(els, f, t));
    split_stem(els, blocks, sig);
    split_repeats(els, blocks, sig);
    calls_within_lone_blocks(els, blocks, sig);
    trim_dropouts(els, blocks, sig);
    close_with_output_ops(els, blocks, sig);
    trim_loose_leads(els, blocks, sig);
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
      block_nodes.push_back(make(block_name(els, f, t, graph), parent, kids));
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
    // of other kinds (a Conformer's feed-forwards and convolution module) calls them as
    // modules, and a routed half is a module whatever the attention.
    const bool on_mha = std::any_of(els.begin(), els.end(), [](const Element& e) { return e.kind == "attention" && e.multihead; });
    for (auto [from, to] : tupled) {
      size_t other = 0;
      bool conv_half = false;
      for (size_t k = from; k < to; ++k) {
        other += sig[k].find("attention") == std::string::npos;
        conv_half |= sig[k].find("attention") == std::string::npos && sig[k].find("conv") != std::string::npos;
      }
      for (size_t k = from; k < to; ++k) {
        sublayer(els, blocks[k].first, blocks[k].second, k > from, on_mha && other <= 1, conv_half && other >= 2);
        if (on_mha && other <= 1) functional_activation(els, blocks[k].first, blocks[k].second);
      }
    }
    if (outputs)
      for (auto [from, to] : tupled) output_module(els, blocks[from].first, blocks[to - 1].second);
    weight_norm_groups(els, factorised_convs(els));
  }

  // A U-Net's encoder: a pooling right before a block of a kind that recurs so, in a forward
  // that upsamples after them (its decoder), opens a Down module with it. The first block,
  // with no pooling before it, is the input's; a VGG's poolings, which end its stack, stay
  // between blocks. Its decoder: an upsampling, a padding of the upsampled map to the skip's
  // size and the skip's concatenation, right before a block of a kind that recurs so, open an
  // Up module with it (that reconciling is a module's work; a flat decoder concatenates only).
  void unet_modules(const std::vector<Element>& els, const std::vector<Span>& layers, const std::vector<NodeId>& nodes,
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

  // What a residual block adds to its input, x + F(x): F, from the block's start to the add,
  // without what scales it on the way (a layer scale, a stochastic depth), is a layer of its
  // own (InvertedResidual's conv, MBConv's block, CNBlock's block) when it is made of units
  // and reshapes only.
  void residual_branch(const std::vector<Element>& els, size_t f, size_t t) {
    size_t add = t;
    auto after_join = [](const Element& e) { return e.unit && (e.role == Role::Activation || e.role == Role::Norm || e.role == Role::Dropout); };
    while (add > f && after_join(els[add - 1])) --add;
    if (add == f || els[add - 1].unit || els[add - 1].role != Role::Add) return;
    // The activation after the join and the dropout on it are one module the block calls
    // (Jasper's and QuartzNet's activation-dropout Sequential).
    if (t == add + 2 && els[add].role == Role::Activation && els[add + 1].role == Role::Dropout)
      make(numbered("Activation") + ": " + readable(els[add]) + " + Dropout", b.parent[els[add].node], {els[add].node, els[add + 1].node});
    size_t end = --add;
    // What scales F on its way to the sum is the block's: a random mask (stochastic depth), a
    // layer scale's product. A dropout module F ends with is F's own (an MLP's last dropout).
    auto own_dropout = [&](size_t j) {  // a dropout module on F's last unit
      return !random_mask(els[j]) && j > f && els[j - 1].unit;
    };
    while (end > f && ((els[end - 1].unit && els[end - 1].role == Role::Dropout && !own_dropout(end - 1)) ||
                       (!els[end - 1].unit && els[end - 1].role != Role::Shape)))
      --end;
    // A conv and its BatchNorm that another conv follows at once is the projection shortcut,
    // computed first (an activation would follow a conv of F): F starts after it.
    auto is = [&](size_t j, std::string_view kind) { return j < end && els[j].unit && els[j].kind == kind; };
    if (is(f, "conv") && is(f + 1, "batch_norm") && is(f + 2, "conv")) f += 2;
    // A conv (and its norm) right after a norm ends F no more (a conv of F follows an
    // activation): it is the projection, computed after F.
    const size_t proj = end >= f + 2 && els[end - 1].role == Role::Norm ? end - 2 : end - 1;
    if (proj > f && is(proj, "conv") && els[proj - 1].unit && els[proj - 1].role == Role::Norm) end = proj;
    // Ops of the block's own in F (a product, a matmul) say F is computed inline, not a
    // module; unless the block opens with its norm and F with a projection, x + F(norm(x)):
    // F is the module the block hands the normed input to (Mamba's mixer, its scan written
    // in Python). A pre-activation block's norm and activation are the block's own.
    size_t units = 0;
    bool inline_ops = false;
    for (size_t j = f; j < end; ++j) {
      inline_ops |= !els[j].unit && els[j].role != Role::Shape;
      units += els[j].unit;
    }
    if (inline_ops) {
      const size_t norm = past_views(els, f, end), first = past_views(els, norm + 1, end);
      if (norm == end || els[norm].role != Role::Norm || first == end || els[first].role != Role::Weight) return;
      f = norm + 1;
      --units;
    }
    // In a pre-norm model the norm F opens with is the block's, x + F(norm(x)), where a weight
    // op takes the normed input (not a norm and activation first: a pre-activation conv
    // block's, whose sequence of them holds its norm).
    if (!inline_ops && pre_norm && f + 1 < end && els[f].unit && els[f].role == Role::Norm && els[f + 1].unit &&
        els[f + 1].role == Role::Weight)
      ++f, --units;
    if (units < 2) return;
    // An attention with units after it in one branch, no sum between, is a parallel block's
    // (Falcon's, GPT-J's: x + attn(ln(x)) + mlp(ln(x))): the layer calls the two, and the units
    // after the attention are its MLP, no branch module.
    for (size_t a = f; a < end; ++a) {
      if (!(els[a].unit && els[a].kind == "attention")) continue;
      size_t mlp_units = 0;
      for (size_t j = a + 1; j < end; ++j) mlp_units += els[j].unit;
      if (mlp_units >= 2) unit_group("MLP", els, a + 1, end);
      return;
    }
    std::vector<NodeId> kids;
    for (size_t j = f; j < end; ++j) kids.push_back(els[j].node);
    make(numbered("Residual branch"), b.parent[kids.front()], kids);
    // Inside it, Linears with an activation between them (dropouts apart) after a norm are an
    // MLP the branch calls (timm's ConvNeXt block: conv_dw, norm, mlp): a module, or siblings
    // in order.
    for (size_t j = f; j < end;) {
      size_t k = j, linears = 0, activations = 0;
      while (k < end && els[k].unit && ((els[k].role == Role::Weight && els[k].kind == "linear") || els[k].role == Role::Activation ||
                                        els[k].role == Role::Dropout)) {
        linears += els[k].role == Role::Weight;
        activations += els[k].role == Role::Activation;
        ++k;
      }
      const bool after_norm = j > f && els[j - 1].unit && els[j - 1].role == Role::Norm;
      if (linears >= 2 && activations >= 1 && after_norm && k - j < end - f) unit_group("MLP", els, j, k);
      j = std::max(k, j + 1);
    }
  }

  // The ancestor of n (or n) right under p.
  NodeId child_of(NodeId n, NodeId p) const {
    while (b.parent[n] != p) n = b.parent[n];
    return n;
  }

  // A block whose branches all take its input and are concatenated (an Inception module):
  // the backward shows each branch's first op but the last's (shared_inputs.cpp), so the
  // branches run from one such op to the next. The last branch starts at a pooling after the
  // last of them (the pool-projection branch), or is not told apart. Each branch of two units
  // or more is a module (torchvision's Sequential branches).
  void shared_input_branches(const std::vector<Element>& els, size_t f, size_t t) {
    size_t merge = t;
    while (merge > f && !(!els[merge - 1].unit && els[merge - 1].role == Role::Merge)) --merge;
    if (merge == f) return;
    const size_t end = merge - 1;
    std::vector<size_t> starts;
    for (size_t j = f; j < end; ++j)
      if (els[j].unit && els[j].shares_input) starts.push_back(j);
    if (starts.empty()) return;
    for (size_t j = starts.back() + 1; j < end; ++j)
      if (els[j].unit && els[j].role == Role::Pool) {
        starts.push_back(j);
        break;
      }
    if (starts.size() < 2) return;
    // Branches of units (and reshapes) only: a join or other work of the block's own between
    // them says they are no such branches.
    for (size_t j = starts.front(); j < end; ++j)
      if (!els[j].unit && els[j].role != Role::Shape) return;
    for (size_t k = 0; k + 1 < starts.size(); ++k) branch(els, starts[k], starts[k + 1]);
    if (els[starts.back()].role == Role::Pool) branch(els, starts.back(), end);
  }

  // A block that splits its input and concatenates what one half became with the other
  // (ShuffleNet's units): what runs between the split and the concatenation, units and
  // reshapes only, is a branch module of its own.
  void split_branch(const std::vector<Element>& els, size_t f, size_t t) {
    size_t from = f;
    while (from < t && !(!els[from].unit && is_split(els[from].op))) ++from;
    size_t end = from + 1;
    while (end < t && (els[end].unit || els[end].role == Role::Shape)) ++end;
    if (from >= t || end >= t || els[end].role != Role::Merge) return;
    if (branch(els, from + 1, end)) branch_kinds.insert(signature(els, from + 1, end));
  }

  // A branch module of els[from, to) where that holds two units or more; whether it made one.
  bool branch(const std::vector<Element>& els, size_t from, size_t to) {
    std::vector<NodeId> kids;
    size_t units = 0;
    for (size_t j = from; j < to; ++j) {
      kids.push_back(els[j].node);
      units += els[j].unit;
    }
    if (units < 2) return false;
    make(numbered("Branch"), b.parent[kids.front()], kids);
    return true;
  }

  // A block that concatenates two branches both taking its input (ShuffleNet's downsampling
  // unit): where the run right before the concatenation is of a kind seen as a branch (split
  // off in the other blocks), it is a branch, and the run before it, from the block's first
  // unit, is the other one.
  void parallel_branches(const std::vector<Element>& els, size_t f, size_t t) {
    size_t merge = t;
    while (merge > f && !(!els[merge - 1].unit && els[merge - 1].role == Role::Merge)) --merge;
    if (merge == f || branch_kinds.empty()) return;
    const size_t end = merge - 1;
    size_t first = f;
    while (first < end && !els[first].unit) ++first;
    for (size_t j = f; j < end; ++j)
      if (!els[j].unit && (els[j].role != Role::Shape || is_split(els[j].op))) return;  // a split block, or computation of its own
    for (size_t at = end; at-- > first + 1;) {
      if (!els[at].unit || !branch_kinds.contains(signature(els, at, end))) continue;
      branch(els, first, at);
      branch(els, at, end);
      return;
    }
  }

  // A pre-norm half of a transformer layer, x + F(norm(x)): F, from after the norm to the add,
  // is the sublayer module the layer calls (an attention with its output dropout, an MLP with
  // its last dropout) when it is two units or more and reshapes only; what scales it on the
  // way to the add (a stochastic depth's mask, a layer scale) and the reshapes around it are
  // the layer's. Only where attention is written by hand or absent (timm, GPT, Swin, Mixer):
  // nn.TransformerEncoderLayer, the layer built on nn.MultiheadAttention, computes its
  // feed-forward inline, with no module around it.
  // A later half with no norm of its own takes the first half's (GPT-J's and NeoX's parallel
  // attention and MLP, x + attn(h) + mlp(h)): F runs from its start.
  void sublayer(const std::vector<Element>& els, size_t f, size_t t, bool shares_norm, bool experts_only, bool norm_inside) {
    size_t from = f;
    while (from < t && !els[from].unit) ++from;
    if (from == t) return;
    // A BatchNorm first is a pre-activation conv block's, which computes its residual function
    // inline (PreAct ResNet): no sublayer module.
    const bool own_norm = els[from].role == Role::Norm && els[from].kind != "batch_norm";
    // A Conformer's feed-forward and convolution modules hold their norm and the transposes
    // around their convs (torchaudio's); its attention on nn.MultiheadAttention cannot.
    bool inside = false;
    if (norm_inside && own_norm)
      for (size_t j = from + 1; j < t && !inside; ++j) inside = els[j].unit && els[j].kind != "attention";
    for (size_t j = from + 1; j < t && inside; ++j) inside = !(els[j].unit && els[j].kind == "attention");
    const size_t norm_at = from;
    if (own_norm) ++from;
    else if (!shares_norm || els[from].role == Role::Norm) return;
    // Reshapes, and tensors made for what follows (torch before 1.14 makes some around each
    // record_function range), are no op of a module's.
    auto loose_shape = [&](size_t j) { return !els[j].unit && (els[j].role == Role::Shape || allocates(els[j].op)); };
    // In a conditioned block the normed input is modulated first (norm(x) * (1 + scale) +
    // shift, the vectors viewed to broadcast): the block's arithmetic, not F's.
    auto modulates = [&](size_t j) { return conditioned && !els[j].unit && (els[j].role == Role::Add || els[j].op == "aten::mul"); };
    while (from < t && (loose_shape(from) || modulates(from))) ++from;
    size_t end = t;
    while (end > from && loose_shape(end - 1)) --end;
    // A pre-norm layer's final norm after its last half's add (a Conformer's) is the layer's.
    if (own_norm && end > from + 1 && els[end - 1].unit && els[end - 1].role == Role::Norm && !els[end - 2].unit && els[end - 2].role == Role::Add) --end;
    if (end == from || els[end - 1].unit || els[end - 1].role != Role::Add) return;
    const size_t add_at = --end;
    // nn.TransformerEncoderLayer's inline feed-forward runs its dropouts (as ops even at p = 0);
    // a feed-forward without any beside nn.MultiheadAttention is a module of its own (DiT's MLP).
    const bool dropouts = std::any_of(els.begin() + long(from), els.begin() + long(end), [](const Element& e) { return e.unit && e.role == Role::Dropout; });
    if (mixture_of_experts(els, from, end) || (experts_only && dropouts)) return;
    while (end > from && (random_mask(els[end - 1]) || !els[end - 1].unit)) --end;
    // A norm of the branch's output right before it joins (Swin V2's res-post-norm, a sandwich
    // norm) is the layer's, as the norm opening a pre-norm half is.
    if (end > from && els[end - 1].unit && els[end - 1].role == Role::Norm) --end;
    if (inside) {
      from = norm_at;
      while (end < add_at && loose_shape(end)) ++end;
    }
    size_t units = 0;
    bool attention = false, conv = false;
    std::vector<NodeId> kids;
    std::string name;
    for (size_t j = from; j < end; ++j) {
      if (!els[j].unit && !loose_shape(j) && !gate_product(els, j, from, end)) return;
      kids.push_back(els[j].node);
      if (!els[j].unit) continue;
      attention |= els[j].kind == "attention";
      conv |= els[j].kind == "conv";
      name += (units++ ? " + " : "") + readable(els[j]);
    }
    if (units < 2) return;
    // Attention and the dropout after its out-projection: the attention module's own output
    // dropout (resid_dropout, proj_drop), not a module around the two. An attention that
    // transposes its projection's output back to its caller's layout has returned: the
    // dropout after that is the layer's.
    if (attention && units == 2 && els[end - 1].unit && els[end - 1].role == Role::Dropout) {
      // (The as_strided a transpose runs, left beside it by the clock's rounding, apart.)
      const auto& inner = els[from].inner;
      size_t last = inner.size() - 1;
      while (last > 0 && left_beside_by_rounding(b.end[inner[last - 1].ops.back()], b.begin[inner[last].ops.front()], b.end[inner[last].ops.back()]))
        --last;
      if (inner[last].op == "aten::transpose" || inner[last].op == "aten::permute") return;
      const NodeId a = els[from].node, d = els[end - 1].node;
      for (size_t j = from + 1; j < end; ++j) b.parent[els[j].node] = a;
      b.widen(a, b.begin[d], b.end[d]);
      return;
    }
    make(numbered(attention ? "Attention sublayer" : conv ? "Conv module" : "MLP") + ": " + name, b.parent[kids.front()], kids);
  }

  // The feed-forward nn.TransformerEncoderLayer and DecoderLayer compute inline in [from, end)
  // (linear1, activation, dropout, linear2) calls its activation as a function (F.relu, F.gelu
  // by default): its op is the layer's own, no module's.
  void functional_activation(const std::vector<Element>& els, size_t from, size_t end) {
    auto is = [&](size_t j, Role r) { return j < end && els[j].unit && els[j].role == r; };
    for (size_t j = from + 1; j < end; ++j) {
      const size_t w = before_views(els, j, from + 1) - 1;  // linear1, the view it returned its output through apart
      if (is(w, Role::Weight) && els[w].kind == "linear" && is(j, Role::Activation) && is(j + 1, Role::Dropout) &&
          is(j + 2, Role::Weight) && els[j + 2].kind == "linear") {
        for (NodeId op : els[j].ops) b.parent[op] = b.parent[els[j].node];
        b.drop(els[j].node);
      }
    }
  }

  // A gated MLP (SwiGLU, GeGLU) multiplies its two branches before its down-projection: that
  // product, between a unit and a weight op within [from, end), is the MLP's own.
  static bool gate_product(const std::vector<Element>& els, size_t j, size_t from, size_t end) {
    size_t next = j + 1;  // the down-projection, past the dropout on the product (GEGLU's in a diffusion UNet's layers)
    if (next + 1 < end && els[next].unit && els[next].role == Role::Dropout) ++next;
    return !els[j].unit && els[j].op.starts_with("aten::mul") && j > from && els[j - 1].unit && next < end && els[next].unit &&
           els[next].role == Role::Weight;
  }

  // A half whose ops pick the top-k of a router's scores (aten::topk; a Switch router's top-1
  // by max or argmax, where experts recur) routes tokens to experts: from after its norm to
  // the add, reshapes included (it flattens the tokens itself), it is one mixture-of-experts
  // module, and each run of units between its gathers and scatters that recurs (linear,
  // activation, linear) is an expert of it.
  bool mixture_of_experts(const std::vector<Element>& els, size_t from, size_t end) {
    auto picks = [&](std::initializer_list<std::string_view> ops) {
      return std::any_of(els.begin() + long(from), els.begin() + long(end),
                         [&](const Element& e) { return !e.unit && in(e.op, ops); });
    };
    const bool top_k = picks({"aten::topk"});
    if (!top_k && !picks({"aten::max", "aten::argmax"})) return false;
    from = before_views(els, from);
    std::vector<NodeId> kids;
    for (size_t j = from; j < end; ++j) kids.push_back(els[j].node);
    std::vector<std::pair<size_t, size_t>> runs;
    std::map<std::string, int> kinds;
    for (size_t j = from; j < end;) {
      size_t k = j;
      while (k < end && (els[k].unit || gate_product(els, k, j, end))) ++k;
      if (k - j >= 2) {
        runs.push_back({j, k});
        ++kinds[signature(els, j, k)];
      }
      j = std::max(k, j + 1);
    }
    // A run that starts with a whole recurring expert and goes on (a shared expert, then the
    // gate that scales it) is that expert and the rest; so is one that ends with it (the
    // gate first).
    for (size_t r = 0; r < runs.size(); ++r) {
      auto [f, t] = runs[r];
      const std::string sig = signature(els, f, t);
      for (auto& [other, n] : kinds) {
        if (n < 2 || other.size() >= sig.size()) continue;
        size_t cut = sig.starts_with(other) ? end_of_signature(els, f, t, other) : SIZE_MAX;
        size_t start = SIZE_MAX;
        for (size_t k = t - 1; cut >= t && k > f && start == SIZE_MAX; --k)
          if (signature(els, k, t) == other) start = k;
        if (cut >= t && start == SIZE_MAX) continue;  // none, or the whole run
        --kinds[sig];
        ++kinds[other];
        if (cut < t) runs[r].second = cut;
        else runs[r].first = start;
        break;
      }
    }
    size_t experts = 0;
    for (auto [f, t] : runs) experts += kinds[signature(els, f, t)] >= 2;
    if (!top_k && experts < 2) return false;
    const NodeId moe = make(numbered("MoE") + ": router + " + std::to_string(experts) + " experts", b.parent[kids.front()], kids);
    for (auto [f, t] : runs) {
      if (kinds[signature(els, f, t)] < 2) continue;
      std::vector<NodeId> units;
      for (size_t j = f; j < t; ++j) units.push_back(els[j].node);
      make(numbered("Expert"), moe, units);
    }
    return true;
  }

  // A weight op whose output a norm takes at once, with the activation that takes the norm's
  // (Conv-BatchNorm-ReLU): the leaf modules a ConvNormActivation or a Sequential wraps as one,
  // a layer of its own inside the block. Convs right before it with nothing between are one
  // factorised conv (a separable conv's depthwise and pointwise halves) the norm follows. Only
  // units under one parent: a group never crosses a block's edge. Not where the model
  // normalises before its weights (pre-activation: its residual adds follow a weight op):
  // there a norm opens the next group rather than closing the one before.
  // Convs back to back with nothing between (a depthwise conv, then a pointwise one) are one
  // factorised conv: a separable conv module. Without shapes a pair right before a residual
  // add may as well be a branch's last conv and the shortcut's projection (a diffusion
  // ResBlock's): only a model with such a pair before a norm or an activation somewhere uses
  // separable convs. Returns, per element, the layer made around it.
  std::vector<NodeId> factorised_convs(const std::vector<Element>& els) {
    std::vector<NodeId> around(els.size(), kNoNode);
    auto conv = [&](size_t j) { return els[j].unit && els[j].role == Role::Weight && els[j].inner.empty() && els[j].kind == "conv"; };
    std::vector<Span> runs;
    bool separable = false;
    for (size_t j = 0; j < els.size(); ++j) {
      size_t end = j;
      while (end < els.size() && conv(end) && b.parent[els[end].node] == b.parent[els[j].node]) ++end;
      if (end - j >= 2) {
        runs.push_back({j, end});
        separable |= end < els.size() && els[end].unit && (els[end].role == Role::Norm || els[end].role == Role::Activation);
      }
      if (end > j) j = end - 1;
    }
    if (!separable) return around;
    for (auto [from, to] : runs) {
      std::vector<NodeId> kids;
      for (size_t k = from; k < to; ++k) kids.push_back(els[k].node);
      const NodeId id = make(numbered("Separable conv") + ": " + std::to_string(to - from) + " Conv", b.parent[kids.front()], kids);
      for (size_t k = from; k < to; ++k) around[k] = id;
    }
    return around;
  }

  void weight_norm_groups(std::vector<Element>& els, const std::vector<NodeId>& factorised) {
    auto single_weight = [&](size_t j) {
      const Element& w = els[j];
      return w.unit && w.role == Role::Weight && w.inner.empty() && (w.kind == "conv" || w.kind == "linear");
    };
    auto node_of = [&](size_t k) { return factorised[k] != kNoNode ? factorised[k] : els[k].node; };
    const bool convs_after = normalises_first(els, "conv"), linears_after = normalises_first(els, "linear");
    for (size_t j = 0; j < els.size(); ++j) {
      // A gate's projections with their norms (W_g, W_x: conv and BatchNorm), a split
      // attention's first fc with its norm and activation: grouped in their turn, so that the
      // groups are numbered in the order they run.
      if (els[j].unit && (els[j].kind == "attention_gate" || els[j].kind == "split_attention")) {
        weight_norm_groups(els[j].inner, std::vector<NodeId>(els[j].inner.size(), kNoNode));
        continue;
      }
      if (j + 1 == els.size() || !single_weight(j) || (els[j].kind == "conv" ? convs_after : linears_after)) continue;
      // A LayerNorm after a linear is the next module's pre-norm (a transformer's), not its.
      if (!(els[j + 1].unit && els[j + 1].role == Role::Norm) || (els[j].kind == "linear" && els[j + 1].kind == "layer_norm")) continue;
      size_t from = j, end = j + 2;
      while (from > 0 && single_weight(from - 1) && els[from - 1].kind == els[j].kind && b.parent[node_of(from - 1)] == b.parent[node_of(j)])
        --from;
      // And the activation after them: a module of the group (nn.ReLU, nn.SiLU in a Sequential
      // with them), or F.relu(bn(conv(x))), its caller's own op, which the ops cannot tell
      // apart; the module is the commoner (four in five after a norm in the tuning corpora).
      if (end < els.size() && els[end].unit && els[end].role == Role::Activation) ++end;
      // An upsampling right before the conv is the same step's (an up-convolution: upsample,
      // then conv, norm and activation), unless it restores the size of a global pooling's
      // branch before it (ASPP's image pooling: pool, conv, activation, upsample).
      auto restores_pool = [&](size_t u) {
        for (size_t k = u; k-- > 0 && els[k].unit && els[k].role != Role::Norm;)
          if (els[k].role == Role::Pool && els[k].op.find("adaptive") != std::string_view::npos) return true;
        return false;
      };
      const bool up = from > 0 && els[from - 1].unit && els[from - 1].role == Role::Resample && els[j].kind == "conv" &&
                      b.parent[els[from - 1].node] == b.parent[node_of(from)] && !restores_pool(from - 1);
      if (up) --from;
      std::vector<NodeId> kids;
      std::string name;
      for (size_t k = from; k < end; ++k) {
        if (kids.empty() || kids.back() != node_of(k)) kids.push_back(node_of(k));
        name += (k > from ? " + " : "") + readable(els[k]);
      }
      const NodeId parent = b.parent[kids.front()];
      if (std::all_of(kids.begin(), kids.end(), [&](NodeId k) { return b.parent[k] == parent; }))
        make(numbered(up ? "Up-conv" : readable(els[j]) + "-Norm") + ": " + name, parent, kids);
      j = end - 1;
    }
  }

  // Stages, where there are several: runs of blocks of the common kind. A block of another kind
  // that holds the common kind's units in order (a downsampling block with its projection
  // shortcut), or is that projection alone computed first, opens a stage; one that does not
  // (a DenseNet's transition, a patch merging, a norm-first downsampling) stands between
  // stages in none. Loose ops between a stage's blocks (a DenseNet loop's
  // concatenations) are the stage's, and so are the same ops right after its last block.
  void stages(const std::vector<Element>& els, NodeId parent, const std::vector<std::pair<size_t, size_t>>& layers,
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
    auto holds_common = [&](const std::string& kind) { return holds(kind, common); };
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
    for (size_t k = 0; k < nodes.size(); ++k)
      adds_back[k] = std::any_of(els.begin() + long(layers[k].first), els.begin() + long(layers[k].second),
                             [](const Element& e) { return !e.unit && (e.role == Role::Add || e.role == Role::Merge); });
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
      between[k] = (sig[k] != common && !holds_common(sig[k]) && !projection(k)) || pools_after(sig[k]);
      const bool opens = k == 0 || (sig[k] != common && !between[k]) || (many_join && !adds_back[k]) ||
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
};

}  // namespace

std::string readable_unit(std::string_view kind, std::string_view op) {
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"conv", "Conv"}, {"batch_norm", "BatchNorm"}, {"layer_norm", "LayerNorm"}, {"rms_norm", "RMSNorm"}, {"response_norm", "GRN"}, {"group_norm", "GroupNorm"},
      {"instance_norm", "InstanceNorm"},
      {"embedding", "Embedding"}, {"attention", "Attention"}, {"loss", "Loss"}, {"softmax", "Softmax"},
      {"dropout", "Dropout"}, {"pool", "Pool"}, {"bmm", "BMM"}, {"linear", "Linear"}, {"shortcut", "Shortcut"},
      {"mlp", "MLP"}, {"bias_mlp", "Bias MLP"}, {"ops", "Ops"}, {"squeeze_excitation", "SqueezeExcitation"}, {"split_attention", "Split attention"}, {"attention_gate", "Attention gate"}, {"gate", "Gate"}, {"lstm_cell", "LSTM cell"}, {"rotary", "Rotary embedding"}};
  std::string_view bare = strip_prefix(op, "aten::");
  if (bare.starts_with("rnn_")) return "RNN";  // rnn_tanh, rnn_relu: nn.RNN, not its nonlinearity
  if (kind == "activation") {
    // The first that the op's name holds, so the longer names go first (relu6 before relu).
    static constexpr std::pair<std::string_view, std::string_view> acts[] = {
        {"leaky_relu", "LeakyReLU"}, {"prelu", "PReLU"},       {"relu6", "ReLU6"},       {"relu", "ReLU"},
        {"gelu", "GELU"},            {"silu", "SiLU"},         {"hardsigmoid", "Hardsigmoid"}, {"log_sigmoid", "LogSigmoid"},
        {"sigmoid", "Sigmoid"},      {"hardswish", "Hardswish"}, {"hardtanh", "Hardtanh"}, {"tanh", "Tanh"},
        {"glu", "GLU"},              {"selu", "SELU"},         {"celu", "CELU"},         {"elu", "ELU"},
        {"mish", "Mish"},            {"softplus", "Softplus"}, {"threshold", "ReLU"}};
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
  Inference inference{c, b, {}, {}};
  std::vector<Element> els = inference.units(ops);
  inference.place_units(els, parent);
  std::vector<InferredUnit> out;
  auto add = [&](const Element& e) { out.push_back({e.node, e.kind, inference.readable(e)}); };
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
  Inference inference{c, b, {}, {}};
  inference.run(parent, ops, model_root);
}

}  // namespace strata::annot
