// Phases of one iteration, from what the ops are, then from the names the program gave, and
// only then from position:
//   1. What an op is: autograd's backward functions are Backward wherever they run; ops in
//      an nn.Module frame are Forward (Loss in a loss module); fused and foreach optimizer
//      kernels are the Optimizer; the host's collectives (a pipeline's send and recv) are
//      communication, unless a range says what they are part of.
//   2. The program's ranges: PyTorch's markers (enumerate(DataLoader)#, Optimizer.zero_grad#,
//      Optimizer.step#, DistributedDataParallel.forward), ranges whose name says a phase
//      (forward, backward, loss, optimizer, zero_grad, data loading, a pipeline chunk's
//      (F)/(B)/(W)), and outermost ranges that say none, which keep their own name as the
//      label ("sparse_data_dist"), unless they hold the model's parametric ops before any
//      backward work: those are forward layers ("encoder").
//   3. Position, for ops no range covers: data movement before the forward is data loading,
//      the ops between the forward and the backward that lead to a loss op are the loss,
//      in-place updates after the backward the optimizer; the rest takes its neighbours' phase.
// Phases may interleave within one step (pipeline schedules): each run of one phase and label
// is a segment of its own.
#include "core/annotate/infer_units.h"
#include "core/annotate/internal.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace strata::annot {

namespace {

constexpr int8_t kUnknown = -1;
int8_t P(PhaseKind p) { return int8_t(p); }

struct Marker {
  Ns b, e;
  int8_t phase;
  int16_t label;  // index into the iteration's labels, -1: the phase's own name
  EventId ev;
  bool named_only = false;  // an outermost range whose name says no phase
};

// Fused and foreach kernels only an optimizer step runs.
// A copy of the batch to where the model runs (.to(device), pinning), not a view of it.
bool is_host_copy(std::string_view n) {
  return n == "aten::to" || n == "aten::_to_copy" || n == "aten::copy_" || n == "aten::pin_memory" || n == "aten::_pin_memory";
}

bool is_optimizer_op(std::string_view n) {
  return n.starts_with("aten::_foreach_") || n.starts_with("aten::_fused_adam") || n.starts_with("aten::_fused_sgd");
}

struct PhaseLabeler {
  Context& c;
  IterWork& w;
  std::vector<EventId> items;
  std::vector<int8_t> lab;
  std::vector<int16_t> label;
  std::vector<uint8_t> is_annotation, is_marker, named;  // named: a range of the program covers it
  std::vector<Marker> markers;
  std::vector<std::string> labels;

  PhaseLabeler(Context& cx, IterWork& wx) : c(cx), w(wx) {}

  bool is_main_op(size_t i) const { return !is_annotation[i] && !c.on_backward(items[i]); }
  std::string_view name(size_t i) const { return c.name(items[i]); }
  // Whether item i ran last inside the item before it (left_beside_by_rounding).
  bool left_beside(size_t i) const {
    const auto& ev = c.m.ev;
    return i > 0 && left_beside_by_rounding(ev.end(items[i - 1]), ev.start[items[i]], ev.end(items[i]));
  }

  int16_t add_label(const std::string& s) {
    if (s.empty()) return -1;
    auto it = std::find(labels.begin(), labels.end(), s);
    if (it != labels.end()) return int16_t(it - labels.begin());
    labels.push_back(s);
    return int16_t(labels.size() - 1);
  }

  void gather() {
    const auto& ev = c.m.ev;
    items = w.items;
    auto lo = std::lower_bound(c.bwd_items.begin(), c.bwd_items.end(), w.it.begin,
                               [&](EventId x, Ns t) { return ev.start[x] < t; });
    for (auto it = lo; it != c.bwd_items.end() && ev.start[*it] < w.it.end; ++it) items.push_back(*it);
    std::sort(items.begin(), items.end(), [&](EventId a, EventId b) {
      return ev.start[a] != ev.start[b] ? ev.start[a] < ev.start[b] : ev.dur[a] > ev.dur[b];
    });
    size_t n = items.size();
    lab.assign(n, kUnknown);
    label.assign(n, -1);
    is_annotation.assign(n, 0);
    is_marker.assign(n, 0);
    named.assign(n, 0);
    for (size_t i = 0; i < n; ++i) is_annotation[i] = c.cat(items[i]) == Cat::UserAnnotation || !c.is_root(items[i]);
  }

  // The ranges that make phases, outermost first: a range inside another one that made a
  // phase refines nothing (the outer name stands for its time); a range inside a module
  // call is a layer. People's ranges that say a phase make one unless they contradict one of
  // PyTorch's markers inside them or span the whole step; outermost ranges that say no phase
  // make their own, unless they group ranges that do ("step_body" around forward, backward).
  void find_markers() {
    const auto& ev = c.m.ev;
    Ns span = std::max<Ns>(1, w.it.end - w.it.begin);
    struct Candidate { size_t i; RangeName rn; };
    std::vector<Candidate> cand;
    for (size_t i = 0; i < items.size(); ++i) {
      EventId e = items[i];
      if (!is_annotation[i] || e == w.range || is_profiler_step_name(name(i))) continue;
      if (outer_module_of(c, e) != kNoEvent) continue;
      RangeName rn = read_range_name(name(i));
      if (!rn.phase && !(c.is_outer_range(e) && !names_iteration(name(i)) && !names_engine_step(name(i)))) continue;
      cand.push_back({i, std::move(rn)});
    }
    auto inside = [&](EventId x, EventId y) { return ev.start[x] >= ev.start[y] && ev.end(x) <= ev.end(y) && x != y; };
    std::stable_sort(cand.begin(), cand.end(), [&](const Candidate& x, const Candidate& y) {
      EventId a = items[x.i], b = items[y.i];
      return ev.start[a] != ev.start[b] ? ev.start[a] < ev.start[b] : ev.dur[a] > ev.dur[b];
    });
    w.markers.clear();
    for (const Candidate& k : cand) {
      EventId e = items[k.i];
      Ns b = ev.start[e], en = ev.end(e);
      bool covered = false;
      for (const Marker& mk : markers) covered |= b >= mk.b && en <= mk.e;
      if (covered) continue;
      bool ok = true;
      for (const Candidate& o : cand) {
        if (!inside(items[o.i], e) || !o.rn.phase) continue;
        if (!k.rn.phase) ok = false;  // a group of phases, not one
        else if (!k.rn.pytorch && o.rn.pytorch && *o.rn.phase != *k.rn.phase) ok = false;  // contradicts PyTorch
      }
      if (k.rn.phase && !k.rn.pytorch && (en - b) * 10 > span * 9) ok = false;  // says what the step is, not a phase
      if (!ok) continue;
      if (!k.rn.phase) {
        markers.push_back({b, en, P(PhaseKind::Other), add_label(k.rn.label), e, true});
        continue;
      }
      markers.push_back({b, en, P(*k.rn.phase), add_label(k.rn.label), e});
      w.markers.push_back(e);
      is_marker[k.i] = 1;
    }
  }

  // Phase-less outermost ranges holding the model's parametric ops before any backward work
  // are forward layers ("encoder", "head"), not phases of their own.
  void drop_layer_ranges() {
    const auto& ev = c.m.ev;
    Ns first_bwd = INT64_MAX;
    for (size_t i = 0; i < items.size(); ++i)
      if (c.on_backward(items[i]) || (!is_annotation[i] && is_backward_name(name(i)))) {
        first_bwd = ev.start[items[i]];
        break;
      }
    std::erase_if(markers, [&](const Marker& mk) {
      if (!mk.named_only || mk.b >= first_bwd) return false;
      for (size_t i = 0; i < items.size(); ++i)
        if (is_main_op(i) && ev.start[items[i]] >= mk.b && ev.start[items[i]] < mk.e && is_parametric(name(i))) return true;
      return false;
    });
  }

  // Steps 1 and 2: what the op is, else the innermost range around it.
  void by_identity_and_names() {
    const auto& ev = c.m.ev;
    for (size_t i = 0; i < items.size(); ++i) {
      EventId e = items[i];
      if (is_marker[i]) {
        for (const Marker& mk : markers)
          if (mk.ev == e) lab[i] = mk.phase, label[i] = mk.label;
        continue;
      }
      if (is_annotation[i]) continue;
      const Marker* in = nullptr;
      for (const Marker& mk : markers)
        if (ev.start[e] >= mk.b && (ev.start[e] < mk.e || left_beside_by_rounding(mk.e, ev.start[e], ev.end(e))) &&
            (!in || mk.e - mk.b <= in->e - in->b))
          in = &mk;
      named[i] = in != nullptr;
      if (in) label[i] = in->label;
      if (c.on_backward(e) || is_backward_name(name(i))) {
        lab[i] = P(PhaseKind::Backward);
        if (in && in->phase != P(PhaseKind::Backward)) label[i] = -1;
        continue;
      }
      if (EventId mod = outer_module_of(c, e); mod != kNoEvent) {
        lab[i] = is_loss_module(module_of_frame(c.name(mod))) ? P(PhaseKind::Loss) : P(PhaseKind::Forward);
        if (in && in->phase != lab[i]) label[i] = -1;
        continue;
      }
      if (is_optimizer_op(name(i))) {
        lab[i] = P(PhaseKind::Optimizer);
        continue;
      }
      if (is_host_collective(name(i)) && (!in || in->named_only)) {  // a pipeline's send and recv, a collective
        lab[i] = P(PhaseKind::Other);
        label[i] = add_label("Communication");
        continue;
      }
      if (in) {
        lab[i] = in->phase;
        if (in->phase == P(PhaseKind::Forward) && is_loss_op(name(i))) lab[i] = P(PhaseKind::Loss), label[i] = -1;
        continue;
      }
      if (is_loss_op(name(i))) lab[i] = P(PhaseKind::Loss);
    }
  }

  // torch 1.13's record_function allocates a one-element tensor (aten::zeros: empty, zero_)
  // as it is made, just before its range opens: those ops are the range's.
  void range_allocations() {
    for (size_t j = 1; j < items.size(); ++j) {
      if (!is_marker[j]) continue;
      for (size_t k = j, taken = 0; k-- > 0 && taken < 3;) {
        if (is_annotation[k] && !c.is_root(items[k])) continue;  // a child of the allocation
        const std::string_view op = name(k);
        if (!is_main_op(k) || lab[k] != kUnknown || named[k] ||
            (op != "aten::zeros" && op != "aten::empty" && op != "aten::zero_"))
          break;
        lab[k] = lab[j], label[k] = label[j];
        ++taken;
      }
    }
  }

  // Step 3, for the ops nothing named.
  void by_position() {
    size_t n = items.size();
    auto open = [&](size_t i) { return lab[i] == kUnknown && !named[i] && is_main_op(i); };
    // loss.backward() seeds the gradient with ones_like before the autograd thread starts; a
    // trace's rounded timestamps can leave ones_like's own empty_like and fill_ after it.
    auto seed_part = [&](std::string_view op) {
      return op == "aten::fill_" || op == "aten::empty_like" || op == "aten::empty_strided" || op == "aten::empty";
    };
    for (size_t i = 1; i < n; ++i) {
      if (lab[i] != P(PhaseKind::Backward) || lab[i - 1] == P(PhaseKind::Backward)) continue;
      std::vector<size_t> parts;
      for (size_t k = i; k-- > 0;) {
        if (!is_main_op(k)) continue;
        if (!open(k)) break;
        if (name(k) == "aten::ones_like") {
          lab[k] = P(PhaseKind::Backward);
          for (size_t p : parts) lab[p] = P(PhaseKind::Backward);
          break;
        }
        if (!seed_part(name(k)) || parts.size() >= 3) break;
        parts.push_back(k);
      }
    }
    // Forward starts at the first forward-labelled item, else at the first op doing real work
    // after the data was loaded (its marker, its copies) and at the latest at the model's first
    // op with weights (a conv, a linear, an embedding, a norm).
    size_t first_fwd = n;
    for (size_t i = 0; i < n && first_fwd == n; ++i)
      if (lab[i] == P(PhaseKind::Forward)) first_fwd = i;
    if (first_fwd == n) {
      size_t weights = n, loaded = 0;
      for (size_t i = 0; i < n && weights == n; ++i) {
        if (lab[i] == P(PhaseKind::Backward) || lab[i] == P(PhaseKind::Loss)) break;
        if (open(i) && is_parametric(name(i))) weights = i;
        // A copy to the device ends the loading; on a trace with no device, aten::to is a cast.
        else if (lab[i] == P(PhaseKind::DataLoading) || (c.has_gpu && open(i) && is_host_copy(name(i)))) loaded = i + 1;
      }
      for (size_t i = loaded; i < weights && first_fwd == n; ++i)
        if (open(i) && !is_data_movement(name(i)) && !is_sync_call(name(i)) && name(i) != "aten::zeros" && name(i) != "aten::zero_")
          first_fwd = i;
      if (first_fwd == n) first_fwd = weights;
      // Reshapes of the batch right before the model's first op (x.unsqueeze(1)) are the
      // model's: they move nothing. So is taking a column of the whole batch (x[:, i]: a full
      // slice, then a select). Picking the batch out of the data (data[i], data[a:b]) is not. An
      // op the rounding left beside its parent (the as_strided a slice runs) is what its parent
      // is, and stands between none of them.
      auto parent = [&](size_t i) {
        while (i > 0 && left_beside(i)) --i;
        return i;
      };
      // A slice the model's first weight op takes that the model slices again for the same op
      // (x[..., k:k + 1] into one embedding per variable; x[:, t] into a cell unrolled over
      // time, concatenated with its state first) is the model's, no batch picked: the ops from
      // the slice to that weight op run again later.
      auto slices_again = [&](size_t slice) {
        if (weights >= n || slice >= weights) return false;
        std::vector<std::string_view> run;  // the main ops from the slice to the weight op
        for (size_t j = slice; j <= weights && run.size() <= 8; ++j)
          if (is_main_op(j) && !left_beside(j)) run.push_back(name(j));
        if (run.size() > 8) return false;
        for (size_t j = weights + 1, seen = 0; j + 1 < n && seen < 256; ++j) {
          if (!is_main_op(j) || left_beside(j)) continue;
          ++seen;
          if (name(j) != run.front()) continue;
          size_t at = 1;
          for (size_t next = j + 1; next < n && at < run.size(); ++next) {
            if (!is_main_op(next) || left_beside(next)) continue;
            if (name(next) != run[at]) break;
            ++at;
          }
          if (at == run.size()) return true;
        }
        return false;
      };
      auto view = [&](size_t i) {
        i = parent(i);
        size_t after = i + 1;
        while (after < n && left_beside(after)) ++after;
        const std::string_view op = strip_prefix(name(i), "aten::");
        if (!name(i).starts_with("aten::")) return false;
        // Picking a row that the next op gathers by (a graph's edge_index[0] before its
        // index_select) makes indices for the model, no batch.
        if ((op == "select" || op == "slice") && after < n && is_gather_op(name(after))) return true;
        if (op == "select") return i > 0 && name(parent(i - 1)) == "aten::slice";
        // Columns of the whole batch (x[:, a:b]: a full slice, then a slice) likewise, and their
        // cast on a trace with no device (x[:, a:b].long(): aten::to casts there, moves nothing).
        if (op == "slice")
          return after < n && (name(after) == "aten::select" || name(after) == "aten::slice" || slices_again(i) ||
                               (i > 0 && name(parent(i - 1)) == "aten::slice"));
        if (op == "to" && !c.has_gpu) return i > 0 && (name(parent(i - 1)) == "aten::slice" || name(parent(i - 1)) == "aten::select");
        if (op == "cat") return slices_again(i);  // the input joined to a state the model carries
        return op == "view" || op == "reshape" || op == "unsqueeze" || op == "squeeze" || op == "transpose" || op == "permute" ||
               op == "flatten" || op == "expand";
      };
      while (first_fwd < n && first_fwd > loaded && (!is_main_op(first_fwd - 1) || (open(first_fwd - 1) && view(first_fwd - 1))))
        --first_fwd;
      // A state the model makes first (an RNN's zeros, a ConvLSTM's h and c): its own, no
      // range's allocation (a phase range's are its range's: range_allocations). So is a cast
      // right after that state on a trace with no device (aten::to moves nothing there: NARM's
      // h0, then its ids cast).
      auto state = [&](size_t i) { return open(i) && infer::allocates(name(i)); };
      auto after_state = [&](size_t i) {
        while (i > loaded && !is_main_op(i - 1)) --i;
        return i > loaded && state(i - 1);
      };
      while (first_fwd < n && first_fwd > loaded) {
        const size_t k = first_fwd - 1;
        const bool cast = !c.has_gpu && open(k) && name(k) == "aten::to" && after_state(k);
        if (is_main_op(k) && !state(k) && !cast) break;
        --first_fwd;
      }
      while (first_fwd < n && !is_main_op(first_fwd)) ++first_fwd;
      if (first_fwd < n) lab[first_fwd] = P(PhaseKind::Forward);
    }
    for (size_t i = 0; i < std::min(first_fwd, n); ++i)
      if (open(i) && is_data_movement(name(i))) lab[i] = P(PhaseKind::DataLoading);
    if (first_fwd < n) forward_and_loss(first_fwd);
    optimizer_after_backward();
  }

  // From the first forward item to the first backward, zero_grad or optimizer item: the
  // loss is what leads to a loss op (or, with forward named by the program, what follows
  // its last forward item; without, a trailing reduction); the rest is forward.
  void forward_and_loss(size_t first_fwd) {
    size_t n = items.size();
    auto open = [&](size_t i) { return lab[i] == kUnknown && !named[i] && is_main_op(i); };
    size_t E = first_fwd + 1;
    while (E < n && lab[E] != P(PhaseKind::Backward) && lab[E] != P(PhaseKind::ZeroGrad) && lab[E] != P(PhaseKind::Optimizer))
      ++E;
    bool has_fwd_name = false;
    for (size_t i = first_fwd; i < E; ++i) has_fwd_name |= lab[i] == P(PhaseKind::Forward) && (named[i] || is_marker[i]);
    for (size_t i = first_fwd; i < E; ++i) has_fwd_name |= lab[i] == P(PhaseKind::Forward) && outer_module_of(c, items[i]) != kNoEvent;
    size_t first_loss = n;
    for (size_t i = first_fwd; i < E && first_loss == n; ++i)
      if (lab[i] == P(PhaseKind::Loss)) first_loss = i;
    if (first_loss < n) first_loss = past_auxiliary_losses(first_fwd, first_loss, E);
    if (first_loss < n) {
      // A loss takes the prediction and the target: reshapes of both just before it
      // (logits.view(-1, V), y.view(-1)) are its own, and so is broadcasting one to the other
      // (F.mse_loss's broadcast_tensors, not one reshape before it, the model's last: a
      // separator's mask applied and viewed back); one reshape alone (squeeze, flatten) and
      // anything that computes (sigmoid, log_softmax) end the model. A tensor made from constants there
      // (CTC's lengths by torch.full, a GAN's target by ones_like) is an input of the loss too,
      // and so are the same rows picked from both (out[mask], y[mask]: a graph's training
      // nodes), one pick alone being the model's.
      std::vector<size_t> reshapes;
      size_t counted = 0, picks = 0, shapes = 0, beside = n;  // an op left beside the one before it goes with that one
      size_t broadcast_own = 0;  // how many of `reshapes` the broadcast and what follows it are
      bool both = false, made_any = false;
      for (size_t k = first_loss; k-- > first_fwd + 1;) {
        if (!is_main_op(k)) continue;
        if (left_beside(k) || resolves_lazy_bit(name(k))) {  // (a view's as_strided, a linear's resolve_conj)
          beside = k;
          continue;
        }
        // (A factory's own empty and fill_ can end up after it when timestamps are rounded.)
        const bool made = is_factory_op(name(k)) || name(k) == "aten::empty" || name(k) == "aten::fill_";
        const bool broadcast = name(k) == "aten::broadcast_tensors", pick = name(k) == "aten::index";
        if (!open(k) || (!broadcast && !made && !pick && !is_shape_op(name(k)))) break;
        both |= broadcast || made;
        made_any |= made;
        picks += pick;
        shapes += !broadcast && !made && !pick;
        reshapes.push_back(k);
        ++counted;
        if (beside < n && open(beside)) reshapes.push_back(beside);
        if (broadcast && broadcast_own == 0) broadcast_own = reshapes.size();
        beside = n;
      }
      if (broadcast_own > 0 && !made_any && picks == 0 && shapes < 2) reshapes.resize(broadcast_own);
      if ((counted >= 2 || both) && picks != 1)
        for (size_t k : reshapes) lab[k] = P(PhaseKind::Loss);
      // After the model's last weight op, a target's encoding (labels one-hot, a contrastive
      // loss's identity mask) starts the loss: from there on the ops build it from the
      // prediction and the target. What computes before (a final sigmoid or softmax) may be
      // either and stays the model's.
      size_t last_weight = first_fwd;
      for (size_t k = first_fwd; k < first_loss; ++k)
        if (is_main_op(k) && is_parametric(name(k))) last_weight = k;
      // So are the ops just before it that make no gradient by what they are, the target's
      // preparation: a comparison's mask (labels >= 0), the rows it picks, a tensor of zeros
      // to scatter into; not a reshape, which may be the model's output's.
      auto prepares = [&](size_t k) {
        const std::string_view op = strip_prefix(name(k), "aten::");
        return !is_main_op(k) || left_beside(k) || is_factory_op(name(k)) || op == "ge" || op == "gt" || op == "le" || op == "lt" ||
               op == "eq" || op == "ne" || op == "index" || op == "empty" || op == "fill_";
      };
      for (size_t k = last_weight + 1; k < first_loss; ++k)
        if (is_main_op(k) && open(k) && (name(k) == "aten::one_hot" || name(k) == "aten::eye")) {
          while (k > last_weight + 1 && open(k - 1) && prepares(k - 1)) --k;
          for (size_t j = k; j < first_loss; ++j)
            if (open(j)) lab[j] = P(PhaseKind::Loss);
          break;
        }
      for (size_t k = first_loss; k < E; ++k)
        if (open(k)) lab[k] = P(PhaseKind::Loss);
    } else if (c.has_backward && E < n && lab[E] != P(PhaseKind::Optimizer)) {
      size_t last_fwd = first_fwd;
      for (size_t i = first_fwd; i < E; ++i)
        if (lab[i] == P(PhaseKind::Forward)) last_fwd = i;
      if (has_fwd_name) {
        for (size_t k = last_fwd + 1; k < E; ++k)
          if (open(k)) lab[k] = P(PhaseKind::Loss);
      } else {
        size_t k = E;
        bool reduction = false;
        while (k > first_fwd + 1 && (!is_main_op(k - 1) || (open(k - 1) && !is_parametric(name(k - 1))))) {
          --k;
          reduction |= name(k) == "aten::sum" || name(k) == "aten::mean";
        }
        // A loss written by hand starts at its first log-likelihood (-F.logsigmoid(pos -
        // neg).mean()) or squared difference ((pred - y) ** 2; a triplet loss's two distances):
        // what the model computed before it (a score from two lookups' products) is still forward.
        size_t written = E, prev = E;
        for (size_t j = k; j < E && written == E; ++j) {
          if (!is_main_op(j) || !open(j)) continue;
          const std::string_view op = name(j);
          if (op == "aten::log_sigmoid" || op == "aten::log_softmax" || (op == "aten::pow" && prev < E && name(prev) == "aten::sub"))
            written = op == "aten::pow" ? prev : j;
          prev = j;
        }
        if (written < E) k = written, reduction = true;
        if (reduction)
          for (size_t j = k; j < E; ++j)
            if (open(j)) lab[j] = P(PhaseKind::Loss);
      }
    }
    for (size_t i = first_fwd; i < E; ++i)
      if (open(i)) lab[i] = P(PhaseKind::Forward);
  }

  // What this loss's backward says of the weights (a GAN's iteration runs another after its
  // optimizer step): the kinds of its weight nodes in the order it runs them, and how many come
  // before the first gradient is accumulated.
  struct BackwardWeights {
    std::vector<std::string_view> kinds;
    size_t before_accumulate = 0;
    bool accumulated = false;
  };
  BackwardWeights backward_weights(size_t E) {
    BackwardWeights bw;
    bool seen = false;
    for (size_t k = E; k < items.size(); ++k) {
      if (seen && (lab[k] == P(PhaseKind::Optimizer) || lab[k] == P(PhaseKind::ZeroGrad))) break;
      if (lab[k] != P(PhaseKind::Backward) || !is_backward_name(name(k))) continue;
      seen = true;
      const std::string_view kind = c.kind(items[k]);
      if (kind == "accumulate_grad") bw.accumulated = true;
      const bool weight = kind == "conv" || kind == "linear" || kind == "embedding" || kind == "batch_norm" || kind == "layer_norm" ||
                          kind == "group_norm" || kind == "instance_norm";
      if (!weight) continue;
      bw.kinds.push_back(kind);
      bw.before_accumulate += !bw.accumulated;
    }
    return bw;
  }

  // A loss op with weight ops of the model after it is an auxiliary loss the forward computes
  // (a VQ-VAE's commitment loss, a deeply supervised net's side head): the loss proper starts
  // at the first loss op after the last weight op, and the auxiliary ones are the forward's.
  // The backward tells whose those weight ops are: the model's accumulate gradients at once
  // (the backward's first weight node is followed by an AccumulateGrad); a frozen network's (a
  // perceptual loss's) has weight nodes first with none to accumulate, and a teacher's run
  // under no_grad makes no nodes at all (the forward has more weight ops than the backward
  // weight nodes by as many). Returns where the loss starts (n: no loss op left).
  size_t past_auxiliary_losses(size_t first_fwd, size_t first_loss, size_t E) {
    const size_t n = items.size();
    size_t last_weight = n, weights_after = 0, weights = 0;
    for (size_t k = first_fwd; k < E; ++k)
      if (is_main_op(k) && is_weight_op(name(k))) {
        ++weights;
        weights_after += k > first_loss;
        last_weight = k;
      }
    if (!weights_after) return teacher_before_loss(first_fwd, first_loss, E);
    const BackwardWeights bw = backward_weights(E);
    const bool trainable = bw.accumulated && bw.before_accumulate <= 1 && weights < bw.kinds.size() + weights_after;
    if (!trainable) return first_loss;
    size_t loss = n;
    for (size_t k = first_fwd; k < E; ++k) {
      if (lab[k] != P(PhaseKind::Loss)) continue;
      if (k < last_weight && !named[k] && outer_module_of(c, items[k]) == kNoEvent) lab[k] = kUnknown;
      else if (loss == n && k > last_weight) loss = k;
    }
    return loss;
  }

  // A teacher run under no_grad between the model and the loss op (Hinton's distillation: the
  // student's logits, then the teacher's on the same batch, then the KL term) makes no backward
  // nodes: the backward's weight nodes are the forward's first weight ops, in reverse, and the
  // weight ops after them are the teacher's: a network of its own (two or more) that takes the
  // same batch, so it opens with the model's first kind of layer. The loss starts at the
  // teacher's first. Where the kinds do not match that way (a frozen backbone under a trained
  // head, a weight op whose gradient autograd writes as a batched product), nothing moves.
  size_t teacher_before_loss(size_t first_fwd, size_t first_loss, size_t E) {
    std::vector<size_t> weights;
    for (size_t k = first_fwd; k < first_loss; ++k)
      if (is_main_op(k) && is_weight_op(name(k))) weights.push_back(k);
    const BackwardWeights bw = backward_weights(E);
    const size_t model = bw.kinds.size();
    if (!bw.accumulated || bw.before_accumulate > 1 || model == 0 || weights.size() < model + 2) return first_loss;
    for (size_t j = 0; j < model; ++j)
      if (c.kind(items[weights[model - 1 - j]]) != bw.kinds[j]) return first_loss;
    const size_t teacher = weights[model];
    if (c.kind(items[teacher]) != c.kind(items[weights.front()])) return first_loss;
    return lab[teacher] == kUnknown && !named[teacher] ? teacher : first_loss;
  }

  // After backward, without an optimizer range: in-place updates are the optimizer.
  void optimizer_after_backward() {
    size_t n = items.size();
    for (const Marker& mk : markers)
      if (mk.phase == P(PhaseKind::Optimizer)) return;
    size_t last_bwd = n;
    for (size_t i = 0; i < n; ++i)
      if (lab[i] == P(PhaseKind::Backward)) last_bwd = i;
    if (last_bwd == n) return;
    size_t j = last_bwd + 1, like = 0, ops = 0;
    for (; j < n && lab[j] == kUnknown; ++j)
      if (is_main_op(j) && !named[j]) {
        ++ops;
        like += is_optimizer_like(name(j));
      }
    // Mostly in-place updates: the whole run is the step; else only the updates are.
    bool all = ops >= 4 && like * 2 >= ops;
    for (size_t i = last_bwd + 1; i < j; ++i)
      if (is_main_op(i) && !named[i] && (all || is_optimizer_like(name(i)))) lab[i] = P(PhaseKind::Optimizer);
  }

  // The rest: an op the clock's rounding left beside the one it ran in is that one's phase
  // (the add_ of the backward's last AccumulateGrad); between two items of the same phase (and
  // label) it is that phase, else other.
  void fill_gaps() {
    size_t n = items.size();
    for (size_t i = 1; i < n; ++i)
      if (lab[i] == kUnknown && lab[i - 1] != kUnknown && left_beside(i)) lab[i] = lab[i - 1], label[i] = label[i - 1];
    for (size_t i = 0; i < n; ++i) {
      if (lab[i] != kUnknown) continue;
      size_t j = i;
      while (j < n && lab[j] == kUnknown) ++j;
      int8_t before = i > 0 ? lab[i - 1] : kUnknown, after = j < n ? lab[j] : kUnknown;
      int8_t fill = before == after && before != kUnknown ? before : P(PhaseKind::Other);
      int16_t fill_label = fill == before && i > 0 && j < n && label[i - 1] == label[j] ? label[i - 1] : -1;
      if (i == 0 && after == P(PhaseKind::DataLoading)) fill = after;
      for (size_t k = i; k < j; ++k) {
        lab[k] = fill;
        if (label[k] < 0) label[k] = fill_label;
      }
      i = j - 1;
    }
  }

  // A serving step's forward is its prefill or decode, as the step's name says.
  void serving_labels() {
    if (w.range == kNoEvent || c.has_backward) return;
    std::string stage = serving_stage(c.name(w.range));
    if (stage.empty()) return;
    int16_t l = add_label(stage);
    for (size_t i = 0; i < items.size(); ++i)
      if (lab[i] == P(PhaseKind::Forward) && label[i] < 0) label[i] = l;
  }

  // Runs of one phase and label become segments; annotation items that are not markers carry none.
  void make_segments() {
    const auto& ev = c.m.ev;
    Ns ib = w.it.begin, ie = w.it.end;
    w.segments.clear();
    for (size_t i = 0; i < items.size(); ++i) {
      if (is_annotation[i] && !is_marker[i]) continue;
      auto ph = PhaseKind(lab[i]);
      std::string_view lb = label[i] >= 0 ? std::string_view(labels[size_t(label[i])]) : std::string_view();
      Ns s = ev.start[items[i]];
      if (w.segments.empty() || w.segments.back().phase != ph || w.segments.back().label != lb) {
        if (!w.segments.empty()) w.segments.back().end = s;
        w.segments.push_back({ph, w.segments.empty() ? ib : s, ie, kNoNode, {}, std::string(lb)});
      }
      w.segments.back().items.push_back(items[i]);
    }
    if (w.segments.empty()) w.segments.push_back({PhaseKind::Other, ib, ie, kNoNode, {}, {}});
    // The host's time between two phases is Python with no op to show whose it is: the previous
    // phase's exit after its last op and the next one's entry before its first. Forward and
    // backward enter and leave through a deep stack (the module tree's calls, the autograd
    // engine starting and finishing its graph), the other phases through one call, so those two
    // take twice the share of the gap.
    auto stack_weight = [](PhaseKind p) -> Ns { return p == PhaseKind::Forward || p == PhaseKind::Backward ? 2 : 1; };
    for (size_t i = 0; i + 1 < w.segments.size(); ++i) {
      Ns last = w.segments[i].begin;
      for (EventId e : w.segments[i].items) last = std::max(last, ev.end(e));
      if (last >= w.segments[i].end) continue;
      Ns wp = stack_weight(w.segments[i].phase), wn = stack_weight(w.segments[i + 1].phase);
      w.segments[i].end = w.segments[i + 1].begin = last + (w.segments[i].end - last) * wp / (wp + wn);
    }
    // Inside an iteration a segment's end never precedes its start (items can start together).
    for (auto& s : w.segments) s.end = std::max(s.end, s.begin);
    // Empty-duration segments give their items to the next one.
    for (size_t i = 0; i + 1 < w.segments.size();) {
      if (w.segments[i].end != w.segments[i].begin) {
        ++i;
        continue;
      }
      auto& nx = w.segments[i + 1];
      nx.items.insert(nx.items.begin(), w.segments[i].items.begin(), w.segments[i].items.end());
      nx.begin = w.segments[i].begin;
      w.segments.erase(w.segments.begin() + long(i));
      if (i > 0 && w.segments[i - 1].phase == w.segments[i].phase && w.segments[i - 1].label == w.segments[i].label) {
        auto& pv = w.segments[i - 1];
        pv.items.insert(pv.items.end(), w.segments[i].items.begin(), w.segments[i].items.end());
        pv.end = w.segments[i].end;
        w.segments.erase(w.segments.begin() + long(i));
      }
    }
  }
};

}  // namespace

void find_phases(Context& c, IterWork& w) {
  PhaseLabeler p(c, w);
  p.gather();
  p.find_markers();
  p.drop_layer_ranges();
  p.by_identity_and_names();
  p.range_allocations();
  const std::vector<int8_t> identified = p.lab;
  p.by_position();
  p.fill_gaps();
  p.serving_labels();
  p.make_segments();
  // The forward's end is the program's where a range, a marker or a module frame labelled a
  // forward or loss op (by_identity_and_names labels the forward only from those).
  bool loss = false, said = false;
  for (size_t i = 0; i < p.lab.size(); ++i) {
    const bool fwd_or_loss = p.lab[i] == P(PhaseKind::Forward) || p.lab[i] == P(PhaseKind::Loss);
    loss |= p.lab[i] == P(PhaseKind::Loss);
    said |= fwd_or_loss && (p.named[i] || p.is_marker[i] || identified[i] == P(PhaseKind::Forward));
  }
  w.loss_by_position = loss && !said;
}

// A phase leaves through the same code every step, so its exit takes about as long in each.
// A step whose gap after it is far longer (the first step's warm-up: a first call that
// initializes, compiles or allocates) spent the excess entering the next phase: its exit is
// held to the steps' usual one. Steps vary by less than that factor from noise alone.
void bound_phase_exits(const Context& c, std::vector<IterWork>& iters) {
  constexpr Ns kOutlier = 3;  // an exit this many times the usual one is warm-up
  const auto& ev = c.m.ev;
  using Transition = std::tuple<PhaseKind, std::string_view, PhaseKind, std::string_view>;
  auto last_end = [&](const Segment& s) {
    Ns last = s.begin;
    for (EventId e : s.items) last = std::max(last, ev.end(e));
    return last;
  };
  std::map<Transition, std::vector<Ns>> exits;  // each transition's exit share in every step
  for (const IterWork& w : iters)
    for (size_t i = 0; i + 1 < w.segments.size(); ++i) {
      const Segment &s = w.segments[i], &n = w.segments[i + 1];
      exits[Transition{s.phase, s.label, n.phase, n.label}].push_back(std::max<Ns>(0, s.end - last_end(s)));
    }
  std::map<Transition, Ns> usual;  // the lower median: of two steps, the shorter
  for (auto& [t, v] : exits) {
    std::nth_element(v.begin(), v.begin() + long((v.size() - 1) / 2), v.end());
    usual[t] = v[(v.size() - 1) / 2];
  }
  for (IterWork& w : iters)
    for (size_t i = 0; i + 1 < w.segments.size(); ++i) {
      Segment &s = w.segments[i], &n = w.segments[i + 1];
      const Ns last = last_end(s);
      if (last <= s.begin || last >= s.end) continue;
      const Ns u = usual.at(Transition{s.phase, s.label, n.phase, n.label});
      if (s.end - last > kOutlier * u) s.end = n.begin = last + u;
    }
}

}  // namespace strata::annot
