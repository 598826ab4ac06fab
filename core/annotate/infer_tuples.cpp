// Layers from blocks: kinds of layer made of several kinds of block (a transformer's attention
// and MLP halves, a decoder's three) found where they repeat in a fixed order, blocks of a
// recurring kind, the cross-stage partial modules around blocks, and the MLPs of one kind
// outside them. See infer_blocks.h.
#include "core/annotate/infer_blocks.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace strata::annot::infer {

// Whether blocks k, k + 1, ... are of the tuple's kinds in its order, each after the last
// with no unit between them (`after[k]`: block k follows block k - 1 so).
bool tuple_at(const std::vector<uint8_t>& after, const std::vector<std::string>& sig, size_t k,
              const std::vector<std::string>& tuple) {
  if (k + tuple.size() > sig.size()) return false;
  for (size_t i = 0; i < tuple.size(); ++i)
    if (sig[k + i] != tuple[i] || (i > 0 && !after[k + i])) return false;
  return true;
}

namespace {

// Kinds of which one holds another whole (a downsampling block: a plain one plus a pooling
// and a projection) are variants of one kind of block, not sublayers doing different work.
// Any block holds a kind of one unit (WaveNet's skip conv after its gated residual half).
// Attention halves are sublayers whatever they hold more (TimeSformer's temporal attention
// and its projection before the spatial one).
bool variants(const std::vector<std::string>& kinds) {
  if (std::any_of(kinds.begin(), kinds.end(), [](const std::string& k) { return k.find("attention,") != std::string::npos; })) return false;
  auto tokens = [](const std::string& sig) {
    std::vector<std::string_view> out;
    for (size_t from = 0; from < sig.size();) {
      const size_t end = sig.find_first_of(",;", from);
      if (end == std::string::npos) break;
      out.push_back(std::string_view(sig).substr(from, end - from + 1));
      from = end + 1;
    }
    return out;
  };
  for (const std::string& x : kinds)
    for (const std::string& y : kinds) {
      if (x.size() <= y.size() || signature_tokens(y) < 2) continue;
      // y's units in order within x's, the rest of x a few units more with weights among them
      // (the projection shortcut, with the pooling before it, computed anywhere in the block;
      // a strided block's depthwise Conv-BN and its shortcut's two: GhostNet's).
      // A weight op between transposes is no shortcut: it computes on the tokens laid out as
      // a map (a MetaFormer token mixer's depthwise conv between its two Linears).
      const std::vector<std::string_view> big = tokens(x), small = tokens(y);
      size_t extra = 0, at = 0;
      bool shortcut = false;
      for (size_t i = 0; i < big.size(); ++i) {
        if (at < small.size() && big[i] == small[at]) {
          ++at;
          continue;
        }
        ++extra;
        const bool on_map = i > 0 && i + 1 < big.size() && big[i - 1] == "T;" && big[i + 1] == "T;";
        shortcut |= (big[i] == "conv," || big[i] == "linear,") && !on_map;
      }
      if (at < small.size() || extra > 6) continue;
      if (shortcut) return true;
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
  // after it: a U-Net's, between its blocks). The last block alone is no such repeat: the
  // model's tail after its layers may read as their last half (MAE's decoder head, a
  // LayerNorm and an MLP, closed by the add of the target's normalisation).
  std::set<std::string> refused, joined;
  for (size_t k = 0; k < sig.size(); ++k) {
    if (k > 0 && k + 1 < sig.size() && sig[k] == sig[k - 1] && !attention(sig[k])) refused.insert(sig[k]);
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

namespace {

bool one_unit_and_views(const std::vector<Element>& els, Span block) {
  size_t units = 0;
  for (size_t j = block.first; j < block.second; ++j) {
    if (!els[j].unit && els[j].role != Role::Shape) return false;
    units += els[j].unit;
  }
  return units <= 1;
}

}  // namespace

Stack stack_layers(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig) {
  // Layers made of sublayers: kinds of blocks that follow one another in a fixed order (a
  // transformer's attention then MLP, a decoder's self-attention, cross-attention then MLP,
  // a mixer's token then channel mixing), repeated back to back.
  std::vector<uint8_t> after(blocks.size(), 0);
  for (size_t k = 1; k < blocks.size(); ++k) {
    after[k] = blocks[k - 1].second <= blocks[k].first;
    for (size_t j = blocks[k - 1].second; j < blocks[k].first; ++j) after[k] &= !els[j].unit;
  }
  // Sublayers pair by what they compute: a windowed attention's half (the partition's
  // permutes around it) is of a kind with a global one (SAM's blocks alternate them).
  std::vector<std::string> work(sig.size());
  for (size_t k = 0; k < sig.size(); ++k) work[k] = without_transposes(sig[k]);
  std::vector<std::vector<std::string>> tuples = layer_tuples(blocks, after, work);
  Stack out;
  auto& [layers, tupled, kinds] = out;
  std::map<std::string, int> count;
  for (auto& s : sig) ++count[s];
  auto in_tuple = [&](size_t k) {
    return std::any_of(tuples.begin(), tuples.end(), [&](auto& t) { return std::find(t.begin(), t.end(), work[k]) != t.end(); });
  };
  for (size_t k = 0; k < blocks.size(); ++k) {
    size_t matched = 0;
    std::string kind;
    auto tuple_kind = [](const std::vector<std::string>& t) {
      std::string all;
      for (const std::string& x : t) all += x + "|";
      return all;
    };
    for (const auto& t : tuples)  // the longest first
      if (matched == 0 && tuple_at(after, work, k, t)) matched = t.size(), kind = tuple_kind(t);
    // A layer of the stack whose later blocks differ from its peers' (a layer doing extra
    // work) is still one layer: it starts like them and ends where the next one starts, at
    // most one block later than they would.
    for (const auto& t : tuples) {
      if (matched || work[k] != t[0]) continue;
      for (size_t m = k + t.size(); m <= std::min(blocks.size(), k + t.size() + 1) && !matched; ++m) {
        bool joined = true;
        for (size_t i = k + 1; i < m; ++i) joined &= after[i] != 0;
        if (!joined) break;
        bool next = false;
        for (const auto& u : tuples) next |= tuple_at(after, work, m, u);
        if (next) matched = m - k, kind = tuple_kind(t);
      }
    }
    // The stack's last layer, its last block running on into the head (WaveNet's last skip
    // conv, then the model's relu on the sum): that block is its kind, to the next unit.
    for (const auto& t : tuples) {
      const size_t last = k + t.size() - 1;
      if (matched || last >= blocks.size() || !after[last] || work[last] == t.back() || !work[last].starts_with(t.back()) ||
          !tuple_at(after, work, k, std::vector<std::string>(t.begin(), t.end() - 1)))
        continue;
      size_t end = end_of_signature(els, blocks[last].first, blocks[last].second, t.back());
      if (end == SIZE_MAX) continue;
      while (end < blocks[last].second && !els[end].unit) ++end;
      blocks[last].second = end;
      sig[last] = signature(els, blocks[last].first, end);
      work[last] = t.back();
      matched = t.size(), kind = tuple_kind(t);
    }
    if (matched) {
      // The tuple's kinds pair wherever they follow one another (each stage of a
      // hierarchical transformer)...
      layers.push_back({blocks[k].first, blocks[k + matched - 1].second});
      tupled.push_back({k, k + matched});
      kinds.push_back(kind);
      k += matched - 1;
    } else if (!in_tuple(k) && (count[sig[k]] >= 2 || has_variant(count, sig[k])) && !one_unit_and_views(els, blocks[k])) {
      // ...and a block of another kind that recurs (a patch merging between stages, a
      // residual block) is a module; a lone one is not told from the stem or head, and one
      // unit alone, reshapes around it or not (a pooling between stages; a stage's norm and
      // its tokens laid out as a map), is already its layer.
      layers.push_back(blocks[k]);
      kinds.push_back(sig[k]);
    }
  }
  return out;
}

// Cross-stage partial modules (YOLO's C2f, CSPNet's): a conv (its norm and activation) whose
// output is split, blocks run on one part, all concatenated and fused by a conv; or (YOLOv5's
// C3) blocks run on a conv's output, concatenated with a second conv of the input and fused.
// Their spans, from the first conv to the last, around whole blocks; the layers that took
// their convs (a run of convs between two of them seen as a block) give them back, and one
// left with a conv group alone is no layer.
std::vector<Span> cross_stage_partials(const std::vector<Element>& els, std::vector<Span>& layers, std::vector<std::string>& kinds) {
  auto is = [&](size_t j, Role r) { return j < els.size() && els[j].unit && els[j].role == r; };
  auto conv = [&](size_t j) { return is(j, Role::Weight) && els[j].kind == "conv"; };
  auto group_start = [&](size_t end) {  // back over a conv, its norm and activation ending at `end`, or SIZE_MAX
    size_t at = end;
    if (at > 0 && is(at - 1, Role::Activation)) --at;
    if (at > 0 && is(at - 1, Role::Norm)) --at;
    return at > 0 && conv(at - 1) ? at - 1 : SIZE_MAX;
  };
  auto group_end = [&](size_t at) {  // past a conv, its norm and activation at `at`, or SIZE_MAX
    if (!conv(at)) return SIZE_MAX;
    ++at;
    if (is(at, Role::Norm)) ++at;
    if (is(at, Role::Activation)) ++at;
    return at;
  };
  auto is_merge = [&](size_t j) { return !els[j].unit && els[j].role == Role::Merge; };
  std::vector<Span> out;
  for (size_t i = 1; i < els.size(); ++i) {
    // Where its blocks run: after the split of its first conv's output (C2f), or from its first
    // conv's output to a second conv of its input that the concatenation takes (C3).
    size_t start = SIZE_MAX, from = SIZE_MAX, merge = SIZE_MAX;
    if (!els[i].unit && is_split(els[i].op)) {
      start = group_start(i), from = i, merge = i + 1;
      while (merge < els.size() && (els[merge].unit || (els[merge].role != Role::Merge && !is_split(els[merge].op)))) ++merge;
      if (merge == els.size() || !is_merge(merge)) continue;
    } else if (is_merge(i)) {
      const size_t second = group_start(i);
      auto block = std::find_if(layers.begin(), layers.end(), [&](Span l) { return l.second == second; });
      if (second == SIZE_MAX || block == layers.end()) continue;
      while (block != layers.begin() && (block - 1)->second == block->first && kinds[size_t(block - 1 - layers.begin())] == kinds[size_t(block - layers.begin())])
        --block;
      start = group_start(block->first), from = block->first, merge = i;
    } else {
      continue;
    }
    const size_t end = group_end(merge + 1);
    if (start == SIZE_MAX || end == SIZE_MAX) continue;
    size_t inside = 0;
    bool cut = false;
    for (auto [f, t] : layers) {  // (a block opened at the split: the split is the module's)
      inside += f >= from && t <= merge && t - f > 0 && group_end(f) != t;
      cut |= f <= merge && t > from && !(f >= from && t <= merge);
    }
    if (inside == 0 || cut) continue;
    for (auto& [f, t] : layers) {
      if (f < start && t > start) t = start;
      if (f < end && t > end) f = end;
      if (f == from && is_split(els[from].op)) ++f;
    }
    out.push_back({start, end});
    i = end - 1;
  }
  if (out.empty()) return out;
  // Layers now of one conv group or none (what the modules took).
  size_t kept = 0;
  for (size_t k = 0; k < layers.size(); ++k) {
    auto [f, t] = layers[k];
    size_t weights = 0;
    for (size_t j = f; j < t; ++j) weights += is(j, Role::Weight);
    if (weights < 2) continue;
    layers[kept] = layers[k];
    kinds[kept] = kinds[k];
    ++kept;
  }
  layers.resize(kept);
  kinds.resize(kept);
  return out;
}

// The Linear-activation runs in [from, to), outside every layer where `in_layer` marks the
// layers, kept where the same run of ops recurs.
static std::vector<Span> mlp_runs(const std::vector<Element>& els, const std::vector<uint8_t>& in_layer, size_t from, size_t to) {
  auto part = [&](size_t j) {
    const Element& e = els[j];
    return j < to && (in_layer.empty() || !in_layer[j]) && e.unit &&
           ((e.role == Role::Weight && e.kind == "linear") || e.role == Role::Activation || e.role == Role::Dropout);
  };
  std::vector<Span> runs;
  std::map<std::string, int> count;
  for (size_t j = from; j < to;) {
    if (!part(j) || els[j].role != Role::Weight) {
      ++j;
      continue;
    }
    // Up to a Linear right after a Linear (no activation between: another module's).
    size_t end = j + 1, linears = 1;
    bool activation = false;
    for (; end < els.size() && part(end) && !(els[end].role == Role::Weight && els[end - 1].role == Role::Weight); ++end) {
      linears += els[end].role == Role::Weight;
      activation |= els[end].role == Role::Activation;
    }
    while (end > j && els[end - 1].role != Role::Weight) --end;  // it ends at its last linear
    // A last Linear whose input the Linear right after it takes too (the backward's gradient
    // sum shows it: heads on one input, a VAE's mean and log-variance) is a head beside that
    // one, no layer of the run.
    if (end > j + 1 && end < els.size() && els[end - 1].shares_input && els[end].unit && els[end].kind == "linear") {
      --end, --linears;
      while (end > j && els[end - 1].role != Role::Weight) --end;
    }
    if (linears >= 2 && activation) {
      runs.push_back({j, end});
      ++count[op_sequence(els, j, end)];  // by op, an activation's too
    }
    j = std::max(end, j + 1);
  }
  std::vector<Span> out;
  for (auto [f, t] : runs)
    if (count[op_sequence(els, f, t)] >= 2) out.push_back({f, t});
  return out;
}

std::vector<Span> repeated_mlps(const std::vector<Element>& els, const std::vector<Span>& layers) {
  std::vector<uint8_t> in_layer(els.size(), 0);
  for (auto [f, t] : layers)
    for (size_t j = f; j < t; ++j) in_layer[j] = 1;
  return mlp_runs(els, in_layer, 0, els.size());
}

std::vector<Span> repeated_mlps_in_layer(const std::vector<Element>& els, Span layer) {
  std::vector<Span> runs = mlp_runs(els, {}, layer.first, layer.second);
  // Apart from each other, each holds the activation and dropout after its last Linear.
  for (auto& [f, t] : runs)
    while (t < layer.second && els[t].unit && (els[t].role == Role::Activation || els[t].role == Role::Dropout)) ++t;
  return runs;
}

void last_block_without_sum(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig) {
  if (blocks.empty()) return;
  // Recurring kinds that have a block summing nothing back (a stack's first, changing the width).
  std::map<std::string, int> count;
  std::set<std::string> without_sum;
  for (size_t k = 0; k < blocks.size(); ++k) {
    ++count[sig[k]];
    if (!sums_back(els, blocks[k].first, blocks[k].second)) without_sum.insert(sig[k]);
  }
  const size_t from = blocks.back().second;
  std::string kind;
  size_t end = 0;
  for (const auto& [k, n] : count) {  // the longest recurring kind that runs next
    if (n < 2 || !without_sum.contains(k) || signature_units(k) < 2 || k.size() <= kind.size()) continue;
    const size_t e = end_of_signature(els, from, els.size(), k);
    if (e == SIZE_MAX || sums_back(els, from, e) || std::none_of(els.begin() + long(e), els.end(), [](const Element& x) { return x.unit; })) continue;
    // An activation right after it would take its last norm: the run would end inside a step.
    const size_t next = past_views(els, e, els.size());
    if (next < els.size() && els[next].unit && els[next].role == Role::Activation) continue;
    kind = k, end = e;
  }
  if (kind.empty()) return;
  blocks.push_back({from, end});
  sig.push_back(kind);
}

}  // namespace strata::annot::infer
