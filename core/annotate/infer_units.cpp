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

size_t past_length_arithmetic(const std::vector<Element>& els, size_t j) {
  size_t end = j;
  bool integer = false;
  for (; end < els.size() && !els[end].unit && in(strip_prefix(els[end].op, "aten::"), {"add", "sub", "mul", "div", "floor_divide", "floor"}); ++end)
    integer |= els[end].op == "aten::floor_divide" || els[end].op == "aten::floor";
  return integer ? end : j;
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

std::vector<Element> take_parts(Element& a, size_t from, size_t to) {
  size_t at = 0, n = 0;
  for (size_t k = 0; k < to; ++k) (k < from ? at : n) += a.inner[k].ops.size();
  a.ops.erase(a.ops.begin() + long(at), a.ops.begin() + long(at + n));
  std::vector<Element> parts(std::make_move_iterator(a.inner.begin() + long(from)), std::make_move_iterator(a.inner.begin() + long(to)));
  a.inner.erase(a.inner.begin() + long(from), a.inner.begin() + long(to));
  return parts;
}

namespace {

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
      if (!els.empty() && els.back().unit && !e.unit && (left_beside(b, els.back().ops.back(), ops[i]) || internal)) {
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
    // A sequence model's conv module computes the output lengths from the input's after its conv
    // ((len + 2 * pad - kernel) // stride + 1): bookkeeping, no residual sum.
    for (size_t j = 0; j < els.size(); ++j)
      if (els[j].unit && els[j].kind == "conv")
        for (size_t k = j + 1, end = past_length_arithmetic(els, j + 1); k < end; ++k) els[k].role = Role::Compute;
    return gates(attention_units(b, permuted_norms(written_activations(rotary_embeddings(written_norms(written_cells(scaled_activations(ghost_norms(weights_set_in_place(standardised_weights(random_masks(std::move(els)))))))))))));
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
             !(from >= 2 && left_beside(b, out[from - 2].ops.back(), out[from - 1].ops.front()) &&
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
    // The squeeze: a global pooling, the mean over the map (timm's SqueezeExcite), or a sum
    // divided by the lengths, views between (the mean over a padded sequence's valid steps): the
    // index after it, or 0.
    auto views = [&](size_t j) { return past_views(els, j, els.size()); };
    auto squeezed = [&](size_t i) -> size_t {
      auto loose = [&](size_t j, std::string_view op) { return j < els.size() && !els[j].unit && els[j].op == op; };
      if ((at(i, Role::Pool) && els[i].op.find("adaptive") != std::string_view::npos) || loose(i, "aten::mean")) return i + 1;
      return loose(i, "aten::sum") && loose(views(i + 1), "aten::div") ? views(i + 1) + 1 : 0;
    };
    // Squeeze and excitation: the squeeze, a weight op, an activation, a weight op, a
    // sigmoid and the product, views between them (an SE block on Linear layers flattens the
    // pooled map and views the scale back): the index after the product, or 0.
    auto excitation = [&](size_t i) -> size_t {
      size_t j = squeezed(i);
      if (!j) return 0;
      j = views(j);
      if (!at(j, Role::Weight) || !at(j = views(j + 1), Role::Activation)) return 0;
      if (sigmoid(j) && product(j + 1)) ++j;  // x * sigmoid(x): a Swish written by hand
      if (!at(j = views(j + 1), Role::Weight) || !sigmoid(j = views(j + 1)) || !product(j = views(j + 1))) return 0;
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
      // A Swish written by hand between its weight ops (x * x.sigmoid()) is one activation.
      for (size_t k = i; kind == std::string_view("squeeze_excitation") && k + 2 < end; ++k)
        if (sigmoid(k) && product(k + 1)) {
          take_ops(els[k], els, k + 1, k + 2);
          els[k].op = "aten::silu";
          els.erase(els.begin() + long(k + 1));
          --end;
        }
      // An SE block on Linear layers calls them as one Sequential between its views (the
      // reference SENet's `fc`): the weights, the activation and the sigmoid, one MLP inside it.
      const size_t pooled = kind == std::string_view("squeeze_excitation") ? squeezed(i) : 0, mlp = past_views(els, pooled, end), gate = end - 1;
      if (pooled && mlp > pooled && before_views(els, gate) < gate) {
        const size_t sig = before_views(els, gate) - 1;
        group_in_place(els, "mlp", mlp, sig + 1);
        end -= sig - mlp;
      }
      out.push_back(grouped(kind, els.begin() + long(i), els.begin() + long(end)));
      i = end;
    }
    return out;
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
    return e.unit && e.kind == "attention" && !e.one_module && separate_projections(e) && !scales_query(e);
  });
}

bool separate_projections(const Element& attention) {
  size_t projections = 0;
  for (const Element& e : attention.inner) {
    if (e.role == Role::Score) break;
    projections += e.unit && e.role == Role::Weight;
  }
  return projections >= 3;
}

bool unscaled_attention(const Element& attention) {
  // Scores by matmul or bmm (baddbmm scales by its alpha, a fused kernel inside), and no
  // product or division from the first projection to the softmax but those that compute a
  // lookup's ids (T5's relative position buckets: a log, divided, scaled, then the bias's
  // embedding).
  if (attention.one_module) return false;
  bool projected = false, scored = false, scaled = false;
  for (const Element& e : attention.inner) {
    if (e.role == Role::Softmax) return scored && !scaled;
    if (e.role == Role::Score && !in(e.op, {"aten::matmul", "aten::bmm"})) return false;
    scored |= projected && e.role == Role::Score;
    if (projected && !e.unit && in(e.op, {"aten::mul", "aten::mul_", "aten::div", "aten::div_"})) scaled = true;
    if (e.unit && e.kind == "embedding") scaled = false;
    projected |= e.unit && e.role == Role::Weight && e.kind != "embedding";
  }
  return false;
}

bool scales_query(const Element& attention) {
  // (Not a rotary embedding's products, whose halves a sum joins before the scores.)
  bool projected = false, scaled = false;
  for (const Element& e : attention.inner) {
    if (e.role == Role::Score) break;
    if (projected && !e.unit && in(e.op, {"aten::mul", "aten::mul_", "aten::div", "aten::div_"})) scaled = true;
    if (!e.unit && e.role == Role::Add) scaled = false;
    projected |= e.unit && e.role == Role::Weight;
  }
  return scaled;
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
