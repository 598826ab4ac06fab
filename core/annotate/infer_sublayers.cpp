// What an inferred block holds inside: the residual function it adds back (a layer of its own
// when it is units only), the branches it concatenates, a transformer layer's pre-norm
// sublayers, a mixture of experts, and the groups of a weight op with its norm and activation.
// Part of core/annotate/infer_layers.h's LayerMaker.
#include "core/annotate/infer_layers.h"

#include <algorithm>

namespace strata::annot::infer {

namespace {

// The norm a block (or its residual function) in [from, to) opens with where its activation
// follows at once, past views: a pre-activation block's (bn, relu, conv ...). SIZE_MAX if none.
size_t preactivation_norm(const std::vector<Element>& els, size_t from, size_t to) {
  while (from < to && !els[from].unit) ++from;
  const bool opens = from + 1 < to && els[from].role == Role::Norm && els[from + 1].unit && els[from + 1].role == Role::Activation;
  return opens ? from : SIZE_MAX;
}

}  // namespace

// Attention and the dropout after its out-projection: the attention module's own output
// dropout (resid_dropout, proj_drop), not a module around the two, and put inside it. An
// attention that transposes its projection's output back to its caller's layout has returned:
// the dropout after that is the layer's (false).
// One that scales its query, projected apart from key and value, and whose dropout the sum
// takes at once is written as fairseq writes attention (BART's, Whisper's, Graphormer's): its
// layer drops its output out (false). A layer scale between (CaiT's class attention, timm's)
// scales the module's output, dropout and all.
bool LayerMaker::output_dropout(const std::vector<Element>& els, size_t attention, size_t dropout) {
  const bool scaled_after = dropout + 1 < els.size() && !els[dropout + 1].unit && els[dropout + 1].op == "aten::mul";
  if (separate_projections(els[attention]) && scales_query(els[attention]) && !scaled_after) return false;
  // (The as_strided a transpose runs, left beside it by the clock's rounding, apart.)
  const auto& inner = els[attention].inner;
  size_t last = inner.size() - 1;
  while (last > 0 && left_beside_by_rounding(b.end[inner[last - 1].ops.back()], b.begin[inner[last].ops.front()], b.end[inner[last].ops.back()]))
    --last;
  if (inner[last].op == "aten::transpose" || inner[last].op == "aten::permute") return false;
  const NodeId a = els[attention].node, d = els[dropout].node;
  for (size_t j = attention + 1; j <= dropout; ++j) b.parent[els[j].node] = a;
  b.widen(a, b.begin[d], b.end[d]);
  return true;
}

// A pre-norm half, [f, t) from its norm to its sum, as one module (T5's layers' halves).
void LayerMaker::half_module(const std::vector<Element>& els, size_t f, size_t t) {
  std::vector<NodeId> kids;
  std::string name;
  size_t units = 0;
  for (size_t j = f; j < t; ++j) {
    kids.push_back(els[j].node);
    if (els[j].unit) name += (units++ ? " + " : "") + readable(els[j]);
  }
  if (units < 2 || !std::all_of(kids.begin(), kids.end(), [&](NodeId k) { return b.parent[k] == b.parent[kids.front()]; })) return;
  make(numbered("Sublayer") + ": " + name, b.parent[kids.front()], kids);
}

// What a residual block adds to its input, x + F(x): F, from the block's start to the add,
// without what scales it on the way (a layer scale, a stochastic depth), is a layer of its
// own (InvertedResidual's conv, MBConv's block, CNBlock's block) when it is made of units
// and reshapes only.
void LayerMaker::residual_branch(const std::vector<Element>& els, size_t f, size_t t) {
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
  // activation): it is the projection, computed after F, with the pooling right before it
  // (ResNet-D's average-pool shortcut) and after what scales F (its drop path).
  const size_t proj = end >= f + 2 && els[end - 1].role == Role::Norm ? end - 2 : end - 1;
  if (proj > f && is(proj, "conv")) {
    size_t before = proj;
    if (before > f + 1 && els[before - 1].unit && els[before - 1].role == Role::Pool && els[proj + 1].role == Role::Norm) --before;
    while (before > f && random_mask(els[before - 1])) --before;
    if (els[before - 1].unit && els[before - 1].role == Role::Norm) end = before;
  }
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
  // A pre-activation block (a BatchNorm and its activation first: PreAct ResNet's, a Wide
  // ResNet's) computes its residual function inline, as the sublayers do (LayerMaker::sublayer).
  if (const size_t norm = preactivation_norm(els, f, end); norm != SIZE_MAX && els[norm].kind == "batch_norm") return;
  // An attention with units after it in one branch, no sum between, is a parallel block's
  // (Falcon's, GPT-J's: x + attn(ln(x)) + mlp(ln(x))): the layer calls the two, and the units
  // after the attention are its MLP, no branch module.
  // Where the MLP takes the same normed input (one norm for both: GPT-J's, CodeGen's), the
  // dropout between the attention and the MLP's first weight op is the attention's output
  // dropout (resid_dropout), no MLP's. A branch with a norm of its own after it (E-Branchformer's
  // cgMLP) leaves that dropout to the layer.
  for (size_t a = f; a < end; ++a) {
    if (!(els[a].unit && els[a].kind == "attention")) continue;
    size_t mlp = a + 1, mlp_units = 0;
    if (mlp + 1 < end && els[mlp].unit && els[mlp].role == Role::Dropout && els[mlp + 1].unit && els[mlp + 1].role == Role::Weight &&
        !els[a].inner.empty() && output_dropout(els, a, mlp))
      ++mlp;
    for (size_t j = mlp; j < end; ++j) mlp_units += els[j].unit;
    if (mlp_units >= 2) unit_group("MLP", els, mlp, end);
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

// A block whose branches all take its input and are concatenated (an Inception module):
// the backward shows each branch's first op but the last's (shared_inputs.cpp), so the
// branches run from one such op to the next. The last branch starts at a pooling after the
// last of them (the pool-projection branch), or is not told apart. Each branch of two units
// or more is a module (torchvision's Sequential branches).
void LayerMaker::shared_input_branches(const std::vector<Element>& els, size_t f, size_t t) {
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
void LayerMaker::split_branch(const std::vector<Element>& els, size_t f, size_t t) {
  size_t from = f;
  while (from < t && !(!els[from].unit && is_split(els[from].op))) ++from;
  size_t end = from + 1;
  while (end < t && (els[end].unit || els[end].role == Role::Shape)) ++end;
  if (from >= t || end >= t || els[end].role != Role::Merge) return;
  if (branch(els, from + 1, end)) branch_kinds.insert(signature(els, from + 1, end));
}

// A branch module of els[from, to) where that holds two units or more; whether it made one.
bool LayerMaker::branch(const std::vector<Element>& els, size_t from, size_t to) {
  if (from >= to) return false;  // (a mixed edge's identity candidate has no ops)
  std::vector<NodeId> kids;
  size_t units = 0;
  for (size_t j = from; j < to; ++j) {
    kids.push_back(els[j].node);
    units += els[j].unit;
  }
  // Only units under one parent: a branch never crosses a module made around some of them.
  const NodeId parent = b.parent[kids.front()];
  if (units < 2 || !std::all_of(kids.begin(), kids.end(), [&](NodeId n) { return b.parent[n] == parent; })) return false;
  make(numbered("Branch"), parent, kids);
  return true;
}

// A block that concatenates two branches both taking its input (ShuffleNet's downsampling
// unit): where the run right before the concatenation is of a kind seen as a branch (split
// off in the other blocks), it is a branch, and the run before it, from the block's first
// unit, is the other one.
void LayerMaker::parallel_branches(const std::vector<Element>& els, size_t f, size_t t) {
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
// `in_half`: the half is a module of its own (T5's T5LayerSelfAttention, T5LayerFF), its
// dropout before the sum its own, not F's.
void LayerMaker::sublayer(const std::vector<Element>& els, size_t f, size_t t, bool shares_norm, bool experts_only, bool norm_inside, bool in_half) {
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
  if (in_half && end > from && els[end - 1].unit && els[end - 1].role == Role::Dropout) --end;
  if (inside) {
    from = norm_at;
    while (end < add_at && loose_shape(end)) ++end;
  } else if (auto weights = [&](std::string_view kind) {
               return std::any_of(els.begin() + long(from), els.begin() + long(end), [&](const Element& e) { return e.unit && e.kind == kind; });
             };
             weights("conv") && !weights("linear")) {
    // A half of convs alone on tokens lays them out as a map and back inside its module (XCiT's
    // LPI): the reshapes around its convs are its own. One with Linears too works on the layout
    // its layer gives it (FocalNet's modulation on the block's (B, H, W, C) view).
    auto layout = [&](size_t j) {
      return !els[j].unit && in(strip_prefix(els[j].op, "aten::"), {"permute", "transpose", "reshape", "view", "flatten", "contiguous"});
    };
    while (from > norm_at + 1 && layout(from - 1)) --from;
    while (end < add_at && layout(end)) ++end;
  }
  // F that reshapes its output back after its last weight op reshaped its input before its
  // first (torchscale's FeedForwardNetwork: x.reshape(-1, d), ..., .view(x_shape)).
  size_t last_weight = end;
  while (last_weight > from && !(els[last_weight - 1].unit && els[last_weight - 1].role == Role::Weight)) --last_weight;
  if (last_weight > from && std::any_of(els.begin() + long(last_weight), els.begin() + long(end),
                                        [](const Element& e) { return !e.unit && e.role == Role::Shape; }))
    while (from > norm_at + 1 && !els[from - 1].unit && els[from - 1].role == Role::Shape) --from;
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
  if (attention && units == 2 && els[end - 1].unit && els[end - 1].role == Role::Dropout) {
    output_dropout(els, from, end - 1);
    return;
  }
  make(numbered(attention ? "Attention sublayer" : conv ? "Conv module" : "MLP") + ": " + name, b.parent[kids.front()], kids);
}

// The feed-forward nn.TransformerEncoderLayer and DecoderLayer compute inline in [from, end)
// (linear1, activation, dropout, linear2) calls its activation as a function (F.relu, F.gelu
// by default): its op is the layer's own, no module's.
void LayerMaker::functional_activation(const std::vector<Element>& els, size_t from, size_t end) {
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
bool LayerMaker::gate_product(const std::vector<Element>& els, size_t j, size_t from, size_t end) {
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
bool LayerMaker::mixture_of_experts(const std::vector<Element>& els, size_t from, size_t end) {
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
// separable convs. A padding layer right before one conv (nn.ReflectionPad2d), with the
// resize before it, is that conv's module too (a ConvLayer, an UpsampleConvLayer: resize, pad,
// conv). Returns, per element, the layer made around it.
std::vector<NodeId> LayerMaker::factorised_convs(const std::vector<Element>& els) {
  std::vector<NodeId> around(els.size(), kNoNode);
  auto conv = [&](size_t j) { return els[j].unit && els[j].role == Role::Weight && els[j].inner.empty() && els[j].kind == "conv"; };
  auto same_parent = [&](size_t j, size_t k) { return b.parent[els[j].node] == b.parent[els[k].node]; };
  for (size_t j = 0; j + 1 < els.size(); ++j) {
    if (!els[j].unit || els[j].role != Role::Pad || !conv(j + 1) || !same_parent(j, j + 1) || (j + 2 < els.size() && conv(j + 2)))
      continue;
    const bool up = j > 0 && els[j - 1].unit && els[j - 1].role == Role::Resample && same_parent(j - 1, j);
    std::vector<NodeId> kids;
    std::string name;
    for (size_t k = j - up; k <= j + 1; ++k) {
      kids.push_back(els[k].node);
      name += (k > j - up ? " + " : "") + readable(els[k]);
    }
    const NodeId id = make(numbered(up ? "Up-conv" : "Padded conv") + ": " + name, b.parent[kids.front()], kids);
    for (size_t k = j - up; k <= j + 1; ++k) around[k] = id;
  }
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
  // A conv between an MLP's first Linear and its activation, its tokens laid out as a map for
  // it and flattened back after (PVT v2's and SegFormer's DWConv in their feed-forward): one
  // module with those reshapes.
  for (size_t j = 1; j + 2 < els.size(); ++j) {
    if (!conv(j) || around[j] != kNoNode || els[j + 1].unit || els[j + 1].op != "aten::flatten") continue;
    const size_t lo = before_views(els, j, 0), hi = past_views(els, j + 1, els.size());
    if (lo == j || lo == 0 || hi == els.size() || !els[lo - 1].unit || els[lo - 1].kind != "linear" || !els[hi].unit ||
        els[hi].role != Role::Activation)
      continue;
    bool together = true;
    std::vector<NodeId> kids;
    for (size_t k = lo; k < hi; ++k) together &= same_parent(k, lo), kids.push_back(els[k].node);
    if (!together) continue;
    const NodeId id = make(numbered("Token conv") + ": Conv", b.parent[kids.front()], kids);
    for (size_t k = lo; k < hi; ++k) around[k] = id;
  }
  if (!separable) return around;
  for (auto [from, to] : runs) {
    if (around[from] != kNoNode) continue;
    std::vector<NodeId> kids;
    for (size_t k = from; k < to; ++k) kids.push_back(els[k].node);
    const NodeId id = make(numbered("Separable conv") + ": " + std::to_string(to - from) + " Conv", b.parent[kids.front()], kids);
    for (size_t k = from; k < to; ++k) around[k] = id;
  }
  return around;
}

void LayerMaker::weight_norm_groups(std::vector<Element>& els, const std::vector<NodeId>& factorised, const std::vector<Span>& blocks,
                                    bool gating) {
  auto single_weight = [&](size_t j) {
    const Element& w = els[j];
    return w.unit && w.role == Role::Weight && w.inner.empty() && (w.kind == "conv" || w.kind == "linear");
  };
  auto node_of = [&](size_t k) { return factorised[k] != kNoNode ? factorised[k] : els[k].node; };
  // Where the model normalises first (its residual adds follow convs), a block that opens with
  // a norm and its activation is pre-activation: its norms and activations open its convs'
  // steps. A block opening otherwise (MaxViT's MBConv: a pre-norm, then Conv-BN-GELU steps),
  // and what no block holds, keeps its convs' norms after them.
  std::vector<uint8_t> convs_after(els.size(), 0);
  if (normalises_first(els, "conv"))
    for (auto [f, t] : blocks)
      if (preactivation_norm(els, f, t) != SIZE_MAX) std::fill(convs_after.begin() + long(f), convs_after.begin() + long(t), 1);
  const bool linears_after = normalises_first(els, "linear");
  std::vector<std::pair<Span, NodeId>> made;  // each group's units and its layer
  for (size_t j = 0; j < els.size(); ++j) {
    // A gate's projections with their norms (W_g, W_x: conv and BatchNorm), a split
    // attention's first fc with its norm and activation: grouped in their turn, so that the
    // groups are numbered in the order they run.
    if (els[j].unit && (els[j].kind == "attention_gate" || els[j].kind == "split_attention")) {
      weight_norm_groups(els[j].inner, std::vector<NodeId>(els[j].inner.size(), kNoNode), {}, true);
      continue;
    }
    if (j + 1 == els.size() || !single_weight(j) || (els[j].kind == "conv" ? convs_after[j] : linears_after)) continue;
    auto is = [&](size_t k, Role r) { return k < els.size() && els[k].unit && els[k].role == r; };
    // The norm takes the conv's output at once; what a sequence model's conv module computes
    // between them is the output lengths from the input's ((len + 2 * pad - kernel) // stride
    // + 1: sums and an integer division), ops of the module.
    const size_t n = els[j].kind == "conv" ? past_length_arithmetic(els, j + 1) : j + 1;
    // A LayerNorm after a linear is the next module's pre-norm (a transformer's), not its.
    const bool norm_next = is(n, Role::Norm) && !(els[j].kind == "linear" && els[n].kind == "layer_norm");
    // A BatchNorm of the activation's output is the group's too, in that order
    // (Conv-ReLU-BatchNorm: a TDNN's layers, ConvMixer's); a norm over the features after an
    // activation (Conv-TasNet's global layer norm after its PReLU) is a module of its own.
    const bool norm_after_activation = !norm_next && is(n, Role::Activation) && is(n + 1, Role::Norm) && els[n + 1].kind == "batch_norm";
    if (!norm_next && !norm_after_activation) continue;
    size_t from = j, end = norm_after_activation ? n + 2 : n + 1;
    while (from > 0 && single_weight(from - 1) && els[from - 1].kind == els[j].kind && b.parent[node_of(from - 1)] == b.parent[node_of(j)])
      --from;
    // And the activation after them: a module of the group (nn.ReLU, nn.SiLU in a Sequential
    // with them), or F.relu(bn(conv(x))), its caller's own op, which the ops cannot tell
    // apart; the module is the commoner (four in five after a norm in the tuning corpora).
    if (norm_next && is(end, Role::Activation)) ++end;
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
    // So is a pooling right before a conv and its norm that the residual sum takes at once: the
    // projection shortcut's own downsampling (ResNet-D's average pool, then conv and norm);
    // and a global pooling right before one: a pyramid's bin or an image-pooling branch
    // (PSPNet's, ASPP's: AdaptiveAvgPool2d, Conv2d, BatchNorm2d, ReLU in one Sequential); not
    // inside a gate, whose pooling is its own (a split attention's squeeze).
    const bool pool_before = !up && from > 0 && els[from - 1].unit && els[from - 1].role == Role::Pool && els[j].kind == "conv" &&
                             b.parent[els[from - 1].node] == b.parent[node_of(from)];
    const bool down = pool_before && end == n + 1 && end < els.size() && !els[end].unit && els[end].role == Role::Add;
    const bool global = pool_before && !gating && els[from - 1].op.find("adaptive") != std::string_view::npos;
    if (down || global) --from;
    std::vector<NodeId> kids;
    std::string name;
    for (size_t k = from; k < end; ++k) {
      if (kids.empty() || kids.back() != node_of(k)) kids.push_back(node_of(k));
      if (els[k].unit) name += (k > from ? " + " : "") + readable(els[k]);
    }
    const NodeId parent = b.parent[kids.front()];
    if (std::all_of(kids.begin(), kids.end(), [&](NodeId k) { return b.parent[k] == parent; }))
      made.push_back({{from, end}, make(numbered(up ? "Up-conv" : down ? "Downsample" : global ? "Pooling" : readable(els[j]) + "-Norm") + ": " + name,
                                        parent, kids)});
    j = end - 1;
  }
  // Two groups, the second right after the first, their outputs concatenated and cut back to
  // a width at once: one module making features and cheap copies of them (GhostNet's).
  for (size_t g = 1; g < made.size(); ++g) {
    const auto [second, id] = made[g];
    const auto [first, first_id] = made[g - 1];
    const size_t cat = past_views(els, second.second, els.size());
    if (first.second != second.first || cat >= els.size() || !trimmed_concat(els, cat) || b.parent[first_id] != b.parent[id] ||
        b.parent[els[cat].node] != b.parent[id])
      continue;
    make(numbered("Ghost module") + ": 2 " + "Conv-Norm + cat", b.parent[id], {first_id, id, els[cat].node, els[cat + 1].node});
  }
}

}  // namespace strata::annot::infer
