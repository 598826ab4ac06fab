// Blocks of inferred layers: where a forward's leaf units are closed into blocks (residual
// joins, message passing, concatenations, runs between resamplings, calls repeated); where
// those blocks then begin and end is core/annotate/infer_block_edges.cpp's. See
// core/annotate/infer_layers.cpp's opening comment.
#include "core/annotate/infer_blocks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace strata::annot::infer {

// A signature of what a run of elements is, for repetition: its units' kinds in order.
// Transposes count: they tell a token-mixing half from a channel-mixing one. Dropouts do
// not: one with p = 0 (a first block's stochastic depth) runs no op.
std::string signature(const std::vector<Element>& els, size_t from, size_t to) {
  std::string s;
  for (size_t j = from; j < to; ++j) add_to_signature(s, els[j]);
  return s;
}

size_t signature_units(std::string_view sig) { return size_t(std::count(sig.begin(), sig.end(), ',')); }

bool ends_with_kind(std::string_view sig, std::string_view kind) {
  return sig.size() > kind.size() && sig.ends_with(kind) && (sig[sig.size() - kind.size() - 1] == ',' || sig[sig.size() - kind.size() - 1] == ';');
}

void add_to_signature(std::string& s, const Element& e) {
  if (e.unit && e.role == Role::Dropout) return;
  if (e.unit) s.append(e.kind).push_back(',');
  else if (is_transpose(e)) s += "T;";
}

std::string without_transposes(const std::string& sig) {
  if (sig.find("attention,") == std::string::npos) return sig;
  std::string out;
  for (size_t at = 0; at < sig.size();) {
    if (sig.compare(at, 2, "T;") == 0 && (at == 0 || sig[at - 1] == ',' || sig[at - 1] == ';')) {
      at += 2;
      continue;
    }
    out.push_back(sig[at++]);
  }
  return out;
}

size_t signature_tokens(std::string_view sig) { return size_t(std::count_if(sig.begin(), sig.end(), [](char ch) { return ch == ',' || ch == ';'; })); }

size_t start_of_signature_tokens(const std::vector<Element>& els, size_t from, size_t to, std::string_view sig) {
  size_t tokens = signature_tokens(sig), at = to;
  while (tokens > 0 && at > from) {
    const Element& e = els[--at];
    tokens -= (e.unit && e.role != Role::Dropout) || is_transpose(e);
  }
  return at;
}

size_t end_of_signature(const std::vector<Element>& els, size_t from, size_t to, const std::string& sig) {
  std::string s;
  size_t e = from;
  while (e < to && s != sig && s.size() <= sig.size()) add_to_signature(s, els[e++]);
  return s == sig ? e : SIZE_MAX;
}

// Whether the model normalises before its weight ops (pre-activation, pre-norm) rather than
// after them: its residual adds follow weight ops more often than norms.
bool normalises_first(const std::vector<Element>& els, std::string_view weight_kind) {
  int after_norm = 0, after_weight = 0;
  for (size_t j = 1; j < els.size(); ++j) {
    if (els[j].unit || els[j].role != Role::Add) continue;
    size_t k = j;
    // past views, dropouts and scales (a layer scale's product; a norm-free block's alpha,
    // its drop path between)
    while (k > 0 && ((!els[k - 1].unit && (els[k - 1].role == Role::Shape || els[k - 1].op == "aten::mul")) ||
                     (els[k - 1].unit && els[k - 1].role == Role::Dropout)))
      --k;
    if (k == 0 || !els[k - 1].unit) continue;
    after_norm += els[k - 1].role == Role::Norm;
    after_weight += els[k - 1].role == Role::Weight && (weight_kind.empty() || els[k - 1].kind == weight_kind);
  }
  return after_weight > after_norm;
}

// Blocks: [from, to) spans of elements, each where branches join: closed by an add that joins
// a branch holding a weight op back to its input, or by a concatenation of branches holding
// weight ops (an Inception or Fire module); a concatenation that a norm follows opens the
// block instead (DenseNet's layers concatenate the features before them).
// Post-norm (the norm right after the add closes the block) unless the first residual
// branch starts with a norm (pre-norm: that norm opens the next block); without attention,
// pre-norm where the residual adds follow weight ops (pre-activation).
bool pre_norm_model(const std::vector<Element>& els) {
  for (size_t j = 1; j < els.size(); ++j)
    if (els[j].unit && els[j].kind == "attention") {
      size_t k = j;
      while (k > 0 && !els[k - 1].unit) --k;  // the unit before it, past views and the like
      return k > 0 && els[k - 1].role == Role::Norm;
    }
  return normalises_first(els);
}

namespace {

// Whether one kind is a variant of another: it is the other with one unit more, anywhere (a
// projection on the shortcut where the channels change, computed before the branch or after;
// a pooling, a position bias's embedding). An activation more is no such variant: two Linears
// after a norm are no feed-forward half without its activation (DeiT's two heads summed).
bool variant_of(const std::string& x, const std::string& y) {
  if (x.empty() || y.empty() || x == y) return false;
  const std::string& big = x.size() > y.size() ? x : y;
  const std::string& small = x.size() > y.size() ? y : x;
  if (signature_units(big) != signature_units(small) + 1 || signature_units(small) < 2) return false;
  // Tokens end at ',' (a unit) or ';' (a transpose): the same tokens up to the extra unit, then
  // the same.
  size_t at = 0;
  while (at < small.size() && big[at] == small[at]) ++at;
  while (at > 0 && small[at - 1] != ',' && small[at - 1] != ';') --at;
  const size_t extra = big.find_first_of(",;", at);
  return extra != std::string::npos && big[extra] == ',' && big.compare(at, extra - at, "activation") != 0 &&
         big.compare(extra + 1, std::string::npos, small, at) == 0;
}

// Pre-norm blocks open with their norm: a weight op or a resampling before a block's first
// norm (a downsampling conv, an upsampling between a UNet's blocks) is between blocks where
// without it the block is one of a kind that opens with its norm (or a variant of one);
// otherwise it is the block's own (ConvNeXt's depthwise conv). A norm that ends the block
// before, nothing between, is then the next one's.
void open_at_norms(const std::vector<Element>& els, std::vector<Span>& blocks) {
  auto first_unit = [&](size_t from, size_t to) {
    while (from < to && !els[from].unit) ++from;
    return from;
  };
  std::set<std::string> opening;  // kinds that open with a norm
  std::vector<std::string> leads;  // the loose ops before the norm of each block opening with one
  for (size_t k = 1; k < blocks.size(); ++k) {
    const size_t u = first_unit(blocks[k].first, blocks[k].second);
    if (u < blocks[k].second && els[u].role == Role::Norm) {
      opening.insert(signature(els, blocks[k].first, blocks[k].second));
      leads.push_back(op_sequence(els, blocks[k].first, u));
    }
  }
  auto of_an_opening_kind = [&](const std::string& sig) {
    if (opening.contains(sig)) return true;
    return opening.size() <= 256 && std::any_of(opening.begin(), opening.end(), [&](const std::string& o) { return variant_of(o, sig); });
  };
  for (size_t k = 1; k < blocks.size(); ++k) {
    auto& [f, t] = blocks[k];
    const size_t first = first_unit(f, t);
    if (first == t || els[first].role == Role::Norm) continue;
    size_t norm = first, before = 0;
    while (norm < t && !(els[norm].unit && els[norm].role == Role::Norm)) {
      before += els[norm].unit;
      const bool between = !els[norm].unit || els[norm].role == Role::Resample || els[norm].role == Role::Weight;
      if (!between || before > 2) break;
      ++norm;
    }
    if (norm < t && els[norm].unit && els[norm].role == Role::Norm && of_an_opening_kind(signature(els, norm, t))) {
      // with the loose ops before it where a peer opens with the same (a layer scale's views)
      size_t lead = norm;
      while (lead > f && !els[lead - 1].unit) --lead;
      f = norm;
      if (lead < norm && std::find(leads.begin(), leads.end(), op_sequence(els, lead, norm)) != leads.end()) f = lead;
      continue;
    }
    auto& [pf, pt] = blocks[k - 1];
    const size_t last = pt - 1;
    if (pt > pf + 1 && els[last].unit && els[last].role == Role::Norm && of_an_opening_kind(signature(els, last, t))) {
      --pt;  // the norm ends the block before
      f = last;
    }
  }
}

}  // namespace

bool sums_back(const std::vector<Element>& els, size_t from, size_t to) {
  return std::any_of(els.begin() + long(from), els.begin() + long(to), [](const Element& e) { return !e.unit && (e.role == Role::Add || e.role == Role::Merge); });
}

bool upsamples(const Element& e) {
  return e.unit && (e.role == Role::Resample || e.op.find("conv_transpose") != std::string_view::npos);
}

namespace {

// Whether the sum at j takes what an upsampling since `from` made, no weight op between, and
// no other upsampling since `from`.
bool sums_skip(const std::vector<Element>& els, size_t from, size_t j) {
  size_t k = j;
  while (k > from && !upsamples(els[k - 1]) &&
         (els[k - 1].unit ? els[k - 1].role != Role::Weight && els[k - 1].role != Role::Pool
                          : els[k - 1].role != Role::Add && els[k - 1].role != Role::Merge))
    --k;
  if (k == from || !upsamples(els[k - 1])) return false;
  return std::none_of(els.begin() + long(from), els.begin() + long(k - 1), upsamples);
}

// Whether the norm at j opens a branch: the next unit (views apart) computes, no sum first.
bool opens_branch(const std::vector<Element>& els, size_t j) {
  const size_t k = past_views(els, j + 1, els.size());
  return k < els.size() && els[k].unit && (els[k].role == Role::Weight || els[k].role == Role::Pool);
}

// Whether the model's residual units have no norms and activate first (HiFi-GAN's, EnCodec's:
// act, conv, act, conv, then the sum): most sums follow a weight op in a run that opens with an
// activation, so the activation after a sum opens the next unit. (A TCN's branch ends
// activated and its sum is activated after: post.)
bool residual_units_activate_first(const std::vector<Element>& els) {
  auto before_sum = [&](size_t add) {  // the unit before a sum, views, scales and dropouts apart
    size_t k = add;
    while (k > 0 && ((!els[k - 1].unit && (els[k - 1].role == Role::Shape || els[k - 1].op == "aten::mul")) ||
                     (els[k - 1].unit && els[k - 1].role == Role::Dropout)))
      --k;
    return k;
  };
  size_t activated_first = 0, activated_last = 0;
  std::vector<std::vector<Role>> runs;  // the units' roles between one sum and the next
  for (size_t j = 0, from = 0; j < els.size(); ++j) {
    if (els[j].unit || els[j].role != Role::Add) continue;
    const size_t k = before_sum(j);
    size_t first = from;
    while (first < j && !els[first].unit) ++first;
    const bool norm_free = std::none_of(els.begin() + long(from), els.begin() + long(j), [](const Element& e) { return e.unit && e.role == Role::Norm; });
    if (norm_free && k > from && els[k - 1].unit && els[k - 1].role == Role::Weight && first < j && els[first].role == Role::Activation) ++activated_first;
    else if (k > from && els[k - 1].unit) ++activated_last;
    runs.emplace_back();
    for (size_t u = from; u < j; ++u)
      if (els[u].unit) runs.back().push_back(els[u].role);
    from = j + 1;
  }
  // The first unit runs like the others. Where those between two sums open with an activation
  // and the first, after what came before the stack, holds their units but that activation
  // (a Linear first, not an activation: Deep Crossing's residual units), the activation after
  // each sum ends its unit.
  if (runs.size() >= 3 && runs[1] == runs[2] && runs[1].size() >= 2 && runs[1].front() == Role::Activation) {
    const std::vector<Role>& mid = runs[1];
    const std::vector<Role>& head = runs[0];
    const size_t tail = mid.size() - 1;
    if (head.size() >= tail && std::equal(mid.begin() + 1, mid.end(), head.end() - long(tail)) &&
        (head.size() == tail || head[head.size() - tail - 1] != Role::Activation))
      return false;
  }
  return activated_first > activated_last;
}

// Whether the sum at `add` lies between a split made since `from` and the concatenation that
// joins its parts, each part computed alike: a split with no join after it up to the sum, a
// concatenation after it before any other split, and between the split, its sums and the
// concatenation runs of units of one kind (Res2Net's convs, one per part). Sums after runs of
// other kinds close blocks run on a part (CSPNet's and C2f's bottlenecks on their split's part).
bool parts_sum(const std::vector<Element>& els, size_t from, size_t add) {
  auto loose = [&](size_t k) { return !els[k].unit; };
  size_t split = SIZE_MAX;
  for (size_t k = add; k-- > from && split == SIZE_MAX;) {
    if (loose(k) && els[k].role == Role::Merge) return false;
    if (loose(k) && is_split(els[k].op)) split = k;
  }
  if (split == SIZE_MAX) return false;
  std::vector<size_t> edges{split};
  for (size_t k = split + 1; k < els.size(); ++k) {
    if (!loose(k)) continue;
    if (is_split(els[k].op)) return false;
    if (els[k].role == Role::Add) edges.push_back(k);
    if (els[k].role != Role::Merge) continue;
    edges.push_back(k);
    std::string part;
    for (size_t e = 1; e < edges.size(); ++e) {
      const std::string sig = signature(els, edges[e - 1] + 1, edges[e]);
      if (signature_units(sig) == 0 || (e > 1 && sig != part)) return false;
      part = sig;
    }
    return edges.size() >= 3;
  }
  return false;
}

// Whether the sum at `add` is a normaliser's epsilon, no join: rooted at once (a weight's
// demodulation, rsqrt(w.pow(2).sum() + eps)), or taken on a product (views apart) and divided
// at once (a linear attention's denominator). A residual sum scaled after,
// (x + f(x)) / sqrt(2), takes a module's output.
bool normaliser_sum(const std::vector<Element>& els, size_t add) {
  size_t before = add, after = add + 1;
  while (before > 0 && !els[before - 1].unit && els[before - 1].role == Role::Shape) --before;
  while (after < els.size() && !els[after].unit && els[after].role == Role::Shape) ++after;
  if (after >= els.size() || els[after].unit) return false;
  const std::string_view next = els[after].op;
  return next == "aten::rsqrt" || next == "aten::sqrt" ||
         (before > 0 && !els[before - 1].unit && els[before - 1].role == Role::Score && next.starts_with("aten::div"));
}

// Whether, after the concatenation at `cat`, one weight op fuses the branches (loose ops
// before it, a denominator's sum among them) and a sum takes its output, its norm and activation
// and a scale apart: the fused branches joined back to their input. Where the concatenation
// joins the parts of a split made since `from`, no join between (InceptionNeXt's token mixer:
// channels split four ways, three convolved, concatenated), any units may follow before the sum.
bool fused_then_summed(const std::vector<Element>& els, size_t from, size_t cat) {
  bool parts = false;
  for (size_t k = cat; k-- > from && !parts;) {
    if (!els[k].unit && (els[k].role == Role::Add || els[k].role == Role::Merge)) break;
    parts = !els[k].unit && is_split(els[k].op);
  }
  size_t weight = SIZE_MAX, scales = 0;
  for (size_t k = cat + 1; k < els.size(); ++k) {
    const Element& e = els[k];
    if (e.unit && e.role == Role::Weight) {
      if (e.kind == "embedding" || e.kind == "attention" || (weight != SIZE_MAX && !parts)) return false;
      weight = k;
      continue;
    }
    if (e.unit || e.role == Role::Shape) continue;
    if (is_split(e.op) || e.role == Role::Merge) return false;
    if (weight == SIZE_MAX) continue;
    if (e.role == Role::Add) return true;
    if (!parts && ((e.op != "aten::mul" && e.op != "aten::mul_") || ++scales > 1)) return false;
  }
  return false;
}

// Whether the loose op at j, past reshapes and products, is a sum.
bool summed_at_once(const std::vector<Element>& els, size_t j) {
  while (j < els.size() && !els[j].unit && (els[j].role == Role::Shape || in(strip_prefix(els[j].op, "aten::"), {"matmul", "mm", "bmm", "mul"})))
    ++j;
  return j < els.size() && !els[j].unit && els[j].role == Role::Add;
}

// Where the block a sum closes at `add` opens, from `start`: the backward shows the first op to
// take the block's input beside its shortcut (shared_inputs.cpp). A weight op alone, marked
// so, after another weight op since `start` opens it; what runs before it is no branch of it
// (a block with no shortcut before it: ContextNet's first, conv module, SE and Swish).
size_t opening_weight(const std::vector<Element>& els, size_t start, size_t add) {
  bool weighted = false;
  for (size_t k = start; k < add; ++k) {
    const Element& e = els[k];
    const bool weight = e.unit && e.role == Role::Weight;
    if (weighted && weight && e.shares_input && e.ops.size() == 1 && e.inner.empty() && (e.kind == "conv" || e.kind == "linear")) return k;
    weighted |= weight;
  }
  return start;
}

}  // namespace

std::vector<Span> residual_blocks(const std::vector<Element>& els, bool pre_norm, bool open_at_shared) {
  // Post-norm where most adds are followed by a norm (BERT's); elsewhere a norm right after
  // an add is the next thing's (a ConvNeXt stage's last block, then the downsampling's norm).
  size_t adds = 0, normed = 0;
  for (size_t j = 0; j + 1 < els.size(); ++j)
    if (!els[j].unit && els[j].role == Role::Add) {
      ++adds;
      normed += els[j + 1].unit && els[j + 1].role == Role::Norm;
    }
  const bool post_norm = !pre_norm && 2 * normed > adds;
  // An activation feeding a linear whose output is split at once computes the parameters of
  // what follows (DiT's adaLN modulation: SiLU, Linear, six chunks): it opens the next block,
  // it is no post-activation of the one a sum just closed.
  auto conditions = [&](size_t act) {
    return act + 2 < els.size() && els[act + 1].unit && els[act + 1].kind == "linear" && !els[act + 2].unit &&
           is_split(els[act + 2].op);
  };
  const bool activates_first = pre_norm && residual_units_activate_first(els);
  std::vector<Span> out;
  size_t start = 0, weights = 0, skip_closed = 0;  // skip_closed: how many blocks were out when a skip's sum last closed one
  for (size_t j = 0; j < els.size(); ++j) {
    // Lookups take ids, not a tensor a branch could be added back to: embeddings summed
    // (tokens and positions) are no residual block.
    if (els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding") ++weights;
    // Pre-norm: a branch opens at its norm, so weights before it are no branch's (a patch
    // embedding's conv before a MetaFormer's first block, whose token mixer may hold none).
    if (pre_norm && els[j].unit && els[j].role == Role::Norm && opens_branch(els, j)) weights = 0;
    if (els[j].unit || weights == 0) continue;
    const bool merge = els[j].role == Role::Merge, add = els[j].role == Role::Add;
    if (!add && !merge) continue;
    // Reshapes after the join are the block's; a split opens the next block's branches.
    size_t next = j + 1;
    while (next < els.size() && !els[next].unit && els[next].role == Role::Shape && !is_split(els[next].op)) ++next;
    // A vector broadcast over the map and added (a diffusion ResBlock's time embedding,
    // emb[:, :, None, None]; DiT's shift, shift.unsqueeze(1); a GAT's scores of both ends):
    // reshapes adding dimensions lead to it, and it conditions the branch rather than joining
    // it back to its input.
    if (add) {
      size_t k = j;
      bool grows = false;
      while (k > 0 && !els[k - 1].unit && els[k - 1].role == Role::Shape) grows |= els[--k].op == "aten::unsqueeze";
      if (grows) continue;
    }
    // A sum right after a product written by hand is its bias (x @ w + b: Griffin's
    // BlockDiagonalLinear, an einsum and its b), no join.
    if (add && j > 0 && !els[j - 1].unit && in(strip_prefix(els[j - 1].op, "aten::"), {"einsum", "matmul", "mm", "bmm"})) continue;
    // Sums three or more between two units are a loop's, written in Python (a selective
    // scan's state updates, one per time step), no joins; nor is the stack of its outputs.
    {
      size_t sums = 1;
      for (size_t k = j; k > 0 && !els[k - 1].unit && sums < 3; --k) sums += els[k - 1].role == Role::Add;
      for (size_t k = j + 1; k < els.size() && !els[k].unit && sums < 3; ++k) sums += els[k].role == Role::Add;
      if (sums >= 3) continue;
    }
    // A sum of a split's parts (sum(x.split(c)), a weighted sum of them: ResNeSt's split
    // attention), a split before it with loose ops only between, joins no branch back.
    if (add) {
      size_t k = j;
      while (k > 0 && !els[k - 1].unit && !is_split(els[k - 1].op)) --k;
      if (k > 0 && !els[k - 1].unit) continue;
    }
    // A sum between a split and the concatenation of its parts adds one part to the output
    // for the part before (Res2Net's hierarchical sums, xi + y into the next part's conv): the
    // concatenation joins the parts; no sum between closes a block.
    if (add && parts_sum(els, start, j)) continue;
    // A sum another sum takes at once (two branches summed, out + shared expert, then joined
    // back to the input): the later one is the join.
    if (add && next < els.size() && !els[next].unit && els[next].role == Role::Add) continue;
    // So does one another sum takes past a dropout on it (Falcon's dropout(attn + mlp) + x).
    if (add && next + 1 < els.size() && els[next].unit && els[next].role == Role::Dropout && !els[next + 1].unit &&
        els[next + 1].role == Role::Add)
      continue;
    // A sum right after an upsampling, no weight op between (a U-Net decoder block's output
    // plus the encoder's skip, cropped to its length: Demucs'), joins a map made long before:
    // it closes the block before it and stays between blocks. Not where the shortcut is
    // upsampled too (a second upsampling since the last join: BigGAN's up-block).
    if (add && sums_skip(els, start, j)) {
      size_t end = j;
      while (end > start && !els[end - 1].unit && els[end - 1].role == Role::Shape) --end;
      if (end > start) out.push_back({start, end}), skip_closed = out.size();
      start = j + 1;
      weights = 0;
      continue;
    }
    // Branches concatenated, one weight op fusing them, then a sum: the sum joins the input of
    // the branches back (Inception-ResNet's blocks, a dense block's local fusion, a multi-scale
    // attention's aggregated projections): the concatenation is inside that block.
    if (merge && fused_then_summed(els, start, j)) continue;
    if (merge && trimmed_concat(els, j)) continue;
    if (merge && next < els.size() && els[next].role == Role::Norm) {  // opens the next block
      if (j > start) out.push_back({start, j});
      start = j;
      weights = 0;
      continue;
    }
    if (merge && weights < 2) continue;  // one branch: a concatenation inside a block
    // A concatenation a sum takes at once, past reshapes and products (a projection by a
    // parameter, written by hand, on the shortcut), is the branch the sum joins back (Wukong's
    // layer: cat(fmb, lcb) + residual_projection(x)). Not one joining a split's parts, between
    // which a sum adds one part to the next (Res2Net's).
    if (merge && summed_at_once(els, next) &&
        std::none_of(els.begin() + long(start), els.begin() + long(j), [](const Element& e) { return !e.unit && is_split(e.op); }))
      continue;
    // A sum that normalises (a linear attention's denominator) joins no branch back.
    if (add && normaliser_sum(els, j)) continue;
    // A concatenation after an upsampling, with no pooling or other join since (past the
    // upsampled map's conv, a padding, a gate on the skip), takes a skip from the encoder (a
    // U-Net's decoder): the map it joins was made long before, no branch of a block.
    if (merge) {
      size_t k = j;
      while (k > 0 && !upsamples(els[k - 1]) && !(els[k - 1].unit && els[k - 1].role == Role::Pool) &&
             !(!els[k - 1].unit && (els[k - 1].role == Role::Merge || els[k - 1].role == Role::Add)))
        --k;
      if (k > 0 && upsamples(els[k - 1])) continue;
    }
    // A concatenation an RNN cell takes at once is that step's input (a decoder unrolled in
    // Python feeding its cell the previous token and the attention's context), not a join.
    if (merge && next < els.size() && els[next].unit && els[next].op.ends_with("_cell")) continue;
    size_t end = j + 1;
    // A norm of the sum of several branches and the input (two sums back to back: RepViT's
    // RepVGGDW, bn(conv(x) + conv1(x) + x)) normalises the block's own sum, pre-norm apart.
    const bool summed_branches = add && j > 0 && !els[j - 1].unit && els[j - 1].role == Role::Add && !pre_norm;
    if (merge) end = next;  // the branches' join is reshaped in the block (ShuffleNet's channel shuffle)
    else if (end < els.size() && els[end].unit &&
             ((els[end].role == Role::Activation && !conditions(end) && !activates_first) ||
              (els[end].role == Role::Norm && (post_norm || summed_branches)))) {
      ++end;
      // and the dropout on the activation's output (QuartzNet's, after each block's ReLU)
      if (els[end - 1].role == Role::Activation && end < els.size() && els[end].unit && els[end].role == Role::Dropout) ++end;
    }
    else if (end + 1 < els.size() && els[end].unit && els[end].role == Role::Norm && els[end + 1].unit && els[end + 1].role == Role::Norm)
      ++end;  // two norms back to back: the first ends the layer (a Conformer block's final norm)
    if (add && open_at_shared) start = opening_weight(els, start, j);
    out.push_back({start, end});
    start = end;
    weights = 0;
    j = end - 1;
  }
  // The decoder's last block, no skip summed after it, runs like the one before it.
  if (skip_closed != 0 && skip_closed == out.size()) {
    size_t first = start;
    while (first < els.size() && !els[first].unit) ++first;
    const auto [f, t] = out.back();
    if (const size_t end = end_of_signature(els, first, els.size(), signature(els, f, t)); end != SIZE_MAX) out.push_back({start, end});
  }
  if (pre_norm) open_at_norms(els, out);
  // A block closed by its add where its peers also take the norm after it (the last Conformer
  // layer's final norm, with no next layer's norm after it to show that it ends the layer)
  // takes it too.
  std::set<std::string> normed_kinds;
  for (auto [f, t] : out)
    if (t > f && els[t - 1].unit && els[t - 1].role == Role::Norm) normed_kinds.insert(signature(els, f, t));
  for (size_t k = 0; k < out.size(); ++k) {
    auto& [f, t] = out[k];
    if (t >= els.size() || !els[t].unit || els[t].role != Role::Norm || (k + 1 < out.size() && out[k + 1].first <= t)) continue;
    std::string with = signature(els, f, t);
    add_to_signature(with, els[t]);
    if (normed_kinds.contains(with)) ++t;
  }
  return out;
}

size_t computing_weights(const std::vector<Element>& els, size_t from, size_t to) {
  size_t weights = 0;
  for (size_t j = from; j < to; ++j) {
    if (els[j].unit && els[j].op.ends_with("_cell")) return SIZE_MAX;
    weights += els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding";
  }
  return weights;
}


std::vector<Span> plain_blocks(const std::vector<Element>& els) {
  // A gate on a skip (Attention U-Net's) is a module of its own between the runs too.
  auto cut = [&](const Element& e) {
    return (e.unit && (e.role == Role::Pool || e.kind == "attention_gate")) || upsamples(e) || (!e.unit && e.role == Role::Merge);
  };
  std::vector<Span> runs;
  for (size_t j = 0; j < els.size();) {
    while (j < els.size() && (cut(els[j]) || !els[j].unit)) ++j;
    size_t end = j;
    for (size_t k = j; k < els.size() && !cut(els[k]); ++k)
      if (els[k].unit) end = k + 1;
    if (const size_t w = computing_weights(els, j, end); w >= 2 && w != SIZE_MAX) runs.push_back({j, end});
    j = std::max(end, j + 1);
  }
  std::map<std::string, int> count;
  std::vector<std::string> sig;
  for (auto [f, t] : runs) ++count[sig.emplace_back(signature(els, f, t))];
  std::vector<Span> out;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (count[sig[k]] >= 2) {
      out.push_back(runs[k]);
      continue;
    }
    // A run that is a recurring kind repeated whole: as many blocks of it (an encoder whose
    // stages downsample by a strided conv, no pooling between them: nnU-Net's).
    const auto whole = std::find_if(count.begin(), count.end(), [&](const auto& kn) {
      const std::string& kind = kn.first;
      if (kn.second < 2 || kind.empty() || sig[k].size() <= kind.size() || sig[k].size() % kind.size() != 0) return false;
      for (size_t at = 0; at < sig[k].size(); at += kind.size())
        if (sig[k].compare(at, kind.size(), kind) != 0) return false;
      return true;
    });
    if (whole != count.end()) {
      for (size_t f = runs[k].first; f < runs[k].second;) {
        const size_t e = end_of_signature(els, f, runs[k].second, whole->first);
        if (e == SIZE_MAX) break;
        out.push_back({f, e});
        for (f = e; f < runs[k].second && !els[f].unit;) ++f;
      }
      continue;
    }
    // A run that starts with a recurring kind: that kind's block, then the head (the last double
    // conv, then the output conv); the forward's first run that ends with one: the stem (a
    // conv, norm and activation like the block's own), then that kind's block.
    for (auto& [kind, n] : count) {
      if (n < 2 || kind.size() >= sig[k].size()) continue;
      if (out.empty() && ends_with_kind(sig[k], kind)) {
        out.push_back({start_of_signature_tokens(els, runs[k].first, runs[k].second, kind), runs[k].second});
        break;
      }
      if (sig[k].starts_with(kind)) {
        out.push_back({runs[k].first, end_of_signature(els, runs[k].first, runs[k].second, kind)});
        break;
      }
    }
  }
  return out;
}

std::vector<Span> repeated_calls(const std::vector<Element>& els, Span within) {
  within.second = std::min(within.second, els.size());
  // On units only: a loose op more or less in one call (a copy the runtime adds) breaks no repeat.
  std::vector<size_t> at;
  for (size_t j = within.first; j < within.second; ++j)
    if (els[j].unit) at.push_back(j);
  const size_t n = at.size();
  if (n < 4 || n > 4096) return {};  // the search costs the square of the units' count
  std::vector<uint32_t> tok(n);
  std::unordered_map<std::string_view, uint32_t> ids;
  for (size_t i = 0; i < n; ++i) tok[i] = ids.emplace(els[at[i]].op, uint32_t(ids.size())).first->second;
  // The loose ops right before the repeat starting at unit s that the next repeat, p units on,
  // has right before it too: what each call computes before its first unit (DGCNN's EdgeConv
  // finding each point's neighbours before its conv). How many.
  auto shared_lead = [&](size_t s, size_t p) {
    size_t lead = 0;
    while (at[s] > within.first + lead && at[s + p] > at[s + p - 1] + 1 + lead) {
      const Element &a = els[at[s] - lead - 1], &b = els[at[s + p] - lead - 1];
      if (a.unit || b.unit || a.op != b.op) break;
      ++lead;
    }
    return lead;
  };
  auto computing = [&](size_t s, size_t lead) {
    size_t ops = 0;
    for (size_t j = at[s] - lead; j < at[s]; ++j) ops += els[j].role != Role::Shape;
    return ops;
  };
  // The run of units repeating with the shortest period that covers the most (three calls,
  // not one and a half twice), each repeat holding two computing weights or more, or one
  // with four computing ops or more before it that every repeat has.
  size_t best_s = 0, best_p = 0, best_len = 0;
  for (size_t p = 2; p <= n / 2; ++p) {
    size_t run = 0;  // how many i in a row have tok[i] == tok[i + p]
    for (size_t i = 0; i + p < n; ++i) {
      run = tok[i] == tok[i + p] ? run + 1 : 0;
      if (run < p || (i + p + 1 < n && tok[i + 1] == tok[i + p + 1])) continue;  // to the run's end
      const size_t s = i + 1 - run, len = run + p;  // [s, s + len) repeats with period p
      // Lookups opening each repeat may be the caller's (features looked up, then passed in)
      // as well as the module's: the ops cannot tell, so no call is inferred there.
      const size_t w = computing_weights(els, at[s], at[s + p - 1] + 1);
      if (w == SIZE_MAX || els[at[s]].kind == "embedding" || (w < 2 && !(w == 1 && computing(s, shared_lead(s, p)) >= 4))) continue;
      // A repeat that is itself a shorter run of a weight op and its activation repeated
      // (Linear, ReLU twice) is a stack of those layers (an MLP, a loop over a ModuleList), no
      // module of two of them called again. (Conv, norm and activation twice may well be one:
      // MobileNet V1's separable convs.)
      bool periodic = false;
      for (size_t q = 1; q < p && !periodic; ++q) {
        if (p % q) continue;
        periodic = true;
        for (size_t k = q; k < p && periodic; ++k) periodic = tok[s + k] == tok[s + k - q];
        for (size_t k = 0; k < q && periodic; ++k) periodic = els[at[s + k]].role != Role::Norm;
      }
      if (periodic) continue;
      if (len > best_len) best_s = s, best_p = p, best_len = len;
    }
  }
  if (best_len == 0) return {};
  size_t s = best_s;
  const size_t p = best_p, reps = best_len / p, extra = best_len % p;
  // Where the pattern runs on past the last repeat by two units or more (MobileNet V1's
  // separable convs, every one a conv, norm and ReLU like the stem's), the repeats are the
  // ones that end with it and the first units are the stem, when a weight opens them.
  if (extra >= 2 && els[at[s + extra]].role == Role::Weight) s += extra;
  // A call runs to the next one's first unit (what it does to its output: a normalize); the
  // last takes as many loose ops after its last unit as the one before it had. A call of one
  // weight op, found by what it computes before it, starts there.
  const size_t lead = reps >= 2 && computing_weights(els, at[s], at[s + p - 1] + 1) == 1 ? shared_lead(s, p) : 0;
  std::vector<Span> out;
  for (size_t r = 0; r + 1 < reps; ++r) out.push_back({at[s + r * p] - lead, at[s + (r + 1) * p] - lead});
  const size_t last = at[s + reps * p - 1] + 1, tail = out.back().second - (at[s + (reps - 1) * p - 1] + 1);
  size_t e = last;
  while (e < within.second && e < last + tail && !els[e].unit) ++e;
  out.push_back({at[s + (reps - 1) * p] - lead, e});
  return out;
}

// A block of a kind that stands alone (no other block like it, nor a variant) closed by a
// sum or join far from where its units repeat: the run of units before the sum (a U-Net's
// encoder of four identical downsampling blocks, then its bottleneck, then the first skip's
// sum) holds calls of one module repeated; those are the blocks.
void calls_within_lone_blocks(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig) {
  std::map<std::string, int> count;
  for (auto& s : sig) ++count[s];
  for (size_t k = 0; k < blocks.size(); ++k) {
    if (count[sig[k]] >= 2 || has_variant(count, sig[k])) continue;
    std::vector<Span> calls = repeated_calls(els, blocks[k]);
    if (calls.size() < 2) continue;
    std::vector<std::string> kinds;
    for (auto [f, t] : calls) kinds.push_back(signature(els, f, t));
    blocks.erase(blocks.begin() + long(k));
    sig.erase(sig.begin() + long(k));
    blocks.insert(blocks.begin() + long(k), calls.begin(), calls.end());
    sig.insert(sig.begin() + long(k), kinds.begin(), kinds.end());
    k += calls.size() - 1;
  }
}

bool with_projection(const std::string& kind, const std::string& plain) {
  constexpr std::string_view shortcut = kProjectionShortcut;
  if (kind.size() != plain.size() + shortcut.size()) return false;
  for (size_t at = 0; at + shortcut.size() <= kind.size(); at = kind.find_first_of(",;", at) + 1) {
    if (kind.compare(at, shortcut.size(), shortcut) == 0 && kind.compare(0, at, plain, 0, at) == 0 &&
        kind.compare(at + shortcut.size(), std::string::npos, plain, at) == 0)
      return true;
    if (kind.find_first_of(",;", at) == std::string::npos) break;
  }
  return false;
}

// among very many kinds, where it would cost their square.
bool has_variant(const std::map<std::string, int>& kinds, const std::string& kind) {
  if (kinds.size() > 256) return false;
  return std::any_of(kinds.begin(), kinds.end(), [&](auto& other) {
    return variant_of(other.first, kind) || with_projection(other.first, kind) || with_projection(kind, other.first);
  });
}

// Whether some kind of block recurs (or has a variant): a lone block is not told from the
// stem or the head, so blocks none of which recur make no layer.
bool any_recurs(const std::vector<Element>& els, const std::vector<Span>& blocks) {
  std::map<std::string, int> count;
  for (auto [f, t] : blocks) ++count[signature(els, f, t)];
  return std::any_of(count.begin(), count.end(), [&](auto& k) { return k.second >= 2 || has_variant(count, k.first); });
}

}  // namespace strata::annot::infer
