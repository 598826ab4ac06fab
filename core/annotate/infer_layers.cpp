// Layers inferred from the forward's op sequence when the trace has no module frames and no
// ranges around the ops, by what PyTorch's modules are:
//   units   the leaf modules: a weight op (conv, linear, embedding, an RNN over all its steps),
//           a norm (BatchNorm with the counter it bumps first), an activation, a pooling, a
//           dropout (a random mask applied by a product too: stochastic depth), a resampling;
//           attention as one unit from its in-projection through the scores, softmax and
//           weighted sum to its out-projection (separate q/k/v projections are child units of
//           it, a packed one is part of it);
//   groups  a weight op with the norm and in-place activation that follow it (ConvNormActivation);
//   blocks  what a residual connection closes: the ops from where the block's input was made
//           to the add that joins it back (with the activation or, post-norm, the norm that
//           follows the add), and inside it the residual function when that is units only;
//           blocks of one kind that alternate with another (attention, MLP) pair into a layer
//           wherever they follow each other, and, where attention is written by hand or
//           absent, what each pre-norm half adds after its norm is the module it calls (an
//           MLP; an attention with its output dropout);
//           a run of blocks from one that changes the shape (a projection shortcut) to the
//           next is a stage;
//   model   the whole forward: the root module that holds the rest.
// Ops that are none of those (views, residual adds, concatenations, scores outside attention)
// stay loose in the innermost block around them, as they are in the module that calls them.
#include "core/annotate/infer_units.h"

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

  std::vector<Element> units(const std::vector<NodeId>& ops) { return leaf_units(c, b, ops); }

  // A signature of what a run of elements is, for repetition: its units' kinds in order.
  // Transposes count: they tell a token-mixing half from a channel-mixing one. Dropouts do
  // not: one with p = 0 (a first block's stochastic depth) runs no op.
  static std::string signature(const std::vector<Element>& els, size_t from, size_t to) {
    std::string s;
    for (size_t j = from; j < to; ++j) add_to_signature(s, els[j]);
    return s;
  }
  static void add_to_signature(std::string& s, const Element& e) {
    if (e.unit && e.role == Role::Dropout) return;
    if (e.unit) s.append(e.kind).push_back(',');
    else if (e.op == "aten::transpose" || e.op == "aten::permute") s += "T;";
  }

  // Blocks: [from, to) spans of elements, each where branches join: closed by an add that joins
  // a branch holding a weight op back to its input, or by a concatenation of branches holding
  // weight ops (an Inception or Fire module); a concatenation that a norm follows opens the
  // block instead (DenseNet's layers concatenate the features before them).
  // Post-norm (the norm right after the add closes the block) unless the first residual
  // branch starts with a norm (pre-norm: that norm opens the next block); without attention,
  // pre-norm where the residual adds follow weight ops (pre-activation).
  static bool pre_norm_model(const std::vector<Element>& els) {
    for (size_t j = 1; j < els.size(); ++j)
      if (els[j].unit && els[j].kind == "attention") {
        size_t k = j;
        while (k > 0 && !els[k - 1].unit) --k;  // the unit before it, past views and the like
        return k > 0 && els[k - 1].role == Role::Norm;
      }
    return normalises_first(els);
  }

  std::vector<std::pair<size_t, size_t>> residual_blocks(const std::vector<Element>& els) {
    const bool pre_norm = pre_norm_model(els);
    std::vector<std::pair<size_t, size_t>> out;
    size_t start = 0, weights = 0;
    for (size_t j = 0; j < els.size(); ++j) {
      // Lookups take ids, not a tensor a branch could be added back to: embeddings summed
      // (tokens and positions) are no residual block.
      if (els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding") ++weights;
      if (els[j].unit || weights == 0) continue;
      const bool merge = els[j].role == Role::Merge, add = els[j].role == Role::Add;
      if (!add && !merge) continue;
      // Reshapes after the join are the block's; a split opens the next block's branches.
      size_t next = j + 1;
      while (next < els.size() && !els[next].unit && els[next].role == Role::Shape && !is_split(els[next].op)) ++next;
      // A vector broadcast over the map and added (a diffusion ResBlock's time embedding,
      // emb[:, :, None, None]): only reshapes adding dimensions lead to it from the unit before,
      // and it conditions the branch rather than joining it back to its input.
      if (add) {
        size_t k = j;
        bool grows = false;
        while (k > 0 && !els[k - 1].unit && els[k - 1].role == Role::Shape) grows |= els[--k].op == "aten::unsqueeze";
        if (grows && k > 0 && els[k - 1].unit) continue;
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
      size_t end = j + 1;
      if (merge) end = next;  // the branches' join is reshaped in the block (ShuffleNet's channel shuffle)
      else if (end < els.size() && els[end].unit && (els[end].role == Role::Activation || (els[end].role == Role::Norm && !pre_norm)))
        ++end;
      else if (end + 1 < els.size() && els[end].unit && els[end].role == Role::Norm && els[end + 1].unit && els[end + 1].role == Role::Norm)
        ++end;  // two norms back to back: the first ends the layer (a Conformer block's final norm)
      out.push_back({start, end});
      start = end;
      weights = 0;
      j = end - 1;
    }
    if (pre_norm) open_at_norms(els, out);
    return out;
  }

  // Pre-norm blocks open with their norm: a weight op or a resampling before a block's first
  // norm (a downsampling conv, an upsampling between a UNet's blocks) is between blocks where
  // without it the block is one of a kind that opens with its norm (or a variant of one);
  // otherwise it is the block's own (ConvNeXt's depthwise conv). A norm that ends the block
  // before, nothing between, is then the next one's.
  static void open_at_norms(const std::vector<Element>& els, std::vector<std::pair<size_t, size_t>>& blocks) {
    auto first_unit = [&](size_t from, size_t to) {
      while (from < to && !els[from].unit) ++from;
      return from;
    };
    std::set<std::string> opening;  // kinds that open with a norm
    for (size_t k = 1; k < blocks.size(); ++k) {
      const size_t u = first_unit(blocks[k].first, blocks[k].second);
      if (u < blocks[k].second && els[u].role == Role::Norm) opening.insert(signature(els, blocks[k].first, blocks[k].second));
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
        f = norm;
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

  // Message passing (a GNN's layers): each layer sums its messages into the nodes with a
  // scatter (index_add_, scatter_add_, a sparse product); where the forward's scatters repeat
  // in a fixed pattern, each repetition is a layer. A layer starts at its first gather (and the
  // buffer it sums into), or at the weight ops right before that gather when it transforms
  // first (GCN, GAT); it ends where the next one starts, less a dropout its
  // caller applies between layers; the last is as long as the one before. Sums inside a layer
  // (a self term, (1 + eps) x) are its own, not residual joins.
  std::vector<std::pair<size_t, size_t>> message_passing_layers(const std::vector<Element>& els) {
    auto scatter = [&](size_t j) {
      std::string_view n = strip_prefix(els[j].op, "aten::");
      return !els[j].unit && (n.starts_with("index_add") || n.starts_with("scatter_add") || n.starts_with("scatter_reduce") ||
                              n == "_sparse_mm" || n == "spmm" || n == "sparse_mm" || n == "_sparse_addmm");
    };
    // A router's top-k scatters tokens back from experts, not messages along edges.
    if (std::any_of(els.begin(), els.end(), [](const Element& e) { return !e.unit && e.op == "aten::topk"; })) return {};
    std::vector<size_t> at;
    for (size_t j = 0; j < els.size(); ++j)
      if (scatter(j)) at.push_back(j);
    size_t period = 0;
    for (size_t p = 1; p <= at.size() / 2 && period == 0; ++p) {
      if (at.size() % p) continue;
      bool same = true;
      for (size_t i = p; i < at.size() && same; ++i) same = els[at[i]].op == els[at[i - p]].op;
      if (same) period = p;
    }
    if (period == 0) return {};
    auto gather = [&](size_t j) {
      return !els[j].unit && (els[j].op == "aten::index" || els[j].op == "aten::index_select" || els[j].op == "aten::gather");
    };
    auto transform = [&](size_t j) { return els[j].unit && els[j].role == Role::Weight && els[j].kind != "embedding"; };
    std::vector<size_t> starts;
    for (size_t k = 0; k < at.size(); k += period) {
      // From its first gather since the layer before (what runs between it and the scatter, an
      // attention's scores too, is the layer's), back over the loose ops before it, then over
      // the weight ops (and their views) whose output it gathers.
      const size_t floor = k == 0 ? 0 : at[k - 1] + 1;
      size_t st = at[k];
      for (size_t j = at[k]; j > floor; --j)
        if (gather(j - 1)) st = j - 1;
      while (st > floor && !els[st - 1].unit) --st;
      for (size_t j = st; j > floor && (transform(j - 1) || (!els[j - 1].unit && els[j - 1].role == Role::Shape)); --j)
        if (transform(j - 1)) st = j - 1;
      starts.push_back(st);
    }
    for (size_t k = 1; k < starts.size(); ++k)
      if (starts[k] <= starts[k - 1]) return {};
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t end = k + 1 < starts.size() ? starts[k + 1] : els.size();
      if (k + 1 == starts.size()) {  // the last: through the units the one before has
        const std::string before = signature(els, out.back().first, out.back().second);
        std::string sig;
        size_t e = starts[k];
        while (e < els.size() && sig != before && sig.size() <= before.size()) add_to_signature(sig, els[e++]);
        end = sig == before ? e : std::min(els.size(), starts[k] + (out.back().second - out.back().first));
      }
      while (end > starts[k] + 1 && els[end - 1].unit && els[end - 1].role == Role::Dropout) --end;
      // A layer has weights: scatters without any between them are one computation's parts.
      if (std::none_of(els.begin() + long(starts[k]), els.begin() + long(end), [](const Element& e) { return e.unit && e.role == Role::Weight; }))
        return {};
      out.push_back({starts[k], end});
    }
    return out;
  }

  // A block that ends like another block (of two units or more, or of one unit recurring: DCN's cross layers) holds what came before that
  // one (the stem: ResNet's conv, norm and pooling before its first residual block, a
  // transformer's embeddings before its first layer; ConvNeXt's downsampling before each
  // stage's first block): only its end is the block.
  static void split_stem(const std::vector<Element>& els, std::vector<std::pair<size_t, size_t>>& blocks, std::vector<std::string>& sig) {
    std::map<std::string, int> count;
    for (auto& s : sig) ++count[s];
    // Kinds whose blocks take half of their input by a split (ShuffleNet's chunk): one can only
    // begin at a split.
    std::set<std::string> opens_split;
    for (size_t k = 0; k < blocks.size(); ++k)
      if (blocks[k].first < blocks[k].second && is_split(els[blocks[k].first].op)) opens_split.insert(sig[k]);
    auto transpose = [&](const Element& e) { return !e.unit && (e.op == "aten::transpose" || e.op == "aten::permute"); };
    for (size_t k = 0; k < blocks.size(); ++k) {
      // The longest kind it ends like: a stage's first, downsampling block (two branches)
      // rather than the plain blocks after it, which end like both.
      std::vector<std::string> candidates;
      for (auto& [other, n] : count) {
        const char before = sig[k].size() > other.size() ? sig[k][sig[k].size() - other.size() - 1] : 0;
        if ((std::count(other.begin(), other.end(), ',') >= 2 || n >= 2) && sig[k].ends_with(other) && (before == ',' || before == ';'))
          candidates.push_back(other);
      }
      std::sort(candidates.begin(), candidates.end(), [](auto& x, auto& y) { return x.size() > y.size(); });
      for (const std::string& other : candidates) {
        // Back over exactly the other's units and transposes, then the loose ops before them (a
        // message passing's gather, the embeddings' sum); a transpose there is the stem's (a
        // LayerNorm2d's permute back): the other block does not start with it.
        size_t tokens = size_t(std::count(other.begin(), other.end(), ',') + std::count(other.begin(), other.end(), ';'));
        size_t at = blocks[k].second;
        while (tokens > 0 && at > blocks[k].first) {
          const Element& e = els[--at];
          tokens -= (e.unit && e.role != Role::Dropout) || transpose(e);
        }
        while (at > blocks[k].first && !els[at - 1].unit && !transpose(els[at - 1])) --at;
        if (opens_split.contains(other) && !is_split(els[at].op)) continue;  // its branch is one of this block's
        if (at == blocks[k].first) continue;  // no stem before it
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
  static void trim_dropouts(const std::vector<Element>& els, std::vector<std::pair<size_t, size_t>>& blocks,
                            const std::vector<std::string>& sig) {
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
  static void trim_loose_leads(const std::vector<Element>& els, std::vector<std::pair<size_t, size_t>>& blocks,
                               const std::vector<std::string>& sig) {
    auto loose = [&](const Element& e) { return !e.unit && e.op != "aten::transpose" && e.op != "aten::permute"; };
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
    // Only the first of its kind: a repeat's own ops (a shifted window's roll) are its.
    for (auto& [name, kd] : kinds)
      if (kd.least == 0 && blocks[kd.first].first + leads[kd.first] < blocks[kd.first].second) blocks[kd.first].first += leads[kd.first];
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

  std::string readable(const Element& e) const { return readable_unit(e.kind, e.op); }

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

  // Nodes for the units under `parent`; loose ops stay there.
  void place_units(std::vector<Element>& els, NodeId parent) {
    for (Element& e : els) {
      if (!e.unit) {
        for (NodeId op : e.ops) b.parent[op] = parent;
        e.node = e.ops.front();
        continue;
      }
      if (!e.inner.empty() && !e.one_module) {
        e.node = b.add(NodeKind::Layer, numbered(readable(e)), parent, b.phase[e.ops.front()], b.begin[e.ops.front()],
                       b.end[e.ops.front()]);
        place_units(e.inner, e.node);
        for (NodeId op : e.ops) b.widen(e.node, b.begin[op], b.end[op]);
        continue;
      }
      e.node = make(numbered(readable(e)), parent, e.ops);
    }
  }

  // What a block is, in words: "Residual block 3: 2 Conv + 2 BatchNorm + ReLU", "Encoder layer 2:
  // attention + MLP".
  std::string block_name(const std::vector<Element>& els, size_t from, size_t to) {
    bool attn = false, mlp = false;
    std::vector<std::pair<std::string, uint32_t>> seen;
    for (size_t j = from; j < to; ++j) {
      if (!els[j].unit) continue;
      attn |= els[j].kind == "attention";
      mlp |= els[j].kind == "linear";
      std::string r = readable(els[j]);
      auto it = std::find_if(seen.begin(), seen.end(), [&](auto& x) { return x.first == r; });
      if (it == seen.end()) seen.push_back({r, 1});
      else ++it->second;
    }
    if (attn && mlp) return numbered("Layer") + ": attention + MLP";
    std::string name = numbered("Block") + ":";
    for (size_t k = 0; k < seen.size(); ++k)
      name += (k ? " + " : " ") + (seen[k].second > 1 ? std::to_string(seen[k].second) + " " : std::string()) + seen[k].first;
    return name;
  }

  // Whether blocks k, k + 1, ... are of the tuple's kinds in its order, each after the last
  // with no unit between them (`after[k]`: block k follows block k - 1 so).
  static bool tuple_at(const std::vector<uint8_t>& after, const std::vector<std::string>& sig, size_t k,
                       const std::vector<std::string>& tuple) {
    if (k + tuple.size() > sig.size()) return false;
    for (size_t i = 0; i < tuple.size(); ++i)
      if (sig[k + i] != tuple[i] || (i > 0 && !after[k + i])) return false;
    return true;
  }

  // Whether one kind is a variant of another: it holds the other whole but for one unit (a
  // projection on the shortcut where the channels change).
  static bool variant_of(const std::string& x, const std::string& y) {
    if (x.empty() || y.empty() || x == y) return false;
    const std::string& big = x.size() > y.size() ? x : y;
    const std::string& small = x.size() > y.size() ? y : x;
    const auto units = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    return units(big) == units(small) + 1 && units(small) >= 2 && big.find(small) != std::string::npos;
  }
  // Whether some other kind among `kinds` (distinct) is a variant of `kind`; not looked for
  // among very many kinds, where it would cost their square.
  static bool has_variant(const std::map<std::string, int>& kinds, const std::string& kind) {
    if (kinds.size() > 256) return false;
    return std::any_of(kinds.begin(), kinds.end(), [&](auto& other) { return variant_of(other.first, kind); });
  }

  // Kinds of which one holds another whole (a downsampling block: a plain one plus a pooling
  // and a projection) are variants of one kind of block, not sublayers doing different work.
  static bool variants(const std::vector<std::string>& kinds) {
    for (const std::string& x : kinds)
      for (const std::string& y : kinds) {
        const size_t at = x.size() > y.size() ? x.find(y) : std::string::npos;
        if (at == std::string::npos) continue;
        const std::string extra = x.substr(0, at) + x.substr(at + y.size());
        if (extra.find("conv,") != std::string::npos || extra.find("linear,") != std::string::npos) return true;
      }
    return false;
  }

  // The kinds of layer made of two to four kinds of blocks: the longest run of one such tuple
  // repeated back to back (at least twice), then the longest among the blocks left, and so
  // on. None where blocks of one kind without attention follow one another: each of those is
  // a module (a ResNet's).
  static std::vector<std::vector<std::string>> layer_tuples(const std::vector<uint8_t>& after, const std::vector<std::string>& sig) {
    auto attention = [](const std::string& s) { return s.find("attention") != std::string::npos; };
    std::vector<std::vector<std::string>> tuples;
    for (size_t k = 1; k < sig.size(); ++k)
      if (sig[k] == sig[k - 1] && !attention(sig[k])) return tuples;
    std::vector<uint8_t> taken(sig.size(), 0);
    // A few kinds of layer at most (an encoder's, a decoder's); each scan passes over a run it
    // measured, so a long stack costs its length, not its square.
    for (int kinds = 0; kinds < 4; ++kinds) {
      size_t best_k = 0, best_p = 0, best_cover = 0;
      for (size_t p = 2; p <= 4; ++p)  // up to a Conformer's four halves
        for (size_t k = 0; k + 2 * p <= sig.size();) {
          std::vector<std::string> t(sig.begin() + long(k), sig.begin() + long(k + p));
          size_t reps = 0;
          if (!std::all_of(t.begin(), t.end(), [&](auto& x) { return x == t[0]; }) && !variants(t))  // one kind: no tuple
            while (tuple_at(after, sig, k + reps * p, t) && (reps == 0 || after[k + reps * p]) &&
                   std::none_of(taken.begin() + long(k + reps * p), taken.begin() + long(k + reps * p + p), [](uint8_t x) { return x; }))
              ++reps;
          if (reps >= 2 && reps * p > best_cover) best_k = k, best_p = p, best_cover = reps * p;
          k += reps >= 2 ? reps * p : 1;
        }
      if (best_cover == 0) break;
      std::vector<std::string> t(sig.begin() + long(best_k), sig.begin() + long(best_k + best_p));
      for (size_t i = best_k; i < best_k + best_cover; ++i) taken[i] = 1;
      // A layer starts with its attention, unless one kind alone ends with a norm (a
      // Conformer's second feed-forward and the layer's final norm): that one ends the layer.
      auto ends_normed = [](const std::string& k) { return k.ends_with("layer_norm,") || k.ends_with("rms_norm,"); };
      const auto normed = std::find_if(t.begin(), t.end(), ends_normed);
      if (normed != t.end() && std::count_if(t.begin(), t.end(), ends_normed) == 1) std::rotate(t.begin(), normed + 1, t.end());
      else if (const auto a = std::find_if(t.begin(), t.end(), attention); a != t.end()) std::rotate(t.begin(), a, t.end());
      tuples.push_back(std::move(t));
    }
    std::stable_sort(tuples.begin(), tuples.end(), [](auto& x, auto& y) { return x.size() > y.size(); });
    return tuples;
  }

  // A post-norm layer written by hand (BERT's: separate query, key and value modules) ends
  // each half with an output module: the projection, its dropout, the add and the norm (HF's
  // SelfOutput and Output), so the attention ends at its weighted sum. nn.MultiheadAttention
  // (one packed in-projection) keeps its out-projection.
  static bool output_modules(const std::vector<Element>& els) {
    return !pre_norm_model(els) && std::any_of(els.begin(), els.end(), [](const Element& e) {
      if (!e.unit || e.kind != "attention" || e.one_module) return false;
      size_t projections = 0;
      for (const Element& in : e.inner) {
        if (in.role == Role::Score) break;
        projections += in.unit && in.role == Role::Weight;
      }
      return projections >= 3;
    });
  }
  static void split_output_projections(std::vector<Element>& els) {
    for (size_t j = 0; j < els.size(); ++j) {
      Element& a = els[j];
      if (!a.unit || a.kind != "attention" || a.inner.empty()) continue;
      size_t w = a.inner.size();
      while (w > 0 && a.inner[w - 1].role == Role::Shape && !a.inner[w - 1].unit) --w;
      if (w == 0 || !a.inner[w - 1].unit || a.inner[w - 1].role != Role::Weight) continue;
      --w;
      size_t k = j + 1;
      if (k < els.size() && els[k].unit && els[k].role == Role::Dropout) ++k;
      if (!(k + 1 < els.size() && !els[k].unit && els[k].role == Role::Add && els[k + 1].unit && els[k + 1].role == Role::Norm)) continue;
      std::vector<Element> tail(std::make_move_iterator(a.inner.begin() + long(w)), std::make_move_iterator(a.inner.end()));
      a.inner.erase(a.inner.begin() + long(w), a.inner.end());
      size_t moved = 0;
      for (const Element& e : tail) moved += e.ops.size();
      a.ops.resize(a.ops.size() - moved);
      els.insert(els.begin() + long(j + 1), std::make_move_iterator(tail.begin()), std::make_move_iterator(tail.end()));
    }
  }
  void output_module(const std::vector<Element>& els, size_t f, size_t t) {
    for (size_t j = f; j + 2 < t; ++j) {
      if (!els[j].unit || els[j].role != Role::Weight) continue;
      size_t k = j + 1;
      if (els[k].unit && els[k].role == Role::Dropout) ++k;
      if (k + 1 >= t || els[k].unit || els[k].role != Role::Add || !els[k + 1].unit || els[k + 1].role != Role::Norm) continue;
      std::vector<NodeId> kids;
      for (size_t i = j; i <= k + 1; ++i) kids.push_back(els[i].node);
      make(numbered("Output") + ": " + readable(els[j]) + " + " + readable(els[k + 1]), b.parent[kids.front()], kids);
      j = k + 1;
    }
  }

  void run(NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
    std::vector<Element> els = units(ops);
    const bool outputs = output_modules(els);
    if (outputs) split_output_projections(els);
    if (model_root && ops.size() >= 2) parent = make("Model", parent, ops);
    place_units(els, parent);
    std::vector<std::pair<size_t, size_t>> blocks = message_passing_layers(els);
    if (blocks.empty()) blocks = residual_blocks(els);
    std::vector<std::string> sig;
    for (auto [f, t] : blocks) sig.push_back(signature(els, f, t));
    split_stem(els, blocks, sig);
    trim_dropouts(els, blocks, sig);
    trim_loose_leads(els, blocks, sig);
    // Layers made of sublayers: kinds of blocks that follow one another in a fixed order (a
    // transformer's attention then MLP, a decoder's self-attention, cross-attention then MLP,
    // a mixer's token then channel mixing), repeated back to back.
    std::vector<uint8_t> after(blocks.size(), 0);
    for (size_t k = 1; k < blocks.size(); ++k) {
      after[k] = blocks[k - 1].second <= blocks[k].first;
      for (size_t j = blocks[k - 1].second; j < blocks[k].first; ++j) after[k] &= !els[j].unit;
    }
    std::vector<std::vector<std::string>> tuples = layer_tuples(after, sig);
    std::vector<std::pair<size_t, size_t>> layers;
    std::vector<std::pair<size_t, size_t>> tupled;  // layers made of sublayers: their blocks [from, to)
    std::vector<std::string> kinds;                 // per layer: its kind (a tuple's, for a layer doing extra work too)
    std::map<std::string, int> count;
    for (auto& s : sig) ++count[s];
    auto in_tuple = [&](const std::string& s) {
      return std::any_of(tuples.begin(), tuples.end(), [&](auto& t) { return std::find(t.begin(), t.end(), s) != t.end(); });
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
        if (matched == 0 && tuple_at(after, sig, k, t)) matched = t.size(), kind = tuple_kind(t);
      // A layer of the stack whose later blocks differ from its peers' (a layer doing extra
      // work) is still one layer: it starts like them and ends where the next one starts, at
      // most one block later than they would.
      for (const auto& t : tuples) {
        if (matched || sig[k] != t[0]) continue;
        for (size_t m = k + t.size(); m <= std::min(blocks.size(), k + t.size() + 1) && !matched; ++m) {
          bool joined = true;
          for (size_t i = k + 1; i < m; ++i) joined &= after[i] != 0;
          if (!joined) break;
          bool next = false;
          for (const auto& u : tuples) next |= tuple_at(after, sig, m, u);
          if (next) matched = m - k, kind = tuple_kind(t);
        }
      }
      if (matched) {
        // The tuple's kinds pair wherever they follow one another (each stage of a
        // hierarchical transformer)...
        layers.push_back({blocks[k].first, blocks[k + matched - 1].second});
        tupled.push_back({k, k + matched});
        kinds.push_back(kind);
        k += matched - 1;
      } else if (!in_tuple(sig[k]) && (count[sig[k]] >= 2 || has_variant(count, sig[k]))) {
        // ...and a block of another kind that recurs (a patch merging between stages, a
        // residual block) is a module; a lone one is not told from the stem or head.
        layers.push_back(blocks[k]);
        kinds.push_back(sig[k]);
      }
    }
    std::vector<NodeId> block_nodes;
    for (auto [f, t] : layers) {
      std::vector<NodeId> kids;
      for (size_t j = f; j < t; ++j) kids.push_back(els[j].node);
      block_nodes.push_back(make(block_name(els, f, t), parent, kids));
    }
    stages(parent, layers, block_nodes, kinds);
    if (tuples.empty())
      for (auto [f, t] : layers) {
        residual_branch(els, f, t);
        split_branch(els, f, t);
      }
    else {
      // nn.TransformerEncoderLayer computes its feed-forward inline; a routed half is a module
      // whatever the attention.
      const bool inline_halves =
          std::any_of(els.begin(), els.end(), [](const Element& e) { return e.kind == "attention" && e.one_module; });
      for (auto [from, to] : tupled)
        for (size_t k = from; k < to; ++k) sublayer(els, blocks[k].first, blocks[k].second, k > from, inline_halves);
    }
    if (outputs)
      for (auto [from, to] : tupled) output_module(els, blocks[from].first, blocks[to - 1].second);
    weight_norm_groups(els);
  }

  // What a residual block adds to its input, x + F(x): F, from the block's start to the add,
  // without what scales it on the way (a layer scale, a stochastic depth), is a layer of its
  // own (InvertedResidual's conv, MBConv's block, CNBlock's block) when it is made of units
  // and reshapes only.
  void residual_branch(const std::vector<Element>& els, size_t f, size_t t) {
    size_t add = t;
    while (add > f && els[add - 1].unit && (els[add - 1].role == Role::Activation || els[add - 1].role == Role::Norm)) --add;
    if (add == f || els[add - 1].unit || els[add - 1].role != Role::Add) return;
    size_t end = --add;
    while (end > f && ((els[end - 1].unit && els[end - 1].role == Role::Dropout) ||
                       (!els[end - 1].unit && els[end - 1].role != Role::Shape)))
      --end;
    // Ops of the block's own in F (a product, a matmul) say F is computed inline, not a module.
    size_t units = 0;
    for (size_t j = f; j < end; ++j) {
      if (!els[j].unit && els[j].role != Role::Shape) return;
      units += els[j].unit;
    }
    if (units < 2) return;
    std::vector<NodeId> kids;
    for (size_t j = f; j < end; ++j) kids.push_back(els[j].node);
    make(numbered("Residual branch"), b.parent[kids.front()], kids);
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
    std::vector<NodeId> kids;
    size_t units = 0;
    for (size_t j = from + 1; j < end; ++j) {
      kids.push_back(els[j].node);
      units += els[j].unit;
    }
    if (units >= 2) make(numbered("Branch"), b.parent[kids.front()], kids);
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
  void sublayer(const std::vector<Element>& els, size_t f, size_t t, bool shares_norm, bool experts_only) {
    size_t from = f;
    while (from < t && !els[from].unit) ++from;
    if (from == t) return;
    // A BatchNorm first is a pre-activation conv block's, which computes its residual function
    // inline (PreAct ResNet): no sublayer module.
    if (els[from].role == Role::Norm && els[from].kind != "batch_norm") ++from;
    else if (!shares_norm || els[from].role == Role::Norm) return;
    auto loose_shape = [&](size_t j) { return !els[j].unit && els[j].role == Role::Shape; };
    while (from < t && loose_shape(from)) ++from;
    size_t end = t;
    while (end > from && loose_shape(end - 1)) --end;
    if (end == from || els[end - 1].unit || els[end - 1].role != Role::Add) return;
    --end;
    if (mixture_of_experts(els, from, end) || experts_only) return;
    auto random_mask = [&](const Element& e) { return e.unit && e.role == Role::Dropout && e.op.starts_with("aten::bernoulli"); };
    while (end > from && (random_mask(els[end - 1]) || !els[end - 1].unit)) --end;
    size_t units = 0;
    bool attention = false;
    std::vector<NodeId> kids;
    std::string name;
    for (size_t j = from; j < end; ++j) {
      if (!els[j].unit && els[j].role != Role::Shape && !gate_product(els, j, from, end)) return;
      kids.push_back(els[j].node);
      if (!els[j].unit) continue;
      attention |= els[j].kind == "attention";
      name += (units++ ? " + " : "") + readable(els[j]);
    }
    if (units < 2) return;
    // Attention and the dropout after its out-projection: the attention module's own output
    // dropout (resid_dropout, proj_drop), not a module around the two.
    if (attention && units == 2 && els[end - 1].unit && els[end - 1].role == Role::Dropout) {
      const NodeId a = els[from].node, d = els[end - 1].node;
      for (size_t j = from + 1; j < end; ++j) b.parent[els[j].node] = a;
      b.widen(a, b.begin[d], b.end[d]);
      return;
    }
    make(numbered(attention ? "Attention sublayer" : "MLP") + ": " + name, b.parent[kids.front()], kids);
  }

  // A gated MLP (SwiGLU, GeGLU) multiplies its two branches before its down-projection: that
  // product, between a unit and a weight op within [from, end), is the MLP's own.
  static bool gate_product(const std::vector<Element>& els, size_t j, size_t from, size_t end) {
    return !els[j].unit && els[j].op.starts_with("aten::mul") && j > from && els[j - 1].unit && j + 1 < end && els[j + 1].unit &&
           els[j + 1].role == Role::Weight;
  }

  // A half whose ops pick the top-k of a router's scores (aten::topk) routes tokens to experts:
  // from after its norm to the add, reshapes included (it flattens the tokens itself), it is
  // one mixture-of-experts module, and each run of units between its gathers and scatters
  // that recurs (linear, activation, linear) is an expert of it.
  bool mixture_of_experts(const std::vector<Element>& els, size_t from, size_t end) {
    if (std::none_of(els.begin() + long(from), els.begin() + long(end), [](const Element& e) { return !e.unit && e.op == "aten::topk"; }))
      return false;
    while (from > 0 && !els[from - 1].unit && els[from - 1].role == Role::Shape) --from;
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
    // gate that scales it) is that expert and the rest.
    for (size_t r = 0; r < runs.size(); ++r) {
      auto [f, t] = runs[r];
      const std::string sig = signature(els, f, t);
      for (auto& [other, n] : kinds) {
        if (n < 2 || other.size() >= sig.size() || !sig.starts_with(other)) continue;
        size_t cut = f;
        while (cut < t && signature(els, f, cut) != other) ++cut;
        if (cut == t) continue;
        --kinds[sig];
        ++kinds[other];
        runs[r].second = cut;
        break;
      }
    }
    size_t experts = 0;
    for (auto [f, t] : runs) experts += kinds[signature(els, f, t)] >= 2;
    const NodeId moe = make(numbered("MoE") + ": router + " + std::to_string(experts) + " experts", b.parent[kids.front()], kids);
    for (auto [f, t] : runs) {
      if (kinds[signature(els, f, t)] < 2) continue;
      std::vector<NodeId> units;
      for (size_t j = f; j < t; ++j) units.push_back(els[j].node);
      make(numbered("Expert"), moe, units);
    }
    return true;
  }

  // Whether the model normalises before its weight ops (pre-activation, pre-norm) rather than
  // after them: its residual adds follow weight ops more often than norms.
  static bool normalises_first(const std::vector<Element>& els) {
    int after_norm = 0, after_weight = 0;
    for (size_t j = 1; j < els.size(); ++j) {
      if (els[j].unit || els[j].role != Role::Add) continue;
      size_t k = j;
      while (k > 0 && ((!els[k - 1].unit && els[k - 1].role == Role::Shape) || (els[k - 1].unit && els[k - 1].role == Role::Dropout))) --k;
      if (k == 0 || !els[k - 1].unit) continue;
      after_norm += els[k - 1].role == Role::Norm;
      after_weight += els[k - 1].role == Role::Weight;
    }
    return after_weight > after_norm;
  }

  // A weight op whose output a norm takes at once, with the activation that takes the norm's
  // (Conv-BatchNorm-ReLU): the leaf modules a ConvNormActivation or a Sequential wraps as one,
  // a layer of its own inside the block. Convs right before it with nothing between are one
  // factorised conv (a separable conv's depthwise and pointwise halves) the norm follows. Only
  // units under one parent: a group never crosses a block's edge. Not where the model
  // normalises before its weights (pre-activation: its residual adds follow a weight op):
  // there a norm opens the next group rather than closing the one before.
  void weight_norm_groups(std::vector<Element>& els) {
    auto single_weight = [&](size_t j) {
      const Element& w = els[j];
      return w.unit && w.role == Role::Weight && w.inner.empty() && (w.kind == "conv" || w.kind == "linear");
    };
    if (normalises_first(els)) return;
    for (size_t j = 0; j + 1 < els.size(); ++j) {
      if (!single_weight(j)) continue;
      // A LayerNorm after a linear is the next module's pre-norm (a transformer's), not its.
      if (!(els[j + 1].unit && els[j + 1].role == Role::Norm) || (els[j].kind == "linear" && els[j + 1].kind == "layer_norm")) continue;
      size_t from = j, end = j + 2;
      while (from > 0 && single_weight(from - 1) && els[from - 1].kind == els[j].kind && b.parent[els[from - 1].node] == b.parent[els[j].node])
        --from;
      // The activation only when in place: nn.ReLU(inplace=True) is a module of the group, while
      // F.relu(bn(conv(x))) is its caller's own op (a new tensor, as F.relu writes by default).
      if (end < els.size() && els[end].unit && els[end].role == Role::Activation && els[end].op.ends_with("_")) ++end;
      std::vector<NodeId> kids;
      std::string name;
      for (size_t k = from; k < end; ++k) {
        kids.push_back(els[k].node);
        name += (k > from ? " + " : "") + readable(els[k]);
      }
      const NodeId parent = b.parent[kids.front()];
      if (std::all_of(kids.begin(), kids.end(), [&](NodeId k) { return b.parent[k] == parent; }))
        make(numbered(readable(els[j]) + "-Norm") + ": " + name, parent, kids);
      j = end - 1;
    }
  }

  // Consecutive blocks from one that differs from the common kind (it changes the shape: a
  // projection shortcut) up to the next such one are a stage; only when there are several.
  void stages(NodeId parent, const std::vector<std::pair<size_t, size_t>>& layers, const std::vector<NodeId>& nodes,
              const std::vector<std::string>& sig) {
    if (nodes.size() < 4) return;
    std::map<std::string, int> count;
    for (auto& s : sig) ++count[s];
    const std::string common = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
    std::vector<size_t> starts;
    for (size_t k = 0; k < nodes.size(); ++k) {
      bool contiguous = k > 0 && layers[k].first == layers[k - 1].second;
      if (k == 0 || !contiguous || sig[k] != common) starts.push_back(k);
    }
    if (starts.size() < 2 || starts.size() == nodes.size()) return;
    starts.push_back(nodes.size());
    for (size_t s = 0; s + 1 < starts.size(); ++s) {
      if (starts[s + 1] - starts[s] < 2) continue;
      std::vector<NodeId> kids(nodes.begin() + long(starts[s]), nodes.begin() + long(starts[s + 1]));
      make(numbered("Stage"), parent, kids);
    }
  }
};

}  // namespace

std::string readable_unit(std::string_view kind, std::string_view op) {
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"conv", "Conv"}, {"batch_norm", "BatchNorm"}, {"layer_norm", "LayerNorm"}, {"rms_norm", "RMSNorm"}, {"group_norm", "GroupNorm"},
      {"embedding", "Embedding"}, {"attention", "Attention"}, {"loss", "Loss"}, {"softmax", "Softmax"},
      {"dropout", "Dropout"}, {"pool", "Pool"}, {"bmm", "BMM"}, {"linear", "Linear"}, {"shortcut", "Shortcut"},
      {"mlp", "MLP"}, {"ops", "Ops"}, {"squeeze_excitation", "SqueezeExcitation"}};
  if (kind == "activation") {
    static constexpr std::pair<std::string_view, std::string_view> acts[] = {
        {"leaky_relu", "LeakyReLU"}, {"relu", "ReLU"}, {"gelu", "GELU"}, {"silu", "SiLU"}, {"sigmoid", "Sigmoid"},
        {"hardtanh", "Hardtanh"}, {"tanh", "Tanh"}, {"glu", "GLU"}, {"elu", "ELU"}, {"threshold", "ReLU"}};
    for (auto [k, n] : acts)
      if (op.find(k) != std::string_view::npos) return std::string(n);
    return "Activation";
  }
  for (auto [k, n] : names)
    if (k == kind) return std::string(n);
  std::string_view bare = strip_prefix(op, "aten::");
  if (bare.find("lstm") != std::string_view::npos) return "LSTM";
  if (bare.find("gru") != std::string_view::npos) return "GRU";
  if (bare.starts_with("upsample")) return "Upsample";
  if (bare == "flatten") return "Flatten";
  if (bare == "unflatten") return "Unflatten";
  return std::string(kind);
}

std::vector<InferredUnit> infer_units(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops) {
  Inference inference{c, b, {}};
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

bool is_shape_op(std::string_view n) { return role_of(n) == Role::Shape; }

void infer_layers(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
  Inference inference{c, b, {}};
  inference.run(parent, ops, model_root);
}

}  // namespace strata::annot
