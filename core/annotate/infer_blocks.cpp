// Blocks of inferred layers: where a forward's leaf units are closed into blocks (residual
// joins, message passing, concatenations), the stem cut from the first, and the kinds of layer
// made of several kinds of block. See core/annotate/infer_layers.cpp's opening comment.
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

namespace {

// A loose transpose or permute: a token of a signature, as units are.
bool is_transpose(const Element& e) { return !e.unit && (e.op == "aten::transpose" || e.op == "aten::permute"); }

// How many units a signature holds.
size_t signature_units(std::string_view sig) { return size_t(std::count(sig.begin(), sig.end(), ',')); }

// Whether a signature ends with a whole kind: its last tokens, not the tail of a token.
bool ends_with_kind(std::string_view sig, std::string_view kind) {
  return sig.size() > kind.size() && sig.ends_with(kind) && (sig[sig.size() - kind.size() - 1] == ',' || sig[sig.size() - kind.size() - 1] == ';');
}

}  // namespace

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
    // past views, dropouts and a scale (a layer scale's product)
    while (k > 0 && ((!els[k - 1].unit && (els[k - 1].role == Role::Shape || (k == j && els[k - 1].op == "aten::mul"))) ||
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
// projection on the shortcut where the channels change, computed before the branch or after).
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
  return extra != std::string::npos && big[extra] == ',' && big.compare(extra + 1, std::string::npos, small, at) == 0;
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
  auto ops_of = [&](size_t from, size_t to) {
    std::string s;
    for (size_t j = from; j < to; ++j) s.append(els[j].op).push_back(';');
    return s;
  };
  std::set<std::string> opening;  // kinds that open with a norm
  std::vector<std::string> leads;  // the loose ops before the norm of each block opening with one
  for (size_t k = 1; k < blocks.size(); ++k) {
    const size_t u = first_unit(blocks[k].first, blocks[k].second);
    if (u < blocks[k].second && els[u].role == Role::Norm) {
      opening.insert(signature(els, blocks[k].first, blocks[k].second));
      leads.push_back(ops_of(blocks[k].first, u));
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
      if (lead < norm && std::find(leads.begin(), leads.end(), ops_of(lead, norm)) != leads.end()) f = lead;
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

bool upsamples(const Element& e) {
  return e.unit && (e.role == Role::Resample || e.op.find("conv_transpose") != std::string_view::npos);
}

namespace {

// Whether the norm at j opens a branch: the next unit (views apart) computes, no sum first.
bool opens_branch(const std::vector<Element>& els, size_t j) {
  size_t k = j + 1;
  while (k < els.size() && !els[k].unit && els[k].role == Role::Shape) ++k;
  return k < els.size() && els[k].unit && (els[k].role == Role::Weight || els[k].role == Role::Pool);
}

}  // namespace

std::vector<Span> residual_blocks(const std::vector<Element>& els, bool pre_norm) {
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
  std::vector<Span> out;
  size_t start = 0, weights = 0;
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
    // Sums three or more between two units are a loop's, written in Python (a selective
    // scan's state updates, one per time step), no joins; nor is the stack of its outputs.
    {
      size_t sums = 1;
      for (size_t k = j; k > 0 && !els[k - 1].unit && sums < 3; --k) sums += els[k - 1].role == Role::Add;
      for (size_t k = j + 1; k < els.size() && !els[k].unit && sums < 3; ++k) sums += els[k].role == Role::Add;
      if (sums >= 3) continue;
    }
    // A sum another sum takes at once (two branches summed, out + shared expert, then joined
    // back to the input): the later one is the join.
    if (add && next < els.size() && !els[next].unit && els[next].role == Role::Add) continue;
    if (merge && next < els.size() && els[next].role == Role::Norm) {  // opens the next block
      if (j > start) out.push_back({start, j});
      start = j;
      weights = 0;
      continue;
    }
    if (merge && weights < 2) continue;  // one branch: a concatenation inside a block
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
    if (merge) end = next;  // the branches' join is reshaped in the block (ShuffleNet's channel shuffle)
    else if (end < els.size() && els[end].unit && ((els[end].role == Role::Activation && !conditions(end)) || (els[end].role == Role::Norm && post_norm))) {
      ++end;
      // and the dropout on the activation's output (QuartzNet's, after each block's ReLU)
      if (els[end - 1].role == Role::Activation && end < els.size() && els[end].unit && els[end].role == Role::Dropout) ++end;
    }
    else if (end + 1 < els.size() && els[end].unit && els[end].role == Role::Norm && els[end + 1].unit && els[end + 1].role == Role::Norm)
      ++end;  // two norms back to back: the first ends the layer (a Conformer block's final norm)
    out.push_back({start, end});
    start = end;
    weights = 0;
    j = end - 1;
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

namespace {

// Weight units other than lookups (embeddings take ids: a loop over tables is no computation
// repeated), or SIZE_MAX where the run holds an RNN cell (an unrolled loop's time step, which
// no module wraps).
size_t computing_weights(const std::vector<Element>& els, size_t from, size_t to) {
  size_t weights = 0;
  for (size_t j = from; j < to; ++j) {
    if (els[j].unit && els[j].op.ends_with("_cell")) return SIZE_MAX;
    weights += els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding";
  }
  return weights;
}

}  // namespace

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

std::vector<Span> repeated_calls(const std::vector<Element>& els) {
  // On units only: a loose op more or less in one call (a copy the runtime adds) breaks no repeat.
  std::vector<size_t> at;
  for (size_t j = 0; j < els.size(); ++j)
    if (els[j].unit) at.push_back(j);
  const size_t n = at.size();
  if (n < 4 || n > 4096) return {};  // the search costs the square of the units' count
  std::vector<uint32_t> tok(n);
  std::unordered_map<std::string_view, uint32_t> ids;
  for (size_t i = 0; i < n; ++i) tok[i] = ids.emplace(els[at[i]].op, uint32_t(ids.size())).first->second;
  // The run of units repeating with the shortest period that covers the most (three calls,
  // not one and a half twice), each repeat holding two computing weights or more.
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
      if (w < 2 || w == SIZE_MAX || els[at[s]].kind == "embedding") continue;
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
  // last takes as many loose ops after its last unit as the one before it had.
  std::vector<Span> out;
  for (size_t r = 0; r + 1 < reps; ++r) out.push_back({at[s + r * p], at[s + (r + 1) * p]});
  const size_t last = at[s + reps * p - 1] + 1, tail = out.back().second - (at[s + (reps - 1) * p - 1] + 1);
  size_t e = last;
  while (e < els.size() && e < last + tail && !els[e].unit) ++e;
  out.push_back({at[s + (reps - 1) * p], e});
  return out;
}

namespace {

// Sums messages into their nodes along edges.
bool is_scatter(const Element& e) {
  std::string_view n = strip_prefix(e.op, "aten::");
  return !e.unit && (n.starts_with("index_add") || n.starts_with("scatter_add") || n.starts_with("scatter_reduce") ||
                     n == "_sparse_mm" || n == "spmm" || n == "sparse_mm" || n == "_sparse_addmm");
}

// Takes the features of each edge's nodes.
bool is_gather(const Element& e) { return !e.unit && (e.op == "aten::index" || e.op == "aten::index_select" || e.op == "aten::gather"); }

}  // namespace

Span update_mlp(const std::vector<Element>& els, Span layer) {
  size_t last_scatter = SIZE_MAX;
  for (size_t j = layer.first; j < layer.second; ++j)
    if (is_scatter(els[j])) last_scatter = j;
  if (last_scatter == SIZE_MAX) return {};
  size_t first = SIZE_MAX, end = 0, weights = 0;
  for (size_t j = last_scatter + 1; j < layer.second; ++j)
    if (els[j].unit && els[j].role == Role::Weight) {
      if (first == SIZE_MAX) first = j;
      end = j + 1, ++weights;
    }
  if (weights < 2) return {};
  bool activation = false;  // between its first weight op and its last
  for (size_t j = first; j < end; ++j) activation |= els[j].unit && els[j].role == Role::Activation;
  for (size_t j = end; j < layer.second; ++j)  // after it: norms, activations and dropouts only
    if (els[j].unit && els[j].role != Role::Norm && els[j].role != Role::Activation && els[j].role != Role::Dropout) return {};
  return activation ? Span{first, end} : Span{};
}

std::vector<Span> message_mlps(const std::vector<Element>& els, Span layer) {
  size_t last_scatter = SIZE_MAX;
  for (size_t j = layer.first; j < layer.second; ++j)
    if (is_scatter(els[j])) last_scatter = j;
  std::vector<Span> out;
  for (size_t j = layer.first; j < last_scatter && last_scatter != SIZE_MAX;) {
    size_t end = j, weights = 0;
    bool activation = false;
    for (; end < last_scatter && els[end].unit; ++end) {
      weights += els[end].role == Role::Weight && els[end].kind != "embedding";
      activation |= els[end].role == Role::Activation;
    }
    if (weights >= 2 && activation) out.push_back({j, end});
    j = end + 1;
  }
  return out;
}

std::vector<Span> graph_updates(const std::vector<Element>& els, Span layer) {
  auto moves = [&](size_t j) { return is_scatter(els[j]) || is_gather(els[j]) || (!els[j].unit && els[j].role == Role::Merge); };
  std::vector<Span> out;
  size_t from = layer.first, after_unit = SIZE_MAX;  // just after the last unit, when only reshapes follow it
  bool weights = false, moved = false, units = false;
  for (size_t j = layer.first; j <= layer.second; ++j) {
    const bool loose_op = j < layer.second && !els[j].unit && els[j].role != Role::Shape;
    if (j == layer.second || (loose_op && after_unit != SIZE_MAX)) {  // an update ends at its last unit
      if (j == layer.second && !units && !out.empty()) break;  // the layer's own ops after (its residual sums)
      const size_t end = j == layer.second ? j : after_unit;
      // Weights before the first move are no update (a stem the layer was cut with).
      const bool stem = !moved && out.empty() && j < layer.second;
      if (!stem && (!weights || !moved)) return {};
      if (!stem) out.push_back({from, end});
      from = end;
      weights = moved = units = false;
      if (j == layer.second) break;
    }
    if (els[j].unit) after_unit = j + 1;
    else if (loose_op) after_unit = SIZE_MAX;
    weights |= els[j].unit && els[j].role == Role::Weight;
    units |= els[j].unit;
    moved |= moves(j);
  }
  return out.size() >= 2 ? out : std::vector<Span>{};
}

// Message passing (a GNN's layers): each layer sums its messages into the nodes with a
// scatter (index_add_, scatter_add_, a sparse product); where the forward's scatters repeat
// in a fixed pattern, each repetition is a layer. A layer starts at its first gather (and the
// buffer it sums into), or at the weight ops right before that gather when it transforms
// first (GCN, GAT); it ends where the next one starts, less a dropout its caller applies
// between layers; the last runs through the units the one before has. Sums inside a layer (a
// self term, (1 + eps) x) are its own, not residual joins.
std::vector<Span> message_passing_layers(const std::vector<Element>& els) {
  // A router's top-k scatters tokens back from experts, not messages along edges.
  if (std::any_of(els.begin(), els.end(), [](const Element& e) { return !e.unit && e.op == "aten::topk"; })) return {};
  std::vector<size_t> at;
  for (size_t j = 0; j < els.size(); ++j)
    if (is_scatter(els[j])) at.push_back(j);
  auto transform = [&](size_t j) { return els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding"; };
  // The layers if each holds `period` scatters, or none where one would hold no weights.
  auto layers = [&](size_t period) -> std::vector<Span> {
    // Layers transform first (GCN, GAT) unless the forward gathers before any weight op
    // (GraphSAGE's, which updates after): then the weight ops before a gather are the layer
    // before's.
    bool transform_first = false;
    for (size_t j = 0; j < at[0] && !transform_first; ++j) transform_first = transform(j);
    std::vector<size_t> starts;
    bool residual = false;  // layers end with the sum that joins their update back
    for (size_t k = 0; k < at.size(); k += period) {
      // From its first gather since the layer before (what runs between it and the scatter, an
      // attention's scores too, is the layer's), back over the loose ops before it, then over
      // the weight ops (and their views) whose output it gathers.
      const size_t floor = k == 0 ? 0 : at[k - 1] + 1;
      size_t st = at[k];
      for (size_t j = at[k]; j > floor; --j)
        if (is_gather(els[j - 1])) st = j - 1;
      // A sum before them joins the layer before's update back to its input (EGNN's h + the
      // node MLP): it and the weight ops before it are that layer's, not this one's transform.
      bool joined = false;
      while (st > floor && !els[st - 1].unit) joined |= els[--st].role == Role::Add;
      if (joined && k > 0)
        while (!els[st].unit && els[st].role == Role::Add) ++st, residual = true;
      for (size_t j = st; transform_first && !joined && j > floor && (transform(j - 1) || (!els[j - 1].unit && els[j - 1].role == Role::Shape)); --j)
        if (transform(j - 1)) st = j - 1;
      starts.push_back(st);
    }
    for (size_t k = 1; k < starts.size(); ++k)
      if (starts[k] <= starts[k - 1]) return {};
    // A graph network's updates each end with their dropout: a layer's last one's is its own.
    // Its sums right after a layer's last update are that layer's residual joins (x + x').
    auto dropout = [&](size_t j) { return els[j].unit && els[j].role == Role::Dropout; };
    bool updates_drop_out = false, graph_network = false;
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      const std::vector<Span> ups = graph_updates(els, {starts[k], starts[k + 1]});
      graph_network |= !ups.empty();
      updates_drop_out |= !ups.empty() && dropout(ups[0].second - 1);
    }
    for (size_t k = 1; k < starts.size() && graph_network; ++k)
      if (els[starts[k] - 1].unit)
        while (starts[k] + 1 < at[k * period] && !els[starts[k]].unit && els[starts[k]].role == Role::Add) ++starts[k];
    std::vector<Span> out;
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t end = k + 1 < starts.size() ? starts[k + 1] : els.size();
      if (k + 1 == starts.size()) {  // the last: through the units the one before has
        end = end_of_signature(els, starts[k], els.size(), signature(els, out.back().first, out.back().second));
        if (end == SIZE_MAX) end = std::min(els.size(), starts[k] + (out.back().second - out.back().first));
        if (out.back().second > 1 && !els[out.back().second - 1].unit && els[out.back().second - 1].role == Role::Add)
          while (end < els.size() && !els[end].unit && els[end].role == Role::Add) ++end;  // its residual joins, as the others'
      }
      if (updates_drop_out)
        while (end < els.size() && dropout(end)) ++end;
      else
        while (end > starts[k] + 1 && dropout(end - 1)) --end;
      // An update made by an MLP after the aggregation (GIN's) ends at its last weight op: a
      // norm and activation after it are the model's, between layers. A single weight op's
      // activation is its layer's (GCN's).
      // A graph network's updates each keep what follows their weights (norm, activation).
      if (const Span mlp = update_mlp(els, {starts[k], end}); mlp.second > mlp.first && !graph_network) {
        end = mlp.second;
        while (residual && end < els.size() && !els[end].unit && els[end].role == Role::Add) ++end;
      }
      // A layer has weights: scatters without any between them are one computation's parts
      // (GraphSAGE's sum of messages and its count of them for the mean).
      if (std::none_of(els.begin() + long(starts[k]), els.begin() + long(end), [](const Element& e) { return e.unit && e.role == Role::Weight; }))
        return {};
      out.push_back({starts[k], end});
    }
    // The layers between the first and the last are alike: where they alternate, each is a
    // part of a layer (a graph network's edge, node and global updates, each with weights).
    for (size_t k = 2; k + 1 < out.size(); ++k)
      if (signature(els, out[k].first, out[k].second) != signature(els, out[1].first, out[1].second)) return {};
    return out;
  };
  // The fewest scatters per layer whose pattern repeats and whose layers all hold weights.
  for (size_t p = 1; p <= at.size() / 2; ++p) {
    if (at.size() % p) continue;
    bool same = true;
    for (size_t i = p; i < at.size() && same; ++i) same = els[at[i]].op == els[at[i - p]].op;
    if (!same) continue;
    if (std::vector<Span> out = layers(p); !out.empty()) return out;
  }
  return {};
}

namespace {

bool lone_norm(const std::vector<Element>& els, size_t from, size_t to) {
  size_t norms = 0;
  for (size_t j = from; j < to; ++j) {
    if (els[j].unit ? els[j].role != Role::Norm : els[j].role != Role::Shape) return false;
    norms += els[j].unit;
  }
  return norms == 1;
}

}  // namespace

// A block that ends like another block (of two units or more, or of one unit recurring: DCN's
// cross layers) holds what came before that one (the stem: ResNet's conv, norm and pooling
// before its first residual block, a transformer's embeddings before its first layer;
// ConvNeXt's downsampling before each stage's first block): only its end is the block.
void split_stem(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig) {
  std::map<std::string, int> count;
  for (auto& s : sig) ++count[s];
  // Kinds whose blocks take half of their input by a split (ShuffleNet's chunk): one can only
  // begin at a split.
  std::set<std::string> opens_split;
  for (size_t k = 0; k < blocks.size(); ++k)
    if (blocks[k].first < blocks[k].second && is_split(els[blocks[k].first].op)) opens_split.insert(sig[k]);
  for (size_t k = 0; k < blocks.size(); ++k) {
    // The longest kind it ends like: a stage's first, downsampling block (two branches)
    // rather than the plain blocks after it, which end like both.
    std::vector<std::string> candidates;
    for (auto& [other, n] : count) {
      // One unit recurring ends a block of a kind that recurs itself only as its last unit.
      if ((signature_units(other) >= 2 || (n >= 2 && count[sig[k]] < 2)) && ends_with_kind(sig[k], other))
        candidates.push_back(other);
    }
    std::sort(candidates.begin(), candidates.end(), [](auto& x, auto& y) { return x.size() > y.size(); });
    for (const std::string& other : candidates) {
      // Back over exactly the other's units and transposes, then the loose ops before them (a
      // message passing's gather, the embeddings' sum); a transpose there is the stem's (a
      // LayerNorm2d's permute back): the other block does not start with it.
      size_t at = start_of_signature_tokens(els, blocks[k].first, blocks[k].second, other);
      while (at > blocks[k].first && !els[at - 1].unit && !is_transpose(els[at - 1])) --at;
      if (opens_split.contains(other) && !is_split(els[at].op)) continue;  // its branch is one of this block's
      if (at == blocks[k].first) continue;  // no stem before it
      // A projection shortcut computed first is the block's, no stem.
      if (projection_shortcut(signature(els, blocks[k].first, at))) continue;
      // So is a lone norm right after a block of the kind: no stem comes between two blocks
      // of a kind but a downsampling, and a norm alone is the identity branch's (RepVGG's,
      // normed before the others are computed).
      if (k > 0 && (sig[k - 1] == other || sig[k - 1] == sig[k]) && blocks[k - 1].second == blocks[k].first && lone_norm(els, blocks[k].first, at)) continue;
      blocks.insert(blocks.begin() + long(k) + 1, {at, blocks[k].second});
      blocks[k].second = at;
      sig.insert(sig.begin() + long(k) + 1, other);
      sig[k] = signature(els, blocks[k].first, at);
      ++count[other];
      break;
    }
  }
}

// Signatures pass over dropouts, so a dropout before a block (the embeddings') can lead it
// where the block's repeats start with no dropout: it is not the block's.
void trim_dropouts(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig) {
  auto leads = [&](size_t k) { return blocks[k].second > blocks[k].first + 1 && els[blocks[k].first].role == Role::Dropout; };
  std::unordered_map<std::string_view, size_t> without;  // per kind: its blocks that start with no dropout
  for (size_t k = 0; k < blocks.size(); ++k) without[sig[k]] += !leads(k);
  for (size_t k = 0; k < blocks.size(); ++k) {
    if (!leads(k) || without[sig[k]] == 0) continue;  // a peer of its kind without one
    while (leads(k)) ++blocks[k].first;
    ++without[sig[k]];
  }
}

// Where the repeats of a kind of block start with a unit, what the first one has before its
// first unit (the attention mask computed once for all layers) was computed before it: it
// stays outside. Transposes are part of the signature, so every repeat has them.
void trim_loose_leads(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig) {
  auto loose = [&](const Element& e) { return !e.unit && !is_transpose(e); };
  auto lead = [&](size_t k) {
    size_t n = 0;
    while (blocks[k].first + n < blocks[k].second && loose(els[blocks[k].first + n])) ++n;
    return n;
  };
  // Per kind: its first block, and the least lead of its repeats.
  struct Kind { size_t first = SIZE_MAX, least = SIZE_MAX; };
  std::unordered_map<std::string_view, Kind> kinds;
  std::vector<size_t> leads(blocks.size());
  for (size_t k = 0; k < blocks.size(); ++k) {
    leads[k] = lead(k);
    Kind& kd = kinds[sig[k]];
    if (kd.first == SIZE_MAX) kd.first = k;
    else kd.least = std::min(kd.least, leads[k]);
  }
  // Only the first of its kind: a repeat's own views (a shifted window's roll) are its. But
  // what a repeat alone computes first where its peers start with a unit (a softmax over the
  // weights the model selects with, left between two blocks) is the caller's.
  for (auto& [name, kd] : kinds)
    if (kd.least == 0 && blocks[kd.first].first + leads[kd.first] < blocks[kd.first].second) blocks[kd.first].first += leads[kd.first];
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Kind& kd = kinds[sig[k]];
    if (k == kd.first || leads[k] == 0 || kd.least != 0 || blocks[k].first + leads[k] >= blocks[k].second) continue;
    bool computes = true;
    for (size_t j = blocks[k].first; j < blocks[k].first + leads[k]; ++j)
      computes &= els[j].role != Role::Shape && els[j].role != Role::Add && els[j].role != Role::Merge;
    if (computes) blocks[k].first += leads[k];
  }
  // And the other way: where the first of a kind starts with no concatenation and its repeats
  // with one, that concatenation joins the block before to what it was given (a DenseNet
  // written as torch.cat([x, layer(x)]) in a loop): the caller's, not the block's.
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Kind& kd = kinds[sig[k]];
    if (k == kd.first || leads[kd.first] != 0 || leads[k] == 0) continue;
    bool joins = true;
    for (size_t j = blocks[k].first; j < blocks[k].first + leads[k]; ++j) joins &= els[j].role == Role::Merge;
    if (joins && blocks[k].first + leads[k] < blocks[k].second) blocks[k].first += leads[k];
  }
}

// Whether blocks k, k + 1, ... are of the tuple's kinds in its order, each after the last
// with no unit between them (`after[k]`: block k follows block k - 1 so).
bool tuple_at(const std::vector<uint8_t>& after, const std::vector<std::string>& sig, size_t k,
              const std::vector<std::string>& tuple) {
  if (k + tuple.size() > sig.size()) return false;
  for (size_t i = 0; i < tuple.size(); ++i)
    if (sig[k + i] != tuple[i] || (i > 0 && !after[k + i])) return false;
  return true;
}

// Whether some other kind among `kinds` (distinct) is a variant of `kind`; not looked for
// among very many kinds, where it would cost their square.
bool has_variant(const std::map<std::string, int>& kinds, const std::string& kind) {
  if (kinds.size() > 256) return false;
  return std::any_of(kinds.begin(), kinds.end(), [&](auto& other) { return variant_of(other.first, kind); });
}

namespace {

// Kinds of which one holds another whole (a downsampling block: a plain one plus a pooling
// and a projection) are variants of one kind of block, not sublayers doing different work.
// Any block holds a kind of one unit (WaveNet's skip conv after its gated residual half).
// Attention halves are sublayers whatever they hold more (TimeSformer's temporal attention
// and its projection before the spatial one).
bool variants(const std::vector<std::string>& kinds) {
  if (std::any_of(kinds.begin(), kinds.end(), [](const std::string& k) { return k.find("attention,") != std::string::npos; })) return false;
  for (const std::string& x : kinds)
    for (const std::string& y : kinds) {
      const size_t at = x.size() > y.size() && signature_tokens(y) >= 2 ? x.find(y) : std::string::npos;
      if (at == std::string::npos) continue;
      const std::string extra = x.substr(0, at) + x.substr(at + y.size());
      if (extra.find("conv,") != std::string::npos || extra.find("linear,") != std::string::npos) return true;
    }
  return false;
}

}  // namespace

// The kinds of layer made of two to four kinds of blocks: the longest run of one such tuple
// repeated back to back (at least twice), then the longest among the blocks left, and so
// on. None where blocks of one kind without attention follow one another: each of those is
// a module (a ResNet's).
std::vector<std::vector<std::string>> layer_tuples(const std::vector<Span>& blocks, const std::vector<uint8_t>& after,
                                                   const std::vector<std::string>& sig) {
  auto attention = [](const std::string& s) { return s.find("attention") != std::string::npos; };
  std::vector<std::vector<std::string>> tuples;
  // No sublayers: kinds that follow themselves (each of those blocks is a module: a
  // ResNet's), and lone units (a pooling or an upsampling cut off as the stem of the block
  // after it: a U-Net's, between its blocks).
  std::set<std::string> refused, joined;
  for (size_t k = 0; k < sig.size(); ++k) {
    if (k > 0 && sig[k] == sig[k - 1] && !attention(sig[k])) refused.insert(sig[k]);
    if (blocks[k].second - blocks[k].first >= 2) joined.insert(sig[k]);
  }
  for (const std::string& s : sig)
    if (!joined.contains(s)) refused.insert(s);
  std::vector<uint8_t> taken(sig.size(), 0);
  // A few kinds of layer at most (an encoder's, a decoder's); each scan passes over a run it
  // measured, so a long stack costs its length, not its square.
  for (int kinds = 0; kinds < 4; ++kinds) {
    size_t best_k = 0, best_p = 0, best_cover = 0;
    for (size_t p = 2; p <= 4; ++p)  // up to a Conformer's four halves
      for (size_t k = 0; k + 2 * p <= sig.size();) {
        std::vector<std::string> t(sig.begin() + long(k), sig.begin() + long(k + p));
        size_t reps = 0;
        if (!std::all_of(t.begin(), t.end(), [&](auto& x) { return x == t[0]; }) && !variants(t) &&  // one kind: no tuple
            std::none_of(t.begin(), t.end(), [&](auto& x) { return refused.contains(x); }))
          while (tuple_at(after, sig, k + reps * p, t) && (reps == 0 || after[k + reps * p]) &&
                 std::none_of(taken.begin() + long(k + reps * p), taken.begin() + long(k + reps * p + p), [](uint8_t x) { return x; }))
            ++reps;
        if (reps >= 2 && reps * p > best_cover) best_k = k, best_p = p, best_cover = reps * p;
        k += reps >= 2 ? reps * p : 1;
      }
    // A transformer layer may recur with other blocks between its repeats (a diffusion
    // UNet's one layer per spatial transformer, between residual blocks): a tuple of
    // attention and feed-forward halves (no convs: those are the blocks around it) that
    // recurs whole, apart, is a layer's kind too.
    std::vector<size_t> apart;  // where the tuple found apart starts, each time
    if (best_cover == 0)
      for (size_t p = 4; p >= 2 && apart.empty(); --p)
        for (size_t k = 0; k + p <= sig.size() && apart.empty(); ++k) {
          std::vector<std::string> t(sig.begin() + long(k), sig.begin() + long(k + p));
          if (std::none_of(t.begin(), t.end(), attention) || std::any_of(t.begin(), t.end(), [](auto& x) { return x.find("conv") != std::string::npos; }) ||
              std::all_of(t.begin(), t.end(), [&](auto& x) { return x == t[0]; }) ||
              variants(t) || std::any_of(t.begin(), t.end(), [&](auto& x) { return refused.contains(x); }))
            continue;
          std::vector<size_t> at;
          for (size_t m = k; m + p <= sig.size();) {
            const bool free = std::none_of(taken.begin() + long(m), taken.begin() + long(m + p), [](uint8_t x) { return x; });
            if (free && tuple_at(after, sig, m, t)) at.push_back(m), m += p;
            else ++m;
          }
          if (at.size() >= 2) apart = std::move(at), best_k = k, best_p = p;
        }
    if (best_cover == 0 && apart.empty()) break;
    std::vector<std::string> t(sig.begin() + long(best_k), sig.begin() + long(best_k + best_p));
    for (size_t i = best_k; i < best_k + best_cover; ++i) taken[i] = 1;
    for (size_t m : apart)
      for (size_t i = m; i < m + best_p; ++i) taken[i] = 1;
    // A layer starts with its attention, unless one kind alone ends with a norm (a
    // Conformer's second feed-forward and the layer's final norm): that one ends the layer;
    // without attention, with its largest block.
    auto ends_normed = [](const std::string& k) { return k.ends_with("layer_norm,") || k.ends_with("rms_norm,"); };
    const auto normed = std::find_if(t.begin(), t.end(), ends_normed);
    if (normed != t.end() && std::count_if(t.begin(), t.end(), ends_normed) == 1) std::rotate(t.begin(), normed + 1, t.end());
    else if (const auto a = std::find_if(t.begin(), t.end(), attention); a != t.end()) std::rotate(t.begin(), a, t.end());
    else  // with the block doing the most (WaveNet's gated residual half, then its skip conv)
      std::rotate(t.begin(), std::max_element(t.begin(), t.end(), [](auto& x, auto& y) { return signature_tokens(x) < signature_tokens(y); }), t.end());
    tuples.push_back(std::move(t));
  }
  std::stable_sort(tuples.begin(), tuples.end(), [](auto& x, auto& y) { return x.size() > y.size(); });
  return tuples;
}

// Whether some kind of block recurs (or has a variant): a lone block is not told from the
// stem or the head, so blocks none of which recur make no layer.
bool any_recurs(const std::vector<Element>& els, const std::vector<Span>& blocks) {
  std::map<std::string, int> count;
  for (auto [f, t] : blocks) ++count[signature(els, f, t)];
  return std::any_of(count.begin(), count.end(), [&](auto& k) { return k.second >= 2 || has_variant(count, k.first); });
}

}  // namespace strata::annot::infer
