// Attention units: scores, their normalisation (a softmax, or a decay and a sum), a weighted
// sum, from the in-projections to the out-projection; see core/annotate/infer_units.h.
#include "core/annotate/infer_units.h"

#include "core/annotate/infer_written.h"

#include <algorithm>
#include <utility>

namespace strata::annot::infer {

namespace {

struct AttentionFinder {
  const TreeBuilder& b;

  // After a softmax at `sm`, the weighted sum within a few ops (allocations apart: torch
  // before 1.14 makes tensors around each record_function range, and the rounding nests them
  // or not), or SIZE_MAX; `own(j)`: a unit there is the attention's own.
  template <class Own>
  static size_t second_product(const std::vector<Element>& els, size_t sm, Own own) {
    size_t few = 0;
    for (size_t k = sm == SIZE_MAX ? els.size() : sm + 1; k < els.size(); ++k) {
      if (els[k].role == Role::Score) return k;
      if ((els[k].unit && els[k].role != Role::Dropout && !own(k)) || (few += els[k].unit || !allocates(els[k].op)) > 6) break;
    }
    return SIZE_MAX;
  }

  // With no softmax, the scores of the product at `s1` weighted elementwise (a decay mask, a
  // normalisation: a retention's q k^T ⊙ D) and then a second product within a few ops, or
  // SIZE_MAX. Its caller asks for projections of both the first product's operands. A second
  // product a softmax follows computes the scores (Informer's sampled queries before them).
  static size_t decayed_product(const std::vector<Element>& els, size_t s1) {
    size_t computes = 0;
    for (size_t k = s1 + 1; k < els.size() && k <= s1 + 16; ++k) {
      const Element& e = els[k];
      if (e.role == Role::Score) {
        for (size_t m = k + 1; m < els.size() && m <= k + 8 && !els[m].unit; ++m)
          if (els[m].role == Role::Softmax) return SIZE_MAX;
        return computes > 0 ? k : SIZE_MAX;
      }
      if (e.unit || !(e.role == Role::Compute || e.role == Role::Shape || allocates(e.op))) return SIZE_MAX;
      computes += e.role == Role::Compute;
    }
    return SIZE_MAX;
  }

  // Whether the elements before a softmax compute scores elementwise from a projection: back
  // over views and loose computing ops (products, sums, a mask), an activation at most, to a
  // linear, with at least one product or sum between.
  static bool scored_elementwise(const std::vector<Element>& out) {
    size_t j = out.size(), reductions = 0, activations = 0;
    while (j > 0) {
      const Element& e = out[j - 1];
      if (e.unit && e.role == Role::Weight) return e.kind == "linear" && reductions > 0;
      if (e.unit && e.role == Role::Activation && ++activations <= 1) {
        --j;
        continue;
      }
      if (e.unit || !(e.role == Role::Shape || e.role == Role::Compute || e.role == Role::Add)) return false;
      reductions += in(e.op, {"aten::mul", "aten::sum"});
      --j;
    }
    return false;
  }

  // Scores, a softmax, a weighted sum: attention, from its in-projection to its out-projection.
  std::vector<Element> attention(std::vector<Element> els) {
    std::vector<Element> out;
    size_t i = 0;
    while (i < els.size()) {
      size_t s1 = i;
      bool fused = els[i].role == Role::Score && els[i].op.find("scaled_dot_product") != std::string_view::npos;
      size_t s2 = i, k = i + 1;
      bool unnormalised = false;  // no softmax between the products
      // Scores computed elementwise from a projection (a graph attention's a·[Wh_i, Wh_j], an
      // additive attention's v·tanh(Wq + Uk)), then the softmax and the weighted sum: the
      // softmax stands for the first product.
      const bool elementwise_scores = !fused && els[i].role == Role::Softmax && scored_elementwise(out);
      // A projection across the heads, the scores permuted to put the heads last (talking
      // heads: CaiT's proj_l before the softmax, proj_w after it), is the attention's own.
      auto across_heads = [&](size_t j) { return els[j].unit && els[j].kind == "linear" && j > 0 && els[j - 1].op == "aten::permute"; };
      if (!fused) {
        size_t sm = elementwise_scores ? i : SIZE_MAX;  // the softmax
        if (!elementwise_scores) {
          if (els[i].role != Role::Score) {
            out.push_back(std::move(els[i++]));
            continue;
          }
          // softmax within a few ops, then the second product
          bool position_projection_seen = false;
          // a bias and a mask may come between: a shifted window's mask, a relative position bias
          // (T5's looked up in an embedding of its buckets)
          // A linear whose product with the query or key adds to the scores before the softmax
          // projects relative positions (DeBERTa's disentangled attention): the attention's too.
          // The product follows it within a dozen elements (its views and scaling between).
          auto position_projection = [&](size_t j) {
            if (!els[j].unit || els[j].kind != "linear") return false;
            for (size_t m = j + 1; m < els.size() && m <= j + 12; ++m) {
              if (els[m].role == Role::Score) return true;
              if (els[m].unit) return false;
            }
            return false;
          };
          // An MLP between the scores and the softmax whose output is only reshaped, gathered and
          // added to the scores (CrossFormer's dynamic position bias on its table of offsets) is
          // the bias this attention computes: the MLP's end and the softmax it reaches, or SIZE_MAX.
          auto bias_mlp = [&](size_t j) -> std::pair<size_t, size_t> {
            size_t weights = 0;
            for (; j < els.size() && els[j].unit &&
                        (els[j].role == Role::Weight || els[j].role == Role::Norm || els[j].role == Role::Activation);
                 ++j)
              weights += els[j].role == Role::Weight;
            bool added = false;
            for (size_t m = j; weights >= 2 && m < els.size(); ++m) {
              if (els[m].role == Role::Softmax) return {j, added ? m : SIZE_MAX};
              if (els[m].unit || !(els[m].role == Role::Shape || els[m].role == Role::Compute || els[m].role == Role::Add)) break;
              added |= els[m].role == Role::Add;
            }
            return {j, SIZE_MAX};
          };
          for (; k < els.size(); ++k) {
            if (els[k].role == Role::Softmax) { sm = k; break; }
            if (els[k].role == Role::Score && position_projection_seen) continue;
            if (const auto [end, softmax] = bias_mlp(k); softmax != SIZE_MAX) {
              group_in_place(els, "bias_mlp", k, end);
              sm = softmax - (end - k - 1);
              break;
            }
            if ((els[k].unit && els[k].role != Role::Dropout && els[k].kind != "embedding" && !across_heads(k)) || els[k].role == Role::Score) {
              if (!position_projection(k)) break;
              position_projection_seen = true;
            }
          }
        }
        s2 = sm == SIZE_MAX ? (elementwise_scores ? SIZE_MAX : decayed_product(els, i)) : second_product(els, sm, across_heads);
        unnormalised = sm == SIZE_MAX;
        if (s2 == SIZE_MAX) {
          out.push_back(std::move(els[i++]));
          continue;
        }
      }
      // In-projections: back over the linears (or pointwise convs projecting a map's channels:
      // a non-local block's, a diffusion UNet's) and views that lead to the scores, and what is
      // computed with them (a window's partition; rotary positions, whose sums and
      // concatenations come after the projections: one before them is the residual path's).
      auto projection = [](const Element& e) { return e.role == Role::Weight && (e.kind == "linear" || e.kind == "conv"); };
      // A packed projection (its output split into query, key and value, views apart) makes
      // all three, or key and value with the query's projection after its packed weight's
      // split: another projection before it is no in-projection (ALBERT's embedding mapping).
      auto split_near = [&](size_t from, size_t to) {
        for (size_t j = from; j < to && !out[j].unit && out[j].role == Role::Shape; ++j)
          if (is_split(out[j].op) || out[j].op == "aten::unflatten") return true;
        return false;
      };
      auto split_before = [&](size_t p) {
        for (size_t j = before_views(out, p); j < p; ++j)
          if (is_split(out[j].op)) return true;
        return false;
      };
      // Keys and values computed from a reduced map (a spatial-reduction attention: PVT's,
      // SegFormer's): the query's linear, the reduction's conv or linear, its norm, then their
      // projection; views between.
      auto reduced = [&](size_t norm) {
        const size_t r = before_views(out, norm), q = r > 0 ? before_views(out, r - 1) : 0;
        return r > 0 && q > 0 && projection(out[r - 1]) && out[q - 1].role == Role::Weight && out[q - 1].kind == "linear";
      };
      size_t back = out.size(), first_linear = SIZE_MAX, last_join = SIZE_MAX;
      bool packed_seen = false;
      while (back > 0) {
        const Element& p = out[back - 1];
        bool proj = projection(p);
        if (proj && packed_seen && !split_before(back - 1)) break;
        if (proj && !packed_seen) packed_seen = split_near(back, out.size());
        bool joins = !p.unit && (p.role == Role::Add || p.role == Role::Merge);
        if (joins && first_linear == SIZE_MAX && last_join == SIZE_MAX) last_join = back - 1;
        const bool reduction_norm = p.unit && p.role == Role::Norm && first_linear != SIZE_MAX && last_join == SIZE_MAX && reduced(back - 1);
        // (A product with no softmax after it computes with the projections: the rotary
        // angles' outer product, an einsum of positions and frequencies.)
        // (Not a value read back to Python: an `if` on a tensor is its caller's control flow.)
        const bool computes = (!p.unit && (p.role == Role::Compute || p.role == Role::Score) &&
                               !in(p.op, {"aten::is_nonzero", "aten::item", "aten::_local_scalar_dense"})) ||
                              (p.unit && p.kind == "rotary") ||
                              (elementwise_scores && first_linear == SIZE_MAX && p.unit && p.role == Role::Activation);
        // A concatenation right after the norm, before the projections, builds their bias
        // (BEiT's q_bias, zeros, v_bias for one F.linear): the attention's.
        const bool bias = !p.unit && p.role == Role::Merge && first_linear != SIZE_MAX && back >= 2 && out[back - 2].unit &&
                          out[back - 2].role == Role::Norm;
        if (!(proj || reduction_norm || (joins && first_linear == SIZE_MAX) || p.role == Role::Shape || computes || bias)) break;
        if (proj) first_linear = back - 1;
        --back;
      }
      if (first_linear == SIZE_MAX && last_join != SIZE_MAX) back = last_join + 1;
      // A product before the first projection, on the attention's input, is its caller's (XLM's
      // padding mask multiplied into each layer's input); what else is computed there may be the
      // attention's own (torchvision's Swin rolls and pads its windows first).
      if (first_linear != SIZE_MAX)
        for (size_t j = first_linear; j-- > back;)
          if (!out[j].unit && (out[j].op == "aten::mul" || out[j].op == "aten::mul_")) {
            back = j + 1;
            break;
          }
      if (unnormalised && std::count_if(out.begin() + long(back), out.end(), projection) < 2) {
        out.push_back(std::move(els[i++]));
        continue;
      }
      size_t lead = first_linear != SIZE_MAX ? first_linear - back : 0;
      size_t lo = s1, linears = 0;
      while (out.size() > back) {
        linears += projection(out.back());
        els[--lo] = std::move(out.back());
        out.pop_back();
      }
      // nn.MultiheadAttention's own function multiplies with bmm / baddbmm and projects with
      // F.linear, by slices of its one packed weight where query and key differ (a split
      // before the projections): one module. Attention written by hand multiplies with matmul
      // (@) and calls its projections and dropout as modules of their own, children of the
      // attention.
      // From torch 2 its function calls the fused kernel where it need not return the weights
      // (nn.TransformerEncoderLayer's call): its packed in-projection unflattens into query,
      // key and value, an op attention written by hand has no use for.
      bool own_function = els[s1].op == "aten::bmm" || els[s1].op == "aten::baddbmm";
      for (size_t j = lo; j < s1 && fused && !own_function; ++j) own_function = els[j].op == "aten::unflatten";
      // Its packed projection's output is chunked (torch 1.13) or unflattened: one split into
      // parts of given sizes after it (a query apart from one key and value the heads share:
      // multi-query attention, GPTBigCode's) is attention written by hand.
      for (size_t j = lo, seen = 0; j < s1 && own_function && linears == 1; ++j) {
        seen += projection(els[j]);
        if (seen && !els[j].unit && els[j].op == "aten::split_with_sizes") own_function = false;
      }
      bool packed = linears < 2;
      for (size_t j = lo; j < s1 && !packed; ++j) {
        if (els[j].unit) break;
        packed = els[j].op == "aten::split_with_sizes" || els[j].op == "aten::split";
      }
      // nn.MultiheadAttention's forward does nothing before its in-projection but transpose a
      // batch-first input and split its packed weight (for a query apart from key and value):
      // the views before those are its caller's (DiT's modulation).
      if (own_function && packed && lead > 0) {
        size_t own = lo + lead;
        auto mha_own = [&](size_t j) { return j >= lo && !els[j].unit && (els[j].op == "aten::transpose" || is_split(els[j].op)); };
        // A transpose's as_strided, beside it either way as the clock's rounding sorts them,
        // unless the rounding left it beside the op before (that op's own).
        auto strided = [&](size_t j) {
          if (els[j].op != "aten::as_strided") return false;
          if (j > lo && mha_own(j - 1)) return true;
          const Element* before = j > lo ? &els[j - 1] : out.empty() ? nullptr : &out.back();
          return mha_own(j + 1) && !(before && left_beside(b, before->ops.back(), els[j].ops.front()));
        };
        while (own > lo && (mha_own(own - 1) || strided(own - 1))) --own;
        for (; lo < own; ++lo, --lead) out.push_back(std::move(els[lo]));
      }
      // Out-projection: views, one linear (or conv), views; a dropout the windows' views follow is the
      // attention's own (Swin's), not a module after it.
      size_t hi = s2 + 1;
      auto views = [&](size_t j) {
        while (j < els.size() && (els[j].role == Role::Shape || (!els[j].unit && allocates(els[j].op)))) ++j;
        return j;
      };
      hi = views(hi);
      // The weighted sum written into the output by index first (Informer's ProbAttention puts
      // its top queries' context into a mean context: context[b, h, top, :] = attn @ v): the
      // indices made, the write, then the out-projection, all the attention's.
      if (hi < els.size() && !projection(els[hi])) {
        size_t w = hi;
        bool wrote = false;
        for (; w < els.size() && !els[w].unit && w - hi < 24; ++w) {
          if (els[w].op == "aten::index_put_" || els[w].op == "aten::index_copy_") wrote = true;
          else if (els[w].role != Role::Shape && !is_factory_op(els[w].op)) break;
        }
        if (wrote && views(w) < els.size() && projection(els[views(w)])) hi = views(w);
      }
      // A fourth in-projection beside query, key and value gates the output: the weighted sum
      // (normed per head) times its activation, then the out-projection (RetNet's swish gate).
      if (hi < els.size() && !projection(els[hi]) && linears >= 4) {
        size_t g = hi;
        if (els[g].unit && els[g].role == Role::Norm) g = views(g + 1);
        if (g < els.size() && els[g].unit && els[g].role == Role::Activation) g = views(g + 1);
        if (g < els.size() && !els[g].unit && els[g].op == "aten::mul" && views(g + 1) < els.size() && projection(els[views(g + 1)]))
          hi = views(g + 1);
      }
      if (hi < els.size() && projection(els[hi])) {
        hi = views(hi + 1);
        if (hi < els.size() && els[hi].role == Role::Dropout && views(hi + 1) >= hi + 3) hi = views(hi + 1);
      } else if (elementwise_scores && hi < els.size() && els[hi].op == "aten::mean") {
        hi = views(hi + 1);  // no out-projection: its heads averaged (a graph attention's last layer)
      }
      // nn.MultiheadAttention returns the weights averaged over its heads too (need_weights, the
      // default): their sum or mean (and division), then its batch_first transpose back.
      if (own_function && packed && hi < els.size() && (els[hi].op == "aten::sum" || els[hi].op == "aten::mean")) {
        if (++hi < els.size() && els[hi].op == "aten::div") ++hi;
        hi = views(hi);
      }
      while (hi > s2 + 1 && !els[hi - 1].unit && allocates(els[hi - 1].op)) --hi;  // made for what follows
      Element a = new_unit(Role::Weight, "attention", els[s1].op);
      a.multihead = a.one_module = own_function && packed;
      a.lead = lead;
      for (size_t j = lo; j < hi; ++j) {
        a.ops.insert(a.ops.end(), els[j].ops.begin(), els[j].ops.end());
        if (els[j].role == Role::Shape) els[j].unit = false;  // a flatten merging the heads is a reshape, not nn.Flatten
        a.inner.push_back(std::move(els[j]));
      }
      out.push_back(std::move(a));
      i = hi;
    }
    first_attention(out);
    attention_leads(out);
    return window_attentions(std::move(out));
  }

  // A window attention that gathers its position bias before its projections is one function
  // handed its weights and the windows' partition (torchvision's shifted_window_attention, on
  // F.linear and F.dropout). One that gathers it with its scores is a module called on windows
  // (timm's WindowAttention): the partition before its first projection and the reverse after
  // its output are its caller's. So are they where the model's other attentions run on the
  // whole map with no partition (SAM's encoder: windowed blocks between global ones).
  static std::vector<Element> window_attentions(std::vector<Element> els) {
    std::vector<Element> out;
    out.reserve(els.size());
    const bool some_global = std::any_of(els.begin(), els.end(), [](const Element& e) {
      return e.unit && e.kind == "attention" && !e.one_module && !e.multihead && e.lead == 0;
    });
    auto loose_view = [](const Element& e) { return !e.unit && e.role == Role::Shape; };
    auto permute = [](const Element& e) { return e.op == "aten::permute"; };
    for (Element& a : els) {
      if (!a.unit || a.kind != "attention") {
        out.push_back(std::move(a));
        continue;
      }
      auto gathers = [](const Element& e) { return !e.unit && e.op == "aten::index"; };
      for (size_t m = 0; m < a.lead && m < a.inner.size() && !a.one_module; ++m) a.one_module = gathers(a.inner[m]);
      size_t scores = a.lead, softmax = a.inner.size();
      while (scores < a.inner.size() && a.inner[scores].role != Role::Score) ++scores;
      for (size_t m = scores; m < a.inner.size() && softmax == a.inner.size(); ++m)
        if (a.inner[m].role == Role::Softmax) softmax = m;
      const bool bias_with_scores = std::any_of(a.inner.begin() + long(std::min(scores, softmax)), a.inner.begin() + long(softmax), gathers);
      size_t reverse = a.inner.size();
      while (reverse > softmax && loose_view(a.inner[reverse - 1])) --reverse;
      const bool partition = a.lead > 0 && std::all_of(a.inner.begin(), a.inner.begin() + long(a.lead), loose_view) &&
                             std::any_of(a.inner.begin(), a.inner.begin() + long(a.lead), permute) &&
                             std::any_of(a.inner.begin() + long(reverse), a.inner.end(), permute);
      if (a.one_module || !(bias_with_scores || some_global) || !partition) {
        out.push_back(std::move(a));
        continue;
      }
      std::vector<Element> after = take_parts(a, reverse, a.inner.size());
      for (Element& v : take_parts(a, 0, a.lead)) out.push_back(std::move(v));
      a.lead = 0;
      out.push_back(std::move(a));
      for (Element& v : after) out.push_back(std::move(v));
    }
    return out;
  }

  // What every attention computes the same way before its parts, back to the norm or residual
  // add before it, with weights and then combined into a bias (Swin V2's position-bias MLP,
  // its sigmoid and scaling), is the attention's own: the model computes no such bias for each
  // layer outside it. A run that ends in a unit (a conv and its activation) is the input.
  static void attention_leads(std::vector<Element>& els) {
    std::vector<std::pair<size_t, size_t>> leads;  // [from, attention)
    std::string common;
    for (size_t j = 0; j < els.size(); ++j) {
      if (!els[j].unit || els[j].kind != "attention") continue;
      size_t k = j;
      while (k > 0 && els[k - 1].role != Role::Norm && els[k - 1].role != Role::Add && els[k - 1].role != Role::Merge &&
             els[k - 1].kind != "attention" && els[k - 1].kind != "embedding")
        --k;
      // The run up to the attention's first projection, its lead included; views apart, as the
      // profiler records one more or less.
      std::vector<const Element*> run;
      for (size_t m = k; m < j; ++m) run.push_back(&els[m]);
      for (size_t m = 0; m < els[j].lead; ++m) run.push_back(&els[j].inner[m]);
      std::string sig;
      bool weights = false;
      const Element* last = nullptr;
      for (const Element* e : run) {
        if (e->role == Role::Shape) continue;
        add_work(sig, *e);
        weights |= e->unit && e->role == Role::Weight;
        last = e;
      }
      if (!weights || last->unit || (!leads.empty() && sig != common)) return;
      common = sig;
      leads.push_back({k, j});
    }
    if (leads.size() < 2) return;
    // One pass over the elements, each lead moved into the attention after it.
    std::vector<Element> out;
    out.reserve(els.size());
    size_t next = 0;
    for (size_t j = 0; j < els.size();) {
      if (next == leads.size() || j != leads[next].first) {
        out.push_back(std::move(els[j++]));
        continue;
      }
      auto [from, at] = leads[next++];
      std::vector<Element> lead(std::make_move_iterator(els.begin() + long(from)), std::make_move_iterator(els.begin() + long(at)));
      Element& a = out.emplace_back(std::move(els[at]));
      j = at + 1;
      std::vector<NodeId> ops;
      for (const Element& e : lead) ops.insert(ops.end(), e.ops.begin(), e.ops.end());
      a.ops.insert(a.ops.begin(), ops.begin(), ops.end());
      a.lead += lead.size();
      // Its weights with activations between them, first, are the bias's MLP (cpb_mlp).
      size_t mlp = 0, weights = 0;
      for (size_t m = 0; m < lead.size() && lead[m].unit && (lead[m].role == Role::Weight || lead[m].role == Role::Activation); ++m)
        if (lead[m].role == Role::Weight) mlp = m + 1, ++weights;
      if (weights >= 2) {
        Element group = grouped("bias_mlp", lead.begin(), lead.begin() + long(mlp));
        lead.erase(lead.begin(), lead.begin() + long(mlp));
        lead.insert(lead.begin(), std::move(group));
        a.lead -= mlp - 1;
      }
      a.inner.insert(a.inner.begin(), std::make_move_iterator(lead.begin()), std::make_move_iterator(lead.end()));
    }
    els = std::move(out);
  }

  // What the first attention has before its projections that the others do not was computed
  // once before it (a mask for all layers), not by it: it goes back out. Where the others'
  // leads compute nothing (views only, one more or less as the profiler records them), the
  // first's goes out up to its last op that computes; else what it has more than they do.
  static void first_attention(std::vector<Element>& els) {
    size_t first = SIZE_MAX, least = SIZE_MAX;
    bool others_compute = false, same = true, others_alike = true;  // same: as the first's; alike: as each other's
    auto computes = [](const Element& e) { return !e.unit && e.role != Role::Shape; };
    auto lead_work = [](const Element& a) {
      std::string sig;
      for (size_t k = 0; k < a.lead; ++k) add_work(sig, a.inner[k]);
      return sig;
    };
    std::string first_work;
    std::optional<std::string> other_work;
    for (size_t j = 0; j < els.size(); ++j)
      if (els[j].unit && els[j].kind == "attention") {
        if (first == SIZE_MAX) {
          first = j;
          first_work = lead_work(els[j]);
          continue;
        }
        least = std::min(least, els[j].lead);
        for (size_t k = 0; k < els[j].lead; ++k) others_compute |= computes(els[j].inner[k]);
        const std::string work = lead_work(els[j]);
        same &= work == first_work;
        if (!other_work) other_work = work;
        others_alike &= work == *other_work;
      }
    // Every lead doing the same, a view more or less, is every attention's own work.
    if (first == SIZE_MAX || least == SIZE_MAX || (others_compute && same)) return;
    // The others all computing the same first where the first attention computes nothing
    // before its projections: an attention's own work runs in its first call too, so that is
    // what each layer did to its output (FastSpeech's mask applied at a layer's end).
    if (els[first].lead == 0 && others_compute && least > 0) {
      if (!others_alike) return;
      for (size_t j = first + 1; j < els.size(); ++j)
        if (els[j].unit && els[j].kind == "attention") {
          std::vector<Element> out = take_parts(els[j], 0, els[j].lead);
          els[j].lead = 0;
          const size_t n = out.size();
          els.insert(els.begin() + long(j), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
          j += n;
        }
      return;
    }
    Element& a = els[first];
    size_t extra = others_compute && a.lead > least ? a.lead - least : 0;
    if (!others_compute) {
      for (size_t k = 0; k < a.lead; ++k)
        if (computes(a.inner[k])) extra = std::max(extra, k + 1);
      // Views more than one past the others' are not the profiler's: what the caller indexed
      // for all layers (DeBERTa's relative positions, sliced once). A permute among them
      // reorders the map into windows (a windowed block among global ones): the block's.
      const bool reorders = std::any_of(a.inner.begin(), a.inner.begin() + long(a.lead), is_transpose);
      if (a.lead > least + 1 && !reorders) extra = std::max(extra, a.lead - least);
    }
    if (extra == 0) return;
    std::vector<Element> out = take_parts(a, 0, extra);
    a.lead -= extra;
    els.insert(els.begin() + long(first), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
  }
};

}  // namespace

std::vector<Element> attention_units(const TreeBuilder& b, std::vector<Element> els) { return AttentionFinder{b}.attention(std::move(els)); }

}  // namespace strata::annot::infer
