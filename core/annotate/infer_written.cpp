// Leaf units written by hand or spread over several ops: a weight-standardised conv, a random
// mask, an LSTM cell, GELU, a permuted or hand-written norm. Passes over the forward's elements
// that UnitFinder (infer_units.cpp) runs before it finds attention and gates.
#include "core/annotate/infer_written.h"

namespace strata::annot::infer {

// A unit element: what `op` starts, of `role` and `kind`; its ops are added by the caller.
Element new_unit(Role role, std::string_view kind, std::string_view op) {
  Element u;
  u.unit = true;
  u.role = role;
  u.kind = kind;
  u.op = op;
  return u;
}
// Appends the ops of the elements in [b, e) to u's.
void take_ops(Element& u, std::vector<Element>::const_iterator b, std::vector<Element>::const_iterator e) {
  for (auto it = b; it != e; ++it) u.ops.insert(u.ops.end(), it->ops.begin(), it->ops.end());
}
void take_ops(Element& u, const std::vector<Element>& els, size_t from, size_t to) {
  take_ops(u, els.begin() + long(from), els.begin() + long(to));
}

// One unit of the elements in [b, e), moved inside it (a gate, an attention's bias MLP).
Element grouped(std::string_view kind, std::vector<Element>::iterator b, std::vector<Element>::iterator e) {
  Element g = new_unit(Role::Weight, kind, b->op);
  take_ops(g, b, e);
  g.inner.assign(std::make_move_iterator(b), std::make_move_iterator(e));
  return g;
}
void group_in_place(std::vector<Element>& els, std::string_view kind, size_t from, size_t to) {
  Element g = grouped(kind, els.begin() + long(from), els.begin() + long(to));
  els.erase(els.begin() + long(from) + 1, els.begin() + long(to));
  els[from] = std::move(g);
}

// What an element does, views apart (the profiler records one more or less), for comparing
// runs of elements.
void add_work(std::string& sig, const Element& e) {
  if (e.role != Role::Shape) sig += std::string(e.op) + ",";
}

// A weight standardised by hand right before its op (BiT's StdConv2d as TransUNet writes it:
// var_mean, w - m, v + eps, its root, the division, then F.conv2d) is the op's where that
// precedes three weight ops or more; once, before the model's first, it normalises the input (a
// series' instance norm).
static std::vector<Element> standardised_by_hand(std::vector<Element> els) {
  static constexpr std::string_view ops[] = {"aten::var_mean", "aten::sub", "aten::add", "aten::sqrt", "aten::div"};
  constexpr size_t n = std::size(ops);
  auto standardised = [&](size_t w) {
    if (w < n || !els[w].unit || els[w].role != Role::Weight || !(els[w].kind == "conv" || els[w].kind == "linear")) return false;
    for (size_t k = 0; k < n; ++k)
      if (els[w - n + k].unit || els[w - n + k].op != ops[k]) return false;
    return true;
  };
  std::vector<uint8_t> own(els.size(), 0);
  size_t count = 0;
  for (size_t w = 0; w < els.size(); ++w) count += own[w] = standardised(w);
  if (count < 3) return els;
  std::vector<Element> out;
  out.reserve(els.size());
  for (size_t w = 0; w < els.size(); ++w) {
    out.push_back(std::move(els[w]));
    if (!own[w]) continue;
    Element unit = std::move(out.back());
    out.pop_back();
    std::vector<NodeId> before;
    for (size_t j = out.size() - n; j < out.size(); ++j) before.insert(before.end(), out[j].ops.begin(), out[j].ops.end());
    unit.ops.insert(unit.ops.begin(), before.begin(), before.end());
    out.resize(out.size() - n);
    out.push_back(std::move(unit));
  }
  return out;
}

// A weight op scaled by hand (the equalized learning rate: ProGAN's WSConv2d and WSLinear,
// conv(x * scale) + bias.view(1, -1, 1, 1)): the product right before the op and the bias's
// views and sum right after are the op's, where that pattern surrounds three weight ops or
// more (one product before one conv is a caller's: a squeeze-excitation's scale). Where an
// activation and a product follow the sum, the bias, the activation and its gain are one
// activation module (StyleGAN2's FusedLeakyReLU after its EqualConv2d), the op keeps its product.
static std::vector<Element> scaled_by_hand(std::vector<Element> els) {
  auto loose = [&](size_t j, std::string_view op) { return j < els.size() && !els[j].unit && els[j].op == op; };
  auto bias_end = [&](size_t w) -> size_t {  // the index after the bias's sum, or 0
    size_t j = w + 1;
    if (!loose(j, "aten::view") && !loose(j, "aten::reshape")) return 0;
    while (j < els.size() && !els[j].unit && els[j].role == Role::Shape) ++j;
    return loose(j, "aten::add") ? j + 1 : 0;
  };
  auto scaled = [&](size_t w) {
    return w > 0 && els[w].unit && els[w].role == Role::Weight && (els[w].kind == "conv" || els[w].kind == "linear") &&
           loose(w - 1, "aten::mul") && bias_end(w) != 0;
  };
  auto fused = [&](size_t end) {  // an activation and its gain after the bias's sum
    return end + 1 < els.size() && els[end].unit && els[end].role == Role::Activation && loose(end + 1, "aten::mul");
  };
  size_t count = 0;
  for (size_t w = 0; w < els.size(); ++w) count += scaled(w);
  if (count < 3) return els;
  auto joined = [&](size_t from, size_t to, size_t unit) {  // els[unit] with the ops of [from, to) in order
    std::vector<NodeId> ops;
    for (size_t j = from; j < to; ++j) ops.insert(ops.end(), els[j].ops.begin(), els[j].ops.end());
    Element u = std::move(els[unit]);
    u.ops = std::move(ops);
    return u;
  };
  std::vector<Element> out;
  out.reserve(els.size());
  for (size_t w = 0; w < els.size(); ++w) {
    if (w + 1 < els.size() && scaled(w + 1)) {
      const size_t end = bias_end(w + 1);
      if (fused(end)) {
        out.push_back(joined(w, w + 2, w + 1));
        out.push_back(joined(w + 2, end + 2, end));
        w = end + 1;
      } else {
        out.push_back(joined(w, end, w + 1));
        w = end - 1;
      }
      continue;
    }
    // In such a model a weight op with no bias of its own is scaled the same (a shortcut's).
    if (w + 1 < els.size() && loose(w, "aten::mul") && els[w + 1].unit && els[w + 1].role == Role::Weight &&
        (els[w + 1].kind == "conv" || els[w + 1].kind == "linear")) {
      out.push_back(joined(w, w + 2, w + 1));
      ++w;
      continue;
    }
    out.push_back(std::move(els[w]));
  }
  return out;
}

// A weight-standardised conv (NFNet's ScaledStdConv2d, BiT's StdConv2d): its weight
// flattened (a view), its gain computed and viewed, the weight normalised by batch_norm
// with no running statistics (no batch counter bumped) and reshaped back as the weight
// (reshape_as), then the conv. One weight unit, from the first view before the norm.
std::vector<Element> standardised_weights(std::vector<Element> els) {
  els = scaled_by_hand(standardised_by_hand(std::move(els)));
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    Element& e = els[i];
    const bool standardises = e.unit && e.kind == "batch_norm" && e.ops.size() == 1 && i + 2 < els.size() && !els[i + 1].unit &&
                              (els[i + 1].op == "aten::reshape_as" || els[i + 1].op == "aten::view_as") && els[i + 2].unit &&
                              els[i + 2].role == Role::Weight && (els[i + 2].kind == "conv" || els[i + 2].kind == "linear");
    if (!standardises) {
      out.push_back(std::move(e));
      continue;
    }
    size_t lo = out.size();
    while (lo > 0 && !out[lo - 1].unit && (out[lo - 1].role == Role::Shape || out[lo - 1].role == Role::Compute)) --lo;
    while (lo < out.size() && out[lo].role != Role::Shape) ++lo;
    Element w = std::move(els[i + 2]);
    std::vector<NodeId> own;
    for (size_t j = lo; j < out.size(); ++j) own.insert(own.end(), out[j].ops.begin(), out[j].ops.end());
    own.insert(own.end(), e.ops.begin(), e.ops.end());
    own.insert(own.end(), els[i + 1].ops.begin(), els[i + 1].ops.end());
    w.ops.insert(w.ops.begin(), own.begin(), own.end());
    out.erase(out.begin() + long(lo), out.end());
    out.push_back(std::move(w));
    i += 2;
  }
  return out;
}

// A weight written in place before its op (PixelCNN's MaskedConv2d: self.weight.data *=
// self.mask, then the conv): the op that makes the value and the `.data` assignment's check
// (aten::_has_compatible_shallow_copy_type, which only a tensor's data being set runs) are the
// weight op's module's, weight and bias alike.
std::vector<Element> weights_set_in_place(std::vector<Element> els) {
  std::vector<Element> out;
  auto sets_data = [&](size_t j) { return !out[j].unit && out[j].op == "aten::_has_compatible_shallow_copy_type"; };
  for (size_t i = 0; i < els.size(); ++i) {
    Element& e = els[i];
    size_t lo = out.size();
    if (e.unit && e.role == Role::Weight)
      while (lo >= 2 && sets_data(lo - 1) && !out[lo - 2].unit && out[lo - 2].role != Role::Shape) lo -= 2;
    if (lo < out.size()) {
      std::vector<NodeId> own;
      for (size_t j = lo; j < out.size(); ++j) own.insert(own.end(), out[j].ops.begin(), out[j].ops.end());
      e.ops.insert(e.ops.begin(), own.begin(), own.end());
      out.erase(out.begin() + long(lo), out.end());
    }
    out.push_back(std::move(e));
  }
  return out;
}

// Swish written by hand (x * torch.sigmoid(x): a speech model's Swish module): a sigmoid whose
// input the product after it takes too (the backward sums that input's two gradients), then
// the product; one activation, as F.silu is. A squeeze-excitation's sigmoid scales another
// tensor, its input no other op's.
std::vector<Element> written_swishes(std::vector<Element> els) {
  std::vector<Element> out;
  out.reserve(els.size());
  for (size_t i = 0; i < els.size(); ++i) {
    Element& e = els[i];
    const bool swish = e.unit && e.op == "aten::sigmoid" && e.ops.size() == 1 && e.shares_input && i + 1 < els.size() &&
                       !els[i + 1].unit && els[i + 1].op == "aten::mul";
    out.push_back(std::move(e));
    if (!swish) continue;
    take_ops(out.back(), els, i + 1, i + 2);
    out.back().op = "aten::silu";
    ++i;
  }
  return out;
}

// Convs back to back on one input (the backward shows each but the last taking an input a
// later op takes too, and the last as well where the caller takes it after: a residual sum),
// their results stacked and averaged at once: kernels of several sizes in parallel, one module
// (TimesNet's Inception_Block_V1).
std::vector<Element> parallel_convs(std::vector<Element> els) {
  auto conv = [&](size_t j) { return j < els.size() && els[j].unit && els[j].role == Role::Weight && els[j].kind == "conv"; };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    size_t k = i;
    while (conv(k) && (k == i || els[k - 1].shares_input)) ++k;
    // Their results stacked and reduced into one (a chain of convs whose outputs are kept, an
    // aggregation's projections concatenated, shows the same inputs shared).
    const bool reduced = k + 1 < els.size() && !els[k].unit && els[k].role == Role::Merge && !els[k + 1].unit &&
                         in(els[k + 1].op, {"aten::mean", "aten::sum"});
    if (k - i < 2 || !reduced) {
      out.push_back(std::move(els[i]));
      continue;
    }
    out.push_back(grouped("parallel_convs", els.begin() + long(i), els.begin() + long(k + 2)));
    i = k + 1;
  }
  return out;
}

// An RNN given a packed sequence reads its first batch size to the host (batch_sizes[0],
// int(): select, item) and makes its zero state: the ops right before its own, its module's.
void take_batch_size_reads(std::vector<Element>& els, Element& rnn) {
  size_t k = els.size();
  bool read = false;
  while (k > 0 && !els[k - 1].unit &&
         (allocates(els[k - 1].op) || in(els[k - 1].op, {"aten::select", "aten::as_strided", "aten::item", "aten::_local_scalar_dense"}))) {
    read |= els[k - 1].op == "aten::item";
    --k;
  }
  if (!read) return;
  std::vector<NodeId> own;
  for (size_t j = k; j < els.size(); ++j) own.insert(own.end(), els[j].ops.begin(), els[j].ops.end());
  rnn.ops.insert(rnn.ops.begin(), own.begin(), own.end());
  els.erase(els.begin() + long(k), els.end());
}

// Ghost batch normalisation (TabNet's GBN): the batch chunked, one BatchNorm module applied to
// each chunk, the chunks concatenated back. One norm unit, from the chunk to the concatenation,
// the BatchNorm's calls inside it.
std::vector<Element> ghost_norms(std::vector<Element> els) {
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    size_t end = i + 1;
    if (!els[i].unit && is_split(els[i].op))
      while (end < els.size() && els[end].unit && els[end].role == Role::Norm && els[end].inner.empty() && els[end].kind == els[i + 1].kind) ++end;
    if (end - i < 3 || end == els.size() || els[end].unit || els[end].role != Role::Merge) {
      out.push_back(std::move(els[i]));
      continue;
    }
    Element norm = grouped("ghost_norm", els.begin() + long(i), els.begin() + long(end + 1));
    norm.role = Role::Norm;
    out.push_back(std::move(norm));
    i = end;
  }
  return out;
}

// A scaled activation's in-place product right after its op (NFNet's GammaAct:
// gelu(x).mul_(gamma)) is the activation's. So is a ReLU squared (Primer's squared ReLU), with
// the scale and bias after the square when both follow (MetaFormer's StarReLU:
// s * relu(x) ** 2 + b): a sum alone after the square may be a residual join and stays loose.
std::vector<Element> scaled_activations(std::vector<Element> els) {
  auto loose = [&](size_t j, std::string_view op) { return j < els.size() && !els[j].unit && els[j].op == op; };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    Element& e = els[i];
    const bool after_activation = !out.empty() && out.back().unit && out.back().role == Role::Activation;
    size_t take = 0;
    if (after_activation && out.back().ops.size() == 1 && loose(i, "aten::mul_")) take = 1;
    if (after_activation && out.back().op.starts_with("aten::relu") && out.back().ops.size() == 1 && loose(i, "aten::pow"))
      take = loose(i + 1, "aten::mul") && loose(i + 2, "aten::add") ? 3 : 1;
    if (take == 0) {
      out.push_back(std::move(e));
      continue;
    }
    take_ops(out.back(), els, i, i + take);
    i += take - 1;
  }
  return out;
}

// A random mask applied by a product (StochasticDepth, DropPath, a dropout written by hand):
// the tensor made for the mask, its bernoulli draw (or a uniform draw plus the keep
// probability, floored: timm's first drop_path), its scaling and the product are one dropout
// unit.
std::vector<Element> random_masks(std::vector<Element> els) {
  auto loose = [&](size_t j, std::initializer_list<std::string_view> prefixes) {
    if (j >= els.size() || els[j].unit) return false;
    for (std::string_view p : prefixes)
      if (els[j].op.starts_with(p)) return true;
    return false;
  };
  // The uniform draw: rand, the keep probability added, floor_ (where the floor follows).
  auto floored_draw = [&](size_t i) -> size_t {  // the floor's index, or 0
    if (!loose(i, {"aten::rand"})) return 0;
    const size_t f = loose(i + 1, {"aten::add"}) ? i + 2 : i + 1;
    return loose(f, {"aten::floor"}) ? f : 0;
  };
  std::vector<Element> out;
  // A unit drawn at els[i], with the tensor made for the draw (empty, new_empty) just before.
  auto drawn = [&](std::string_view kind, size_t i) {
    Element d = new_unit(Role::Dropout, kind, els[i].op);
    size_t lo = out.size();
    while (lo > 0 && !out[lo - 1].unit && (out[lo - 1].op.starts_with("aten::empty") || out[lo - 1].op.starts_with("aten::new_empty")))
      --lo;
    take_ops(d, out, lo, out.size());
    out.erase(out.begin() + long(lo), out.end());
    return d;
  };
  for (size_t i = 0; i < els.size(); ++i) {
    // Noise drawn and added (StyleGAN's NoiseInjection: x + weight * noise, the noise a fresh
    // tensor's normal_ draw): one unit; its sum joins no branch back.
    if (loose(i, {"aten::normal", "aten::randn"}) && loose(i + 1, {"aten::mul"}) && loose(i + 2, {"aten::add"})) {
      Element d = drawn("noise", i);
      take_ops(d, els, i, i + 3);
      out.push_back(std::move(d));
      i += 2;
      continue;
    }
    const size_t floor = floored_draw(i);
    if (!loose(i, {"aten::bernoulli"}) && floor == 0) {
      out.push_back(std::move(els[i]));
      continue;
    }
    Element d = drawn("dropout", i);
    d.ops.insert(d.ops.end(), els[i].ops.begin(), els[i].ops.end());
    auto take = [&](size_t j) { d.ops.insert(d.ops.end(), els[j].ops.begin(), els[j].ops.end()); };
    while (i < floor) take(++i);
    while (loose(i + 1, {"aten::div"})) take(++i);
    if (loose(i + 1, {"aten::mul"})) take(++i);
    out.push_back(std::move(d));
  }
  return out;
}

// An LSTM cell written by hand (a ConvLSTM's, a cell unrolled in Python): the input and the
// hidden state concatenated, one weight op computing all the gates, split, then the gates'
// sigmoids and the candidate's tanh combined by products and a sum into the new cell state,
// and its tanh times the output gate. One unit, from the concatenation to the last product.
std::vector<Element> written_cells(std::vector<Element> els) {
  auto loose = [&](size_t j, std::initializer_list<std::string_view> ops) { return j < els.size() && !els[j].unit && in(els[j].op, ops); };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    const size_t weight = loose(i, {"aten::cat"}) ? i + 1 : i;
    if (weight + 1 >= els.size() || !els[weight].unit || els[weight].role != Role::Weight || !(loose(weight + 1, {"aten::split", "aten::chunk"}))) {
      out.push_back(std::move(els[i]));
      continue;
    }
    size_t sigmoids = 0, tanhs = 0, products = 0, sums = 0, end = 0;
    for (size_t j = weight + 2; j < els.size(); ++j) {
      const Element& e = els[j];
      if (e.unit ? e.role != Role::Activation || e.op.find("sigmoid") == std::string_view::npos
                 : !in(e.op, {"aten::tanh", "aten::mul", "aten::add", "aten::sub", "aten::rsub"}) && e.role != Role::Shape)
        break;
      sigmoids += e.unit;
      tanhs += e.op == "aten::tanh";
      sums += e.op == "aten::add";
      if (e.op == "aten::mul") ++products, end = j + 1;
    }
    if (sigmoids < 2 || tanhs < 1 || products < 2 || sums < 1 || end == 0) {
      out.push_back(std::move(els[i]));
      continue;
    }
    Element cell = new_unit(Role::Weight, "lstm_cell", els[weight].op);
    take_ops(cell, els, i, end);
    out.push_back(std::move(cell));
    i = end - 1;
  }
  return out;
}

// GELU written by hand: the tanh approximation (GPT-2's NewGELU, `gelu_fast`):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), products, sums and a power before the
// tanh; or the exact one (BERT's original `gelu`): x 0.5 (1 + erf(x / sqrt(2))), a product
// and a division before the erf. Then (1 + tanh or erf) times x. One activation unit.
std::vector<Element> written_activations(std::vector<Element> els) {
  auto loose_arithmetic = [](const Element& e) { return !e.unit && in(strip_prefix(e.op, "aten::"), {"mul", "add", "pow"}); };
  auto scaling = [](const Element& e) { return !e.unit && in(strip_prefix(e.op, "aten::"), {"mul", "div"}); };
  auto arithmetic = [&](size_t j) { return j < els.size() && loose_arithmetic(els[j]); };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    // Its sigmoid approximation (CLIP's QuickGELU): x * sigmoid(1.702 * x), the scaled
    // input a weight op's output.
    if (els[i].unit && els[i].op == "aten::sigmoid" && out.size() >= 2 && out.back().op == "aten::mul" && !out.back().unit &&
        out[out.size() - 2].unit && out[out.size() - 2].role == Role::Weight && arithmetic(i + 1) && els[i + 1].op == "aten::mul") {
      Element g = new_unit(Role::Activation, "activation", "aten::gelu");
      take_ops(g, out, out.size() - 1, out.size());
      out.pop_back();
      take_ops(g, els, i, i + 2);
      out.push_back(std::move(g));
      ++i;
      continue;
    }
    // A sine of a learned frequency between two weight ops (sin(w * x): a SIREN layer's, Hyena's
    // implicit filter's Sin module): one activation. Positions' sines (a sinusoidal encoding, a
    // rotary angle) follow no weight op.
    if (!els[i].unit && els[i].op == "aten::mul" && i + 2 < els.size() && !els[i + 1].unit && els[i + 1].op == "aten::sin" &&
        els[i + 2].unit && els[i + 2].role == Role::Weight && !out.empty() && out.back().unit && out.back().role == Role::Weight) {
      Element g = new_unit(Role::Activation, "activation", "aten::sin");
      take_ops(g, els, i, i + 2);
      out.push_back(std::move(g));
      ++i;
      continue;
    }
    // A GLU written by hand (x[:, :d] * torch.sigmoid(x[:, d:]): TabNet's GLU_Layer): the
    // two slices of a unit's output, the sigmoid of one, their product; one activation, as
    // F.glu is.
    if (els[i].unit && els[i].op == "aten::sigmoid" && arithmetic(i + 1) && els[i + 1].op == "aten::mul") {
      size_t from = out.size(), slices = 0;
      while (from > 0 && !out[from - 1].unit && (out[from - 1].op == "aten::slice" || out[from - 1].op == "aten::as_strided"))
        slices += out[--from].op == "aten::slice";
      if (slices >= 2 && from > 0 && out[from - 1].unit) {
        Element g = new_unit(Role::Activation, "activation", "aten::glu");
        take_ops(g, out, from, out.size());
        out.resize(from);
        take_ops(g, els, i, i + 2);
        out.push_back(std::move(g));
        ++i;
        continue;
      }
    }
    const bool tanh = els[i].op == "aten::tanh", erf = !els[i].unit && els[i].op == "aten::erf";
    size_t from = out.size(), muls = 0;
    while (tanh && from > 0 && loose_arithmetic(out[from - 1])) {
      --from;
      muls += out[from].op == "aten::mul" || out[from].op == "aten::pow";
    }
    while (erf && from > 0 && out.size() - from < 2 && scaling(out[from - 1])) --from, ++muls;
    const bool formed = (tanh && muls >= 3) || (erf && muls >= 1);
    if (!formed || !arithmetic(i + 1) || els[i + 1].op != "aten::add" || !arithmetic(i + 2) || els[i + 2].op != "aten::mul") {
      out.push_back(std::move(els[i]));
      continue;
    }
    Element g = new_unit(Role::Activation, "activation", "aten::gelu");
    take_ops(g, out, from, out.size());
    // The 0.5 taken last where no product opens the run (else the one after is another's: a
    // GeGLU's gate).
    const bool halved_first = out[from].op == "aten::mul";
    out.resize(from);
    const size_t end = i + 3 + (!halved_first && arithmetic(i + 3) && els[i + 3].op == "aten::mul");
    take_ops(g, els, i, end);
    out.push_back(std::move(g));
    i = end - 1;
  }
  return out;
}

// A norm over channels-first maps applied channels-last: the permute right before it and
// the permute back right after it are the norm's own (a LayerNorm2d). A permute on one side
// only is the model's (ConvNeXt's block permutes once before its norm, once after its MLP).
std::vector<Element> permuted_norms(std::vector<Element> els) {
  auto permute = [&](size_t j) { return j < els.size() && !els[j].unit && els[j].op == "aten::permute"; };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size(); ++i) {
    if (i > 0 && permute(i - 1) && els[i].unit && els[i].role == Role::Norm && permute(i + 1)) {
      Element n = els[i];
      n.ops.insert(n.ops.begin(), out.back().ops.begin(), out.back().ops.end());
      n.ops.insert(n.ops.end(), els[i + 1].ops.begin(), els[i + 1].ops.end());
      n.inner = {std::move(out.back()), std::move(els[i]), std::move(els[i + 1])};
      ++i;
      // The strided view torch 1.13 records right after a permute is the permute's.
      if (i + 1 < els.size() && !els[i + 1].unit && els[i + 1].op == "aten::as_strided") {
        n.ops.insert(n.ops.end(), els[i + 1].ops.begin(), els[i + 1].ops.end());
        n.inner.push_back(std::move(els[++i]));
      }
      out.back() = std::move(n);
      continue;
    }
    out.push_back(std::move(els[i]));
  }
  return out;
}

// A normalisation written by hand (RMSNorm in Llama and T5, a channels-first LayerNorm, a
// GRN): a statistic of the input (the mean of its square, or its centred variance), its
// inverse square root applied, then the scale and, when centred, the shift. One norm unit.
std::vector<Element> written_norms(std::vector<Element> els) {
  auto name = [&](size_t k) -> std::string_view {
    if (k >= els.size() || els[k].unit) return {};
    std::string_view n = strip_prefix(els[k].op, "aten::");
    if (n.ends_with("_")) n.remove_suffix(1);
    return n;
  };
  auto cast = [&](size_t k) { return in(name(k), {"to", "_to_copy", "type_as", "float"}); };
  auto shape = [&](size_t k) { return !name(k).empty() && role_of(els[k].op) == Role::Shape; };
  // Past up to `most` shape ops to `op`: the index after it, or 0.
  auto through = [&](size_t k, std::string_view op, size_t most) -> size_t {
    for (size_t n = 0; n <= most; ++n, ++k) {
      if (name(k) == op) return k + 1;
      if (!shape(k)) return 0;
    }
    return 0;
  };
  struct Match {
    size_t end = 0;  // 0: no norm starts here
    std::string_view kind;
  };
  // After the statistics, the weight applied first, in Python's order of evaluation:
  // gamma[:, None] * (x - mean) / (var + eps).sqrt() + beta[:, None] (a global layer norm's):
  // the weight's views, the centring, its product, the epsilon, the root, the division, the
  // bias's views and sum. The index after the bias, or 0.
  auto scaled_first = [&](size_t j) -> size_t {
    while (shape(j)) ++j;
    if (name(j) == "sub") ++j;
    if (name(j) != "mul" || name(j + 1) != "add" || name(j + 2) != "sqrt" || name(j + 3) != "div") return 0;
    j += 4;
    while (shape(j)) ++j;
    return name(j) == "add" ? j + 1 : j;
  };
  auto match = [&](size_t s) -> Match {
    size_t j = s;
    while (cast(j)) ++j;
    // Global response normalisation (ConvNeXt V2's GRN): each channel's L2 norm over the map
    // divided by their mean, applied, scaled, shifted and added to the input.
    if (in(name(j), {"norm", "linalg_vector_norm"}) && name(j + 1) == "mean") {
      j += name(j + 2) == "add" ? 3 : 2;  // the epsilon
      if (name(j) != "div" || (j = through(j + 1, "mul", 1)) == 0) return {};
      if (size_t w = through(j, "mul", 6)) j = w;
      if (size_t bias = through(j, "add", 6)) j = bias;
      return {name(j) == "add" ? j + 1 : j, "response_norm"};
    }
    bool centred = false;
    if (name(j) == "mean" && name(j + 1) == "sub") centred = true, j += 2;
    if (in(name(j), {"pow", "square"}) || (name(j) == "mul" && name(j + 1) == "mean")) {
      if (name(++j) != "mean") return {};
      ++j;
    } else if (in(name(j), {"var", "var_mean", "std"})) {
      centred = true, ++j;
    } else {
      return {};
    }
    if (const size_t end = scaled_first(j); end != 0) return {end, centred ? "layer_norm" : "rms_norm"};
    if (centred && name(j) == "sub") ++j;  // x - mean again, before the epsilon's sum
    if (name(j) == "add") ++j;              // epsilon
    std::string_view apply;
    if (name(j) == "rsqrt") apply = "mul", ++j;
    else if (name(j) == "sqrt") apply = "div", j += name(j + 1) == "add" ? 2 : 1;
    else return {};
    if (centred && name(j) == "sub") ++j;  // x - mean, again
    size_t k = through(j, apply, 1);
    if (k == 0) return {};
    j = k;
    while (cast(j)) ++j;
    size_t viewed = j;  // the weight's views first (Griffin's scale reshaped to broadcast)
    while (shape(viewed)) ++viewed;
    if (!centred && name(viewed) == "add" && name(viewed + 1) == "mul") j = viewed + 2;  // scaled by (1 + weight): Gemma's
    else if (size_t w = through(j, "mul", 6)) j = w;                   // the scale (weight[:, None, None]: its views)
    // No weight: centred, a normalisation its caller computes (a series' instance norm), no
    // module; by the mean square alone, a module (ProGAN's and StyleGAN's PixelNorm).
    else if (centred) return {};
    if (size_t bias = through(j, "add", 6); centred && bias) j = bias;
    // Back to the input's dtype; not the cast that opens the next norm's statistics (norms back
    // to back: Mamba's dt, B and C norms, an attention's q and k norms).
    size_t back = j;
    while (cast(back)) ++back;
    if (!in(name(back), {"pow", "square", "mean", "var", "var_mean", "std"})) j = back;
    return {j, centred ? "layer_norm" : "rms_norm"};
  };
  std::vector<Element> out;
  for (size_t i = 0; i < els.size();) {
    const Match m = name(i).empty() ? Match{} : match(i);
    if (m.end == 0) {
      out.push_back(std::move(els[i++]));
      continue;
    }
    Element n = new_unit(Role::Norm, m.kind, els[i].op);
    take_ops(n, els, i, m.end);
    out.push_back(std::move(n));
    i = m.end;
  }
  return out;
}

}  // namespace strata::annot::infer
