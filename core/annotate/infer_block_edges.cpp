// Where the inferred blocks begin and end (core/annotate/infer_blocks.h): the stem cut from a
// block that ends like another kind, a block that is another kind repeated split into those,
// the dropouts and loose ops leading one block of a kind but not its others trimmed, and the
// ops every layer of a stack applies to its output closing it.
#include "core/annotate/infer_blocks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace strata::annot::infer {

namespace {

// The last n tokens of a signature (all of it where it has fewer).
std::string last_tokens(const std::string& sig, size_t n) {
  size_t at = sig.size();
  while (n > 0 && at > 0) {
    --at;
    while (at > 0 && sig[at - 1] != ',' && sig[at - 1] != ';') --at;
    --n;
  }
  return sig.substr(at);
}

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
  // Kinds whose blocks all take half of their input by a split (ShuffleNet's chunk): one can
  // only begin at a split.
  std::set<std::string> opens_split, opens_otherwise;
  for (size_t k = 0; k < blocks.size(); ++k)
    (blocks[k].first < blocks[k].second && is_split(els[blocks[k].first].op) ? opens_split : opens_otherwise).insert(sig[k]);
  for (const std::string& kind : opens_otherwise) opens_split.erase(kind);  // every block of the kind, not one
  for (size_t k = 0; k < blocks.size(); ++k) {
    // The longest kind it ends like: a stage's first, downsampling block (two branches)
    // rather than the plain blocks after it, which end like both.
    std::vector<std::string> candidates;
    for (auto& [other, n] : count) {
      // One unit recurring ends a block of a kind that recurs itself only as its last unit.
      if ((signature_units(other) >= 2 || (n >= 2 && count[sig[k]] < 2)) && ends_with_kind(sig[k], other))
        candidates.push_back(other);
      // Or, where the block stands alone, a recurring kind with a projection shortcut ends it
      // (the first stage's first block after the stem), or the next block's kind does (a stage
      // of two blocks, the first projecting, then one plain, whose kind no other stage runs).
      else if ((n >= 2 || (k + 1 < blocks.size() && sig[k + 1] == other && blocks[k + 1].first == blocks[k].second)) &&
               count[sig[k]] < 2 && signature_units(other) >= 2) {
        const std::string tail = last_tokens(sig[k], signature_tokens(other) + 2);
        if (tail.size() < sig[k].size() && with_projection(tail, other)) candidates.push_back(tail);
        // Or it ends as a recurring kind without its projection (a stage of one block that
        // keeps the width, after the stem, where the later stages' first blocks project).
        if (n >= 2 && signature_tokens(other) > 4) {
          const std::string plain = last_tokens(sig[k], signature_tokens(other) - 2);
          if (plain.size() < sig[k].size() && with_projection(other, plain)) candidates.push_back(plain);
        }
      }
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

// A block that is one run of units over and over (of two weight units or more) is those
// runs, each a block, where other sums close a different number of them: a module's branch
// has one structure, while a stage runs as many blocks as it is given (an EfficientNet's
// stage opens with a block that sums nothing, then those that do: two runs between sums in
// one stage, three in another). Runs twice between every two sums stay one block (a
// pre-activation block of two separable convs), as does a run of one weight op.
void split_repeats(const std::vector<Element>& els, std::vector<Span>& blocks, std::vector<std::string>& sig) {
  // Closed by a sum after its last unit: a sum before an activation that ends the block (a
  // post-activated basic block's) or a concatenation of branches (an Inception block's) may
  // repeat a run inside one branch.
  auto summed_last = [&](Span b) {
    size_t last = b.second;
    while (last > b.first && !els[last - 1].unit) --last;
    return std::any_of(els.begin() + long(last), els.begin() + long(b.second), [](const Element& e) { return e.role == Role::Add; });
  };
  // Per block: its shortest period in whole units (itself where it has none).
  std::vector<std::string> period(blocks.size());
  std::map<std::string, std::set<size_t>> repeats;  // per period: how many of it the blocks run
  for (size_t k = 0; k < blocks.size(); ++k) {
    period[k] = sig[k];
    for (size_t cut = sig[k].find_first_of(",;"); cut != std::string::npos && cut + 1 < sig[k].size(); cut = sig[k].find_first_of(",;", cut + 1)) {
      const std::string p = sig[k].substr(0, cut + 1);
      if (sig[k].size() % p.size() != 0) continue;
      bool periodic = true;
      for (size_t at = 0; at < sig[k].size() && periodic; at += p.size()) periodic = sig[k].compare(at, p.size(), p) == 0;
      if (periodic) {
        period[k] = p;
        break;
      }
    }
    if (!period[k].empty()) repeats[period[k]].insert(sig[k].size() / period[k].size());
  }
  for (size_t k = 0, at_k = 0; k < blocks.size(); ++k, ++at_k) {
    const std::string& p = period[at_k];
    if (p.empty() || p.size() == sig[k].size() || repeats[p].size() < 2 || !summed_last(blocks[k])) continue;
    const size_t f = blocks[k].first, t = blocks[k].second;
    if (const size_t w = computing_weights(els, start_of_signature_tokens(els, f, t, p), t); w < 2 || w == SIZE_MAX) continue;
    // Each run from its first unit; loose ops before it are the run before's.
    std::vector<Span> parts;
    for (size_t end = t; end > f;) {
      size_t start = start_of_signature_tokens(els, f, end, p);
      if (parts.size() + 1 == sig[k].size() / p.size()) start = f;
      parts.push_back({start, end});
      end = start;
    }
    std::reverse(parts.begin(), parts.end());
    blocks.erase(blocks.begin() + long(k));
    blocks.insert(blocks.begin() + long(k), parts.begin(), parts.end());
    sig.erase(sig.begin() + long(k));
    for (size_t i = 0; i < parts.size(); ++i) sig.insert(sig.begin() + long(k + i), signature(els, parts[i].first, parts[i].second));
    k += parts.size() - 1;
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
  // A value read back to Python before a block's first unit (is_nonzero, item: an `if` on a
  // tensor, LayerDrop's draw deciding whether the layer runs) is its caller's control flow:
  // what computes it and the read are the loop's, not the block's.
  for (auto& [f, t] : blocks) {
    size_t first = f;
    while (first < t && !els[first].unit) ++first;
    for (size_t j = first; j-- > f;)
      if (in(els[j].op, {"aten::is_nonzero", "aten::item", "aten::_local_scalar_dense"})) {
        f = j + 1;
        break;
      }
  }
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
  // weights the model selects with, left between two blocks; a second tower's causal mask,
  // views among it) is the caller's.
  for (auto& [name, kd] : kinds)
    if (kd.least == 0 && blocks[kd.first].first + leads[kd.first] < blocks[kd.first].second) blocks[kd.first].first += leads[kd.first];
  // Where the repeats' leads compute nothing (reshapes only: what the block before returned,
  // viewed), what the first one's computes (a causal mask made once for all the layers) is the
  // caller's too, up to its last op that computes.
  std::unordered_map<std::string_view, bool> repeats_view_only;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Kind& kd = kinds[sig[k]];
    if (k == kd.first) continue;
    bool& only = repeats_view_only.try_emplace(sig[k], true).first->second;
    for (size_t j = blocks[k].first; j < blocks[k].first + leads[k]; ++j) only &= els[j].role == Role::Shape;
  }
  for (auto& [name, kd] : kinds) {
    auto it = repeats_view_only.find(name);
    if (kd.least == 0 || kd.least == SIZE_MAX || it == repeats_view_only.end() || !it->second) continue;
    size_t& f = blocks[kd.first].first;
    size_t computes = f;
    for (size_t j = f; j < f + leads[kd.first]; ++j)
      if (els[j].role != Role::Shape) computes = j + 1;
    if (computes > f && computes < blocks[kd.first].second) leads[kd.first] -= computes - f, f = computes;
  }
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Kind& kd = kinds[sig[k]];
    if (k == kd.first || leads[k] == 0 || kd.least != 0 || blocks[k].first + leads[k] >= blocks[k].second) continue;
    bool computes = false;
    for (size_t j = blocks[k].first; j < blocks[k].first + leads[k]; ++j)
      computes |= els[j].role != Role::Shape && els[j].role != Role::Add && els[j].role != Role::Merge;
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
  // A repeat whose lead ends as the first's whole lead does and computes before that (a
  // decoder's causal mask made right before its embeddings, whose lead slices the position ids
  // as the encoder's does) has that extra start from its caller. Zeros made there compute
  // nothing (a recurrent layer's initial state, its own). (The as_strided of a view is
  // recorded or not as the clock rounds: leads compare without them.)
  auto lead_ops = [&](size_t from, size_t to) {
    std::vector<std::string_view> ops;
    for (size_t j = from; j < to; ++j)
      if (els[j].op != "aten::as_strided") ops.push_back(els[j].op);
    return ops;
  };
  for (size_t k = 0; k < blocks.size(); ++k) {
    const Kind& kd = kinds[sig[k]];
    const size_t f = blocks[k].first, f0 = blocks[kd.first].first, mine = lead(k);
    if (k == kd.first || f + mine >= blocks[k].second) continue;
    const std::vector<std::string_view> own = lead_ops(f0, f0 + lead(kd.first));
    if (own.empty()) continue;
    for (size_t at = f + 1; at < f + mine; ++at) {
      if (els[at].op != own.front() || lead_ops(at, f + mine) != own) continue;
      bool computes = false;
      for (size_t j = f; j < at; ++j) computes |= els[j].role != Role::Shape && !allocates(els[j].op);
      if (computes) blocks[k].first = at;
      break;
    }
  }
}

// Branches alike that all take one input (the experts of a soft-gated multi-task model, an
// MMoE's or PLE's, each an MLP of the same layers): the backward shows each one's first op
// taking an input a later op takes too (shared_inputs.cpp), so each runs from one such op to
// the next, where repetition alone would cut them at their layers' period (a Linear, its
// activation and dropout). Of units and reshapes only, two weight ops or more each, three or
// more in a row (two alike are as often an Inception module's branches); a block holding them
// is those branches, each a block.
void alike_branches(const std::vector<Element>& els, std::vector<Span>& blocks) {
  auto branch_like = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j)
      if (!els[j].unit && els[j].role != Role::Shape) return false;
    const size_t weights = computing_weights(els, from, to);
    return weights >= 2 && weights != SIZE_MAX;
  };
  // The branches in [f, t), or none.
  auto branches_in = [&](size_t f, size_t t) {
    std::vector<size_t> starts;
    for (size_t j = f; j < t; ++j)
      if (els[j].unit && els[j].shares_input) starts.push_back(j);
    std::vector<Span> alike;
    for (size_t k = 0; k + 1 < starts.size() && alike.empty(); ++k) {
      const std::string kind = signature(els, starts[k], starts[k + 1]);
      size_t at = k;
      while (at + 1 < starts.size() && signature(els, starts[at], starts[at + 1]) == kind && branch_like(starts[at], starts[at + 1])) {
        alike.push_back({starts[at], starts[at + 1]});
        ++at;
      }
      if (alike.empty()) continue;
      // The last one: as long as the one before it, of the same kind.
      const size_t e = starts[at] + (alike.back().second - alike.back().first);
      if (e <= t && signature(els, starts[at], e) == kind && branch_like(starts[at], e)) alike.push_back({starts[at], e});
      // Joined at once: what follows the last one (past reshapes) stacks or concatenates them; a
      // chain of blocks whose outputs are kept for later (a U-Net encoder's skips) goes on.
      size_t join = alike.back().second;
      while (join < t && !els[join].unit && els[join].role == Role::Shape) ++join;
      if (alike.size() < 3 || join >= els.size() || els[join].unit || els[join].role != Role::Merge) alike.clear();
    }
    return alike;
  };
  std::vector<Span> out;
  size_t done = 0;  // where the last block ended
  for (size_t k = 0; k <= blocks.size(); ++k) {
    const size_t gap_end = k < blocks.size() ? blocks[k].first : els.size();
    for (Span s : branches_in(done, gap_end)) out.push_back(s);
    if (k == blocks.size()) break;
    const std::vector<Span> inside = branches_in(blocks[k].first, blocks[k].second);
    if (inside.empty()) out.push_back(blocks[k]);
    else out.insert(out.end(), inside.begin(), inside.end());
    done = blocks[k].second;
  }
  blocks = std::move(out);
}

// Candidate ops on one input, each output weighted as it comes and summed (a NAS search's mixed
// edge, DARTS' MixedOp: sum(w * op(x) for w, op in zip(weights, ops))): the weights unbound
// first, then three candidates or more, each of units, reshapes and concatenations (a factorised
// reduction's), an op zeroing its input (x.mul(0.)) or nothing (the identity), followed by its
// loose product and sum, two of them at least of different units. A residual chain scaled at
// each sum unbinds no weights first.
std::vector<Mixture> weighted_mixtures(const std::vector<Element>& els) {
  std::vector<Mixture> out;
  auto loose = [&](size_t j, std::string_view op) { return j < els.size() && !els[j].unit && els[j].op == op; };
  for (size_t i = 0; i < els.size(); ++i) {
    if (!loose(i, "aten::unbind")) continue;
    Mixture m;
    std::set<std::string> kinds;
    size_t from = i + 1;
    while (from < els.size()) {
      size_t j = from;
      while (j < els.size() && (els[j].unit || els[j].role == Role::Shape || els[j].role == Role::Merge) && !loose(j, "aten::mul") &&
             !loose(j, "aten::unbind"))  // the next edge's weights
        ++j;
      if (loose(j, "aten::mul") && loose(j + 1, "aten::mul")) ++j;  // x.mul(0.), strided views first in a reduction
      if (!(loose(j, "aten::mul") && j + 1 < els.size() && !els[j + 1].unit && els[j + 1].op == "aten::add")) break;
      m.candidates.push_back({from, j});
      if (std::any_of(els.begin() + long(from), els.begin() + long(j), [](const Element& e) { return e.unit; }))
        kinds.insert(signature(els, from, j));
      from = j + 2;
    }
    if (m.candidates.size() < 3 || kinds.size() < 2) continue;
    m.whole = {i, from};
    out.push_back(std::move(m));
    i = from - 1;
  }
  return out;
}

void mixtures_as_blocks(const std::vector<Mixture>& mixtures, std::vector<Span>& blocks) {
  if (mixtures.empty()) return;
  std::vector<Span> out;
  for (Span b : blocks)
    if (std::none_of(mixtures.begin(), mixtures.end(), [&](const Mixture& m) { return b.first < m.whole.second && m.whole.first < b.second; }))
      out.push_back(b);
  for (const Mixture& m : mixtures) out.push_back(m.whole);
  std::sort(out.begin(), out.end());
  blocks = std::move(out);
}

// A block holding an RNN cell is (part of) a time step of a loop written in Python, which no
// module wraps (a speller's or a decoder's step: its cells, its attention, its output): no
// block from the loop's first cell to its last.
void no_blocks_in_cell_loops(const std::vector<Element>& els, std::vector<Span>& blocks) {
  size_t first_cell = SIZE_MAX, last_cell = 0;
  for (size_t j = 0; j < els.size(); ++j)
    if (els[j].unit && els[j].op.ends_with("_cell")) first_cell = std::min(first_cell, j), last_cell = j;
  if (first_cell == SIZE_MAX) return;
  std::erase_if(blocks, [&](Span s) { return s.second > first_cell && s.first <= last_cell; });
}

// `x.permute(...).contiguous()` lays out the view it was just given, in the same expression: a
// block that would open at the copy leaves it to the view's side (SegFormer's stage output, laid
// out as a map before the next patch embedding's conv).
void copies_with_their_views(const std::vector<Element>& els, std::vector<Span>& blocks) {
  for (size_t k = 0; k < blocks.size(); ++k) {
    auto& [f, t] = blocks[k];
    const bool copy_of_view = f > 0 && f + 1 < t && !els[f].unit && els[f].op == "aten::contiguous" &&
                              !els[f - 1].unit && els[f - 1].role == Role::Shape;
    if (!copy_of_view) continue;
    if (k > 0 && blocks[k - 1].second == f) ++blocks[k - 1].second;
    ++f;
  }
}

// Where every repeat of a kind leads with the same loose ops and its first does not, they act
// on what the block before returned; where the same ops follow the last block of the kind
// before too, they close each block (OPT's `(residual + x).view(shape)` at a layer's end,
// FastSpeech's mask applied to each layer's output) rather than open the next.
void close_with_output_ops(const std::vector<Element>& els, std::vector<Span>& blocks, const std::vector<std::string>& sig) {
  // (Not a join: a concatenation or sum after a block takes more than what it returned.)
  auto loose = [&](size_t from, size_t to) {
    size_t j = from;
    while (j < to && !els[j].unit && !is_transpose(els[j]) && els[j].role != Role::Merge && els[j].role != Role::Add) ++j;
    return j - from;
  };
  std::unordered_map<std::string_view, std::vector<size_t>> of_kind;
  for (size_t k = 0; k < blocks.size(); ++k) of_kind[sig[k]].push_back(k);
  std::vector<std::pair<std::vector<size_t>, size_t>> stacks;  // a kind's repeats in one stack, where the stack ends
  for (auto& [kind, all] : of_kind) {
    // Per stack: the repeats led by the ops most of them are led by go on the stack (an
    // encoder's layers); one led otherwise, after other work, opens another (the decoder's
    // first layer, after the encoder and what comes between).
    std::vector<std::string> leads;
    std::map<std::string, int> count;
    for (size_t i = 0; i < all.size(); ++i) {
      leads.push_back(op_sequence(els, blocks[all[i]].first, blocks[all[i]].first + loose(blocks[all[i]].first, blocks[all[i]].second)));
      if (i > 0) ++count[leads.back()];
    }
    if (count.empty()) continue;
    const std::string& common = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
    std::vector<size_t> ks;
    auto close_stack = [&](size_t end) {
      if (ks.size() >= 2) stacks.push_back({ks, end});
      ks.clear();
    };
    for (size_t i = 0; i < all.size(); ++i) {
      if (ks.empty() || leads[i] != common || blocks[all[i] - 1].second != blocks[all[i]].first) close_stack(all[i]);
      ks.push_back(all[i]);
    }
    close_stack(blocks.size());
  }
  for (auto& [ks, stack_end] : stacks) {
    const size_t n = loose(blocks[ks[1]].first, blocks[ks[1]].second);
    if (n == 0) continue;
    const std::string lead = op_sequence(els, blocks[ks[1]].first, blocks[ks[1]].first + n);
    const auto [first_f, first_t] = blocks[ks.front()];
    if (loose(first_f, first_t) >= n && op_sequence(els, first_f, first_f + n) == lead) continue;  // every block's own
    // (The stack's later repeats share that lead and follow the block before them, by how the
    // stacks were made: each needs only units after it.)
    if (std::any_of(ks.begin() + 1, ks.end(), [&](size_t k) { return blocks[k].first + n >= blocks[k].second; })) continue;
    // The block before the last repeat: the last of its kind in the stack is followed by the
    // ops too. (A block of other work right after it, of a kind that runs once, may have
    // taken them as its lead.)
    size_t last = ks.back() - 1;
    for (size_t k = ks.back(); k < stack_end; ++k)
      if (sig[k] == sig[ks.back() - 1]) last = k;
    const size_t after = blocks[last].second, next = last + 1 < blocks.size() ? blocks[last + 1].first : els.size();
    const bool taken = next == after && last + 1 < blocks.size() && after + n < blocks[last + 1].second && of_kind.at(sig[last + 1]).size() == 1;
    if ((after + n > next && !taken) || loose(after, after + n) != n || op_sequence(els, after, after + n) != lead) continue;
    for (size_t i = 1; i < ks.size(); ++i) blocks[ks[i] - 1].second += n, blocks[ks[i]].first += n;
    blocks[last].second += n;
    if (taken) blocks[last + 1].first += n;
  }
}

// Whether some other kind among `kinds` (distinct) is a variant of `kind`; not looked for

}  // namespace strata::annot::infer
