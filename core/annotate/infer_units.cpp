// Leaf units of inferred layers: see core/annotate/infer_units.h and, for what the units are,
// core/annotate/infer_layers.cpp's opening comment.
#include "core/annotate/infer_units.h"

#include "core/annotate/infer_written.h"

#include <algorithm>
#include <optional>

namespace strata::annot::infer {

bool in(std::string_view n, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

Role role_of(std::string_view full) {
  std::string_view n = strip_prefix(full, "aten::");
  if (n.ends_with("_") && !n.ends_with("__")) n.remove_suffix(1);  // in-place spellings: relu_, add_
  if (n.starts_with("conv") || n.starts_with("_conv") || in(n, {"linear", "addmm", "embedding", "embedding_bag", "_embedding_bag",
                                                                  "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell",
                                                                  "rnn_tanh_cell", "rnn_relu_cell", "bilinear", "prelu"}))
    return Role::Weight;
  // (addcmul: beta + alpha * x in one op, the Affine a norm-free MLP normalises with: ResMLP's)
  if (in(n, {"batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm", "native_layer_norm", "addcmul"}))
    return Role::Norm;
  if (in(n, {"relu", "gelu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "celu",
             "softplus", "mish", "hardtanh", "threshold", "relu6", "glu", "log_sigmoid", "softsign", "tanhshrink"}))
    return Role::Activation;
  if (n.find("pool") != std::string_view::npos) return Role::Pool;
  if (n.find("dropout") != std::string_view::npos) return Role::Dropout;
  if (n.starts_with("upsample") || in(n, {"interpolate", "pixel_shuffle", "pixel_unshuffle", "grid_sampler"})) return Role::Resample;
  // A zero padding is a view's work (Swin's windows, a decoder's map padded to its skip); one
  // that reflects or replicates the border is a layer (nn.ReflectionPad2d before a conv).
  if (n.starts_with("reflection_pad") || n.starts_with("replication_pad")) return Role::Pad;
  if (in(n, {"matmul", "bmm", "baddbmm", "mm", "einsum", "scaled_dot_product_attention", "_scaled_dot_product_attention"}))
    return Role::Score;
  if (in(n, {"softmax", "_softmax", "log_softmax"})) return Role::Softmax;
  if (in(n, {"view", "reshape", "transpose", "t", "permute", "contiguous", "as_strided", "expand", "expand_as", "unsqueeze",
             "squeeze", "flatten", "chunk", "split", "split_with_sizes", "unbind", "select", "slice", "narrow", "unflatten",
             "view_as", "clone", "detach", "alias", "to", "_to_copy", "type_as", "movedim", "swapaxes", "copy",
             "_unsafe_view", "_reshape_alias", "unsafe_split", "unsafe_chunk", "repeat", "roll", "pad", "constant_pad_nd", "resolve_conj",
             "resolve_neg"}))
    return Role::Shape;
  if (in(n, {"add", "sub"})) return Role::Add;
  if (in(n, {"cat", "concat", "stack", "_cat"})) return Role::Merge;
  return Role::Compute;
}

// Makes a tensor and computes nothing: an RNN's zero state, the tensors record_function makes.
bool allocates(std::string_view op) { return op == "aten::zeros" || op == "aten::zero_" || op == "aten::empty"; }

bool whole_rnn(std::string_view op) { return op == "aten::lstm" || op == "aten::gru" || op.starts_with("aten::rnn_"); }

bool is_split(std::string_view op) { return op == "aten::chunk" || op.starts_with("aten::split") || op == "aten::unbind"; }

bool is_unit_role(Role r) {
  return r == Role::Weight || r == Role::Norm || r == Role::Activation || r == Role::Pool || r == Role::Dropout ||
         r == Role::Resample || r == Role::Pad;
}

size_t past_views(const std::vector<Element>& els, size_t j, size_t end) {
  while (j < end && !els[j].unit && els[j].role == Role::Shape) ++j;
  return j;
}

size_t before_views(const std::vector<Element>& els, size_t j, size_t from) {
  while (j > from && !els[j - 1].unit && els[j - 1].role == Role::Shape) --j;
  return j;
}

std::string op_sequence(const std::vector<Element>& els, size_t from, size_t to) {
  std::string s;
  for (size_t j = from; j < to; ++j) s.append(els[j].op).push_back(',');
  return s;
}

namespace {

// Takes an attention's parts [from, to) out of it, with their ops (its ops are its parts', in
// order).
std::vector<Element> take_parts(Element& a, size_t from, size_t to) {
  size_t at = 0, n = 0;
  for (size_t k = 0; k < to; ++k) (k < from ? at : n) += a.inner[k].ops.size();
  a.ops.erase(a.ops.begin() + long(at), a.ops.begin() + long(at + n));
  std::vector<Element> parts(std::make_move_iterator(a.inner.begin() + long(from)), std::make_move_iterator(a.inner.begin() + long(to)));
  a.inner.erase(a.inner.begin() + long(from), a.inner.begin() + long(to));
  return parts;
}

struct UnitFinder {
  Context& c;
  const TreeBuilder& b;

  std::string_view name_of(NodeId op) const { return c.name(b.event[op]); }
  // F.pad says its mode only through the op it calls (reflection_pad2d, constant_pad_nd).
  void pad_by_mode(Element& e) const {
    for (EventId k : child_ops(c, b.event[e.ops.front()]))
      if (role_of(c.name(k)) == Role::Pad) {
        e.op = c.name(k);
        e.role = Role::Pad;
        e.kind = "pad";
        return;
      }
  }
  bool left_beside(NodeId before, NodeId op) const { return left_beside_by_rounding(b.end[before], b.begin[op], b.end[op]); }

  // Leaf units over the op nodes: BatchNorm takes the counter it bumps first; attention spans
  // its projections; the rest are single ops.
  std::vector<Element> units(const std::vector<NodeId>& ops) {
    std::vector<Element> els;
    for (size_t i = 0; i < ops.size(); ++i) {
      Element e;
      e.ops = {ops[i]};
      e.op = name_of(ops[i]);
      e.role = role_of(e.op);
      e.kind = c.kind(b.event[ops[i]]);
      if (e.op == "aten::pad") pad_by_mode(e);
      // nn.Flatten and nn.Unflatten are leaf modules of their own (between a trunk and its head).
      // torch.tanh is called as a function (a gate's, an additive attention's scores, a
      // vocoder's output) far more than nn.Tanh is made a module: its op is its caller's, but
      // between two Linears, where a Sequential's MLP has it (a classifier head's).
      e.unit = (is_unit_role(e.role) && e.op != "aten::tanh") || e.op == "aten::flatten" || e.op == "aten::unflatten";
      // What a module does before its main op: BatchNorm bumps its batch counter, an RNN
      // makes its zero initial state.
      const bool rnn = whole_rnn(e.op);
      while (!els.empty() && !els.back().unit &&
             ((e.kind == "batch_norm" && els.back().op == "aten::add_" && e.ops.size() == 1) || (rnn && allocates(els.back().op)))) {
        e.ops.insert(e.ops.begin(), els.back().ops.front());
        els.pop_back();
      }
      if (rnn) take_batch_size_reads(els, e);
      // ...and, given one unsorted, puts its state back in the batch's order after its op.
      if (e.op == "aten::index_select" && !els.empty() && els.back().unit && whole_rnn(els.back().op) &&
          std::any_of(els.back().ops.begin(), els.back().ops.end(), [&](NodeId op) { return name_of(op) == "aten::item"; })) {
        els.back().ops.push_back(ops[i]);
        continue;
      }
      // An op that ran last inside a unit's op (the view LayerNorm and linear return their
      // output through on torch 1.13's CPU, a conv's as_strided), left beside it where the
      // clock's rounding ended both at the same tick: one op of the unit (else it keeps a
      // conv's norm from its group, or stands loose between the unit and its module's end).
      // So is an op of aten's own (its name starts with '_': `_unsafe_view`, `_reshape_alias`,
      // which no model calls, or a lazy conjugate's resolution) that starts at that tick or the
      // next, its end rounded past it.
      const bool internal = (e.op.starts_with("aten::_") || resolves_lazy_bit(e.op)) && !els.empty() &&
                            b.begin[ops[i]] <= b.end[els.back().ops.back()] + 1000;
      if (!els.empty() && els.back().unit && !e.unit && (left_beside(els.back().ops.back(), ops[i]) || internal)) {
        els.back().ops.push_back(ops[i]);
        continue;
      }
      // A linear written with addmm (Hugging Face's Conv1D) flattens its input to a matrix and
      // views the product back: the views right before and after it are its own.
      if (e.op == "aten::addmm" && !els.empty() && !els.back().unit && els.back().op == "aten::view") {
        e.ops.insert(e.ops.begin(), els.back().ops.front());
        els.pop_back();
      }
      if (e.op == "aten::view" && !els.empty() && els.back().unit && els.back().op == "aten::addmm" &&
          name_of(els.back().ops.back()) == "aten::addmm") {
        els.back().ops.push_back(ops[i]);
        continue;
      }
      // An EmbeddingBag may copy its result once more (a copy_ right after its own op, inside
      // the module): one op of the bag.
      if (e.op == "aten::copy_" && !els.empty() && els.back().unit && els.back().op.find("embedding_bag") != std::string_view::npos &&
          name_of(els.back().ops.back()) != "aten::copy_") {
        els.back().ops.push_back(ops[i]);
        continue;
      }
      // An EmbeddingBag given a 2-D batch of bags makes their offsets (arange) and flattens the
      // ids itself.
      if (e.kind == "embedding" && e.op.find("embedding_bag") != std::string_view::npos) {
        size_t k = els.size();
        while (k > 0 && !els[k - 1].unit && els[k - 1].role == Role::Shape && els[k - 1].op != "aten::select") --k;
        if (k < els.size() && k > 0 && !els[k - 1].unit && els[k - 1].op == "aten::arange") {
          std::vector<NodeId> own;
          for (size_t j = k - 1; j < els.size(); ++j) own.insert(own.end(), els[j].ops.begin(), els[j].ops.end());
          e.ops.insert(e.ops.begin(), own.begin(), own.end());
          els.erase(els.begin() + long(k - 1), els.end());
        }
      }
      els.push_back(std::move(e));
    }
    auto linear = [&](size_t j) { return els[j].unit && els[j].kind == "linear"; };
    for (size_t j = 1; j + 1 < els.size(); ++j) {
      size_t next = j + 1;  // dropouts apart (BERT's pooler: dense, Tanh, then the classifier's dropout)
      while (next + 1 < els.size() && els[next].unit && els[next].role == Role::Dropout) ++next;
      if (els[j].op == "aten::tanh" && linear(j - 1) && linear(next)) els[j].unit = true;
    }
    // A Linear's tokens laid out as a map for a conv and flattened back to tokens after it
    // (x.transpose(1, 2).view(b, c, h, w), the conv, x.flatten(2).transpose(1, 2): a
    // feed-forward's depthwise conv) are reshaped: that flatten is no nn.Flatten.
    for (size_t j = 2; j + 1 < els.size(); ++j) {
      if (els[j].op != "aten::flatten" || els[j + 1].unit || els[j + 1].op != "aten::transpose" || !els[j - 1].unit || els[j - 1].kind != "conv")
        continue;
      const size_t laid = before_views(els, j - 1, 0);
      if (laid < j - 1 && laid > 0 && els[laid - 1].unit && els[laid - 1].kind == "linear") els[j].unit = false;
    }
    return attention(permuted_norms(written_gelus(rotary_embeddings(written_norms(written_cells(scaled_activations(ghost_norms(weights_set_in_place(standardised_weights(random_masks(std::move(els))))))))))));
  }

  // A rotary embedding (the RotaryEmbedding module of Llama-style models): positions times the
  // inverse frequencies (an outer product: matmul, einsum, outer or mul), maybe transposed, the
  // angles concatenated with themselves, then their cos and sin, cast back. One unit, from the
  // indexing, casts and expands that make the product's inputs to the last cos or sin and the
  // casts and views after it.
  std::vector<Element> rotary_embeddings(std::vector<Element> els) const {
    auto bare = [&](size_t j) { return j < els.size() && !els[j].unit ? strip_prefix(els[j].op, "aten::") : std::string_view(); };
    auto casts = [&](size_t j) { return in(bare(j), {"to", "_to_copy", "type_as", "unsqueeze", "slice", "as_strided", "select"}); };
    std::vector<Element> out;
    for (size_t i = 0; i < els.size(); ++i) {
      // The product, then (a transpose) the concatenation, then cos and sin (views between).
      const bool product = in(bare(i), {"matmul", "einsum", "outer", "mul"});
      size_t j = i + 1;
      if (product && bare(j) == "transpose") ++j;
      while (product && casts(j)) ++j;
      size_t trig = 0, end = 0;
      if (product && bare(j) == "cat")
        for (size_t k = j + 1; k < els.size() && (casts(k) || in(bare(k), {"cos", "sin"})); ++k)
          if (in(bare(k), {"cos", "sin"})) ++trig, end = k + 1;
      if (trig < 2) {
        out.push_back(std::move(els[i]));
        continue;
      }
      while (in(bare(end), {"to", "_to_copy", "type_as"})) ++end;  // cast back to the model's dtype
      // (Not an op the clock's rounding left beside another that makes none: a transpose's
      // as_strided.)
      size_t from = out.size();
      while (from > 0 && !out[from - 1].unit && prepares_element(out[from - 1]) &&
             !(from >= 2 && left_beside(out[from - 2].ops.back(), out[from - 1].ops.front()) &&
               (out[from - 2].unit || !prepares_element(out[from - 2]))))
        --from;
      Element r = new_unit(Role::Compute, "rotary", els[i].op);
      take_ops(r, out, from, out.size());
      out.resize(from);
      take_ops(r, els, i, end);
      out.push_back(std::move(r));
      i = end - 1;
    }
    return out;
  }
  // What makes an outer product's inputs: index, cast, expand (positions, inverse frequencies).
  static bool prepares_element(const Element& e) {
    return in(strip_prefix(e.op, "aten::"), {"arange", "to", "_to_copy", "float", "type_as", "expand", "unsqueeze", "slice", "select",
                                               "as_strided", "lift_fresh", "detach", "detach_", "empty", "index"});
  }

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
          for (; k < els.size(); ++k) {
            if (els[k].role == Role::Softmax) { sm = k; break; }
            if (els[k].role == Role::Score && position_projection_seen) continue;
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
          return mha_own(j + 1) && !(before && left_beside(before->ops.back(), els[j].ops.front()));
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
    return gates(window_attentions(std::move(out)));
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

  // Gates, one module each: what computes a sigmoid and the product that scales the input by
  // it. Squeeze and excitation: a global pooling, two weight ops with an activation between.
  // An additive attention gate (Attention U-Net's on a skip): two projections, each maybe
  // normed, summed, an activation, a projection to one score, maybe normed.
  static std::vector<Element> gates(std::vector<Element> els) {
    auto at = [&](size_t j, Role role) { return j < els.size() && els[j].unit && els[j].role == role; };
    auto sigmoid = [&](size_t j) { return at(j, Role::Activation) && (els[j].op.find("sigmoid") != std::string_view::npos); };
    auto product = [&](size_t j) { return j < els.size() && !els[j].unit && els[j].op.starts_with("aten::mul"); };
    auto normed = [&](size_t j) { return at(j, Role::Weight) ? (at(j + 1, Role::Norm) ? j + 2 : j + 1) : 0; };  // past it, or 0
    auto additive = [&](size_t i) -> size_t {  // the product's index, or 0
      const size_t g = normed(i), x = g ? normed(g) : 0;
      if (!x || x >= els.size() || els[x].unit || els[x].role != Role::Add || !at(x + 1, Role::Activation)) return 0;
      const size_t psi = normed(x + 2);
      return psi && sigmoid(psi) && product(psi + 1) ? psi + 1 : 0;
    };
    // Squeeze and excitation: a global pooling (or mean), a weight op, an activation, a weight op, a
    // sigmoid and the product, views between them (an SE block on Linear layers flattens the
    // pooled map and views the scale back): the index after the product, or 0.
    auto excitation = [&](size_t i) -> size_t {
      // (The squeeze: a global pooling, or the mean over the map: timm's SqueezeExcite.)
      const bool squeeze = (at(i, Role::Pool) && els[i].op.find("adaptive") != std::string_view::npos) ||
                           (i < els.size() && !els[i].unit && els[i].op == "aten::mean");
      if (!squeeze) return 0;
      auto views = [&](size_t j) { return past_views(els, j, els.size()); };
      size_t j = views(i + 1);
      if (!at(j, Role::Weight) || !at(j = views(j + 1), Role::Activation) || !at(j = views(j + 1), Role::Weight) || !sigmoid(j = views(j + 1)) ||
          !product(j = views(j + 1)))
        return 0;
      return j + 1;
    };
    // A gated unit: a tensor split in two, one half through a unit or two (a norm and a
    // projection across the tokens: gMLP's spatial gating unit; an activation: GEGLU) and
    // multiplied with the other, with the projection right before the split when one makes
    // both halves (GEGLU's proj): the index after the product, or 0.
    auto gated = [&](size_t i) -> size_t {
      const size_t split = at(i, Role::Weight) && i + 1 < els.size() ? i + 1 : i;
      if (split >= els.size() || els[split].unit || !is_split(els[split].op)) return 0;
      // One half through units, the other as it is: one activation at most (a highway's two
      // halves each go through one: no gated unit).
      size_t units = 0, activations = 0, j = split + 1;
      for (; j < els.size() && (els[j].unit || (els[j].role == Role::Shape && !is_split(els[j].op))); ++j) {
        units += els[j].unit;
        activations += els[j].unit && els[j].role == Role::Activation;
      }
      return units >= 1 && units <= 2 && activations <= 1 && product(j) ? j + 1 : 0;
    };
    // Split attention (SKNet's selective kernel, ResNeSt's split-attention conv): the branches
    // summed (a split's parts added, or stacked and summed), the sum pooled globally, a weight
    // op (maybe normed) and its activation, a weight op, a softmax across the branches (views
    // around it), then the branches weighted and summed: the index after that sum, or 0.
    auto selective = [&](size_t i) -> size_t {
      auto loose_op = [&](size_t j, std::initializer_list<std::string_view> ops) {
        return j < els.size() && !els[j].unit && in(strip_prefix(els[j].op, "aten::"), ops);
      };
      size_t j = i;
      while (loose_op(j, {"split", "stack", "add", "sum"})) ++j;
      const bool squeeze = j > i && ((at(j, Role::Pool) && els[j].op.find("adaptive") != std::string_view::npos) || loose_op(j, {"mean"}));
      if (!squeeze) return 0;
      auto views = [&](size_t k) { return past_views(els, k, els.size()); };
      if (!at(j = views(j + 1), Role::Weight)) return 0;
      if (at(j = views(j + 1), Role::Norm)) j = views(j + 1);
      if (!at(j, Role::Activation) || !at(j = views(j + 1), Role::Weight)) return 0;
      j = views(j + 1);
      if (j >= els.size() || els[j].unit || els[j].role != Role::Softmax || !product(j = views(j + 1))) return 0;
      while (product(j)) ++j;
      if (!loose_op(j, {"add", "sum"})) return 0;
      while (loose_op(j, {"add", "sum"})) ++j;
      return j;
    };
    std::vector<Element> out;
    for (size_t i = 0; i < els.size();) {
      size_t end = excitation(i);
      const char* kind = "squeeze_excitation";
      if (const size_t k = end ? 0 : selective(i)) {
        // Where a split makes the branches, of one conv's output (ResNeSt's radix groups), that
        // conv with its norm and activation is the module's.
        end = k, kind = "split_attention";
        if (is_split(els[i].op) && !out.empty() && out.back().unit && out.back().role == Role::Activation) {
          size_t from = out.size() - 1;
          if (from > 0 && out[from - 1].unit && out[from - 1].role == Role::Norm) --from;
          if (from > 0 && out[from - 1].unit && out[from - 1].role == Role::Weight) {
            std::vector<Element> parts(std::make_move_iterator(out.begin() + long(from - 1)), std::make_move_iterator(out.end()));
            out.resize(from - 1);
            parts.insert(parts.end(), std::make_move_iterator(els.begin() + long(i)), std::make_move_iterator(els.begin() + long(end)));
            out.push_back(grouped(kind, parts.begin(), parts.end()));
            i = end;
            continue;
          }
        }
      }
      if (const size_t g = end ? 0 : gated(i)) end = g, kind = "gate";
      if (const size_t p = end ? 0 : additive(i)) end = p + 1, kind = "attention_gate";
      if (end == 0) {
        out.push_back(std::move(els[i++]));
        continue;
      }
      // An SE block on Linear layers calls them as one Sequential between its views (the
      // reference SENet's `fc`): the weights, the activation and the sigmoid, one MLP inside it.
      const size_t mlp = past_views(els, i + 1, end), gate = end - 1;
      if (kind == std::string_view("squeeze_excitation") && mlp > i + 1 && before_views(els, gate) < gate) {
        const size_t sig = before_views(els, gate) - 1;
        Element fc = grouped("mlp", els.begin() + long(mlp), els.begin() + long(sig + 1));
        els.erase(els.begin() + long(mlp) + 1, els.begin() + long(sig + 1));
        els[mlp] = std::move(fc);
        end -= sig - mlp;
      }
      out.push_back(grouped(kind, els.begin() + long(i), els.begin() + long(end)));
      i = end;
    }
    return out;
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

std::vector<Element> leaf_units(Context& c, const TreeBuilder& b, const std::vector<NodeId>& ops) { return UnitFinder{c, b}.units(ops); }

// A post-norm layer written by hand (BERT's: separate query, key and value modules) ends
// each half with an output module: the projection, its dropout, the add and the norm (HF's
// SelfOutput and Output), so the attention ends at its weighted sum. nn.MultiheadAttention
// (one packed in-projection) keeps its out-projection.
// One that scales its query before the scores (q_proj(x) * scaling: BART's, DistilBERT's, as
// fairseq writes attention) keeps its out-projection, the layer adding and norming after it;
// BERT's scales the scores.
bool output_modules(const std::vector<Element>& els, bool pre_norm) {
  return !pre_norm && std::any_of(els.begin(), els.end(), [](const Element& e) {
    if (!e.unit || e.kind != "attention" || e.one_module) return false;
    size_t projections = 0;
    bool query_scaled = false;
    for (const Element& in : e.inner) {
      if (in.role == Role::Score) break;
      projections += in.unit && in.role == Role::Weight;
      query_scaled |= projections > 0 && !in.unit && (in.op == "aten::mul" || in.op == "aten::div");
    }
    return projections >= 3 && !query_scaled;
  });
}

// Where els[i] is followed by its dropout (or not), the add and the norm: the norm's index.
size_t add_and_norm_after(const std::vector<Element>& els, size_t i, size_t end) {
  size_t k = i + 1;
  if (k < end && els[k].unit && els[k].role == Role::Dropout) ++k;
  const bool found = k + 1 < end && !els[k].unit && els[k].role == Role::Add && els[k + 1].unit && els[k + 1].role == Role::Norm;
  return found ? k + 1 : 0;
}

// The out-projection (its views after it) of an attention that an add and norm follow, out of
// the attention: the output module's.
void split_output_projections(std::vector<Element>& els) {
  for (size_t j = 0; j < els.size(); ++j) {
    Element& a = els[j];
    if (!a.unit || a.kind != "attention" || a.inner.empty()) continue;
    size_t w = a.inner.size();
    while (w > 0 && a.inner[w - 1].role == Role::Shape && !a.inner[w - 1].unit) --w;
    if (w == 0 || !a.inner[w - 1].unit || a.inner[w - 1].role != Role::Weight) continue;
    --w;
    if (add_and_norm_after(els, j, els.size()) == 0) continue;
    std::vector<Element> tail = take_parts(a, w, a.inner.size());
    els.insert(els.begin() + long(j + 1), std::make_move_iterator(tail.begin()), std::make_move_iterator(tail.end()));
  }
}

}  // namespace strata::annot::infer

namespace strata::annot {

bool is_shape_op(std::string_view n) { return infer::role_of(n) == infer::Role::Shape; }

bool is_weight_op(std::string_view n) {
  const infer::Role r = infer::role_of(n);
  return r == infer::Role::Weight || (r == infer::Role::Norm && n != "aten::addcmul");
}

}  // namespace strata::annot
