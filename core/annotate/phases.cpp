// Phases of one iteration: data loading, forward, loss, zero_grad, backward, optimizer step,
// other. PyTorch's own markers first (enumerate(DataLoader)#, Optimizer.zero_grad#,
// Optimizer.step#, *.forward, nn.Module frames, the autograd engine's ops), then loss ops
// by name, then order and name heuristics for the rest. The order is detected, not assumed.
#include "core/annotate/internal.h"

#include <algorithm>

namespace strata::annot {

namespace {

constexpr int8_t kUnknown = -1;
int8_t P(PhaseKind p) { return int8_t(p); }

// PyTorch's markers (true) or a user range named like a phase.
int8_t marker_phase(std::string_view n, bool& pytorch) {
  pytorch = true;
  if (n.starts_with("enumerate(DataLoader)#")) return P(PhaseKind::DataLoading);
  if (n.starts_with("Optimizer.zero_grad#")) return P(PhaseKind::ZeroGrad);
  if (n.starts_with("Optimizer.step#")) return P(PhaseKind::Optimizer);
  if (n.ends_with(".forward") && n.find('#') == std::string_view::npos) return P(PhaseKind::Forward);
  pytorch = false;
  std::string l = lower(n);
  auto has = [&](const char* k) { return l.find(k) != std::string::npos; };
  if (has("zero_grad") || has("zero grad") || has("zerograd")) return P(PhaseKind::ZeroGrad);
  if (has("backward")) return P(PhaseKind::Backward);
  if (has("optimizer") || has("optim step") || has("optimizer_step")) return P(PhaseKind::Optimizer);
  if (has("loss")) return P(PhaseKind::Loss);
  if (has("forward")) return P(PhaseKind::Forward);
  if (has("load data") || has("data load") || has("dataload") || has("data_load") || has("load_data") ||
      has("next batch") || has("get batch"))
    return P(PhaseKind::DataLoading);
  return kUnknown;
}

struct Marker {
  Ns b, e;
  int8_t phase;
  EventId ev;
};

// The outermost nn.Module python frame enclosing an op root, or kNoEvent.
EventId module_of(const Context& c, EventId e) {
  EventId found = kNoEvent;
  for (EventId p = c.parent[e]; p != kNoEvent; p = c.parent[p])
    if (c.cat(p) == Cat::PythonFunction && c.name(p).starts_with("nn.Module: ")) found = p;
  return found;
}

}  // namespace

void find_phases(Context& c, IterWork& w, Annotation&) {
  const auto& ev = c.m.ev;
  Ns ib = w.it.begin, ie = w.it.end;
  // Items: main-thread items and autograd roots in the iteration.
  std::vector<EventId> items = w.items;
  {
    auto lo = std::lower_bound(c.bwd_items.begin(), c.bwd_items.end(), ib,
                               [&](EventId x, Ns t) { return ev.start[x] < t; });
    for (auto it = lo; it != c.bwd_items.end() && ev.start[*it] < ie; ++it) items.push_back(*it);
    std::sort(items.begin(), items.end(), [&](EventId a, EventId b) {
      return ev.start[a] != ev.start[b] ? ev.start[a] < ev.start[b] : ev.dur[a] > ev.dur[b];
    });
  }
  size_t n = items.size();
  std::vector<int8_t> lab(n, kUnknown);
  std::vector<uint8_t> is_marker(n, 0), is_annotation(n, 0), from_marker(n, 0);

  // Markers: PyTorch's first, then user ranges named like phases that do not conflict.
  std::vector<Marker> markers;
  w.markers.clear();
  Ns span = std::max<Ns>(1, ie - ib);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      EventId e = items[i];
      if (c.cat(e) != Cat::UserAnnotation && c.is_root(e)) continue;
      is_annotation[i] = 1;
      bool pytorch = false;
      int8_t ph = marker_phase(c.name(e), pytorch);
      if (ph == kUnknown || pytorch != (pass == 0)) continue;
      Ns b = ev.start[e], en = ev.end(e);
      if (!pytorch) {
        if ((en - b) * 10 > span * 9) continue;
        bool conflict = false;
        for (const Marker& mk : markers) {
          bool inside = b >= mk.b && en <= mk.e, contains = mk.b >= b && mk.e <= en;
          if ((inside && mk.phase != ph) || (contains && mk.phase != ph)) conflict = true;
        }
        if (conflict) continue;
      }
      markers.push_back({b, en, ph, e});
      w.markers.push_back(e);
      is_marker[i] = 1;
    }
  }
  bool has_fwd_marker = false;
  for (size_t i = 0; i < n; ++i) {
    EventId e = items[i];
    if (is_marker[i]) {
      for (const Marker& mk : markers)
        if (mk.ev == e) lab[i] = mk.phase;
      continue;
    }
    if (is_annotation[i]) continue;
    if (c.on_backward(e)) {
      lab[i] = P(PhaseKind::Backward);
      continue;
    }
    // Innermost marker containing the start.
    const Marker* in = nullptr;
    for (const Marker& mk : markers)
      if (ev.start[e] >= mk.b && ev.start[e] < mk.e && (!in || mk.e - mk.b <= in->e - in->b)) in = &mk;
    if (in) {
      lab[i] = in->phase;
      from_marker[i] = 1;
      if (in->phase == P(PhaseKind::Forward)) has_fwd_marker = true;
      if (in->phase == P(PhaseKind::Forward) && is_loss_op(c.name(e))) lab[i] = P(PhaseKind::Loss);
      continue;
    }
    std::string_view nm = c.name(e);
    if (c.opt.module_events_as_layers || true) {
      EventId mod = module_of(c, e);
      if (mod != kNoEvent) {
        lab[i] = c.name(mod).find("Loss") != std::string_view::npos ? P(PhaseKind::Loss) : P(PhaseKind::Forward);
        from_marker[i] = 1;
        has_fwd_marker = true;
        continue;
      }
    }
    if (is_loss_op(nm)) lab[i] = P(PhaseKind::Loss);
    else if (is_backward_name(nm)) lab[i] = P(PhaseKind::Backward);
  }
  auto is_main_op = [&](size_t i) { return !is_annotation[i] && !c.on_backward(items[i]); };

  // loss.backward() seeds the gradient with ones_like before the autograd thread starts.
  for (size_t i = 1; i < n; ++i)
    if (lab[i] == P(PhaseKind::Backward) && lab[i - 1] != P(PhaseKind::Backward))
      for (size_t k = i; k-- > 0;) {
        if (!is_main_op(k)) continue;
        if (lab[k] == kUnknown && c.name(items[k]) == "aten::ones_like") lab[k] = P(PhaseKind::Backward);
        break;
      }

  // Forward starts at the first forward-labelled item, else at the first op doing real work.
  size_t first_fwd = n;
  for (size_t i = 0; i < n && first_fwd == n; ++i)
    if (lab[i] == P(PhaseKind::Forward)) first_fwd = i;
  if (first_fwd == n) {
    for (size_t i = 0; i < n; ++i) {
      if (lab[i] == P(PhaseKind::Backward) || lab[i] == P(PhaseKind::Loss)) break;
      if (lab[i] == kUnknown && is_main_op(i) && !is_data_movement(c.name(items[i])) && !is_sync_call(c.name(items[i])) &&
          c.name(items[i]) != "aten::zeros" && c.name(items[i]) != "aten::zero_") {
        first_fwd = i;
        lab[i] = P(PhaseKind::Forward);
        break;
      }
    }
  }
  // Before forward: data movement is data loading.
  for (size_t i = 0; i < std::min(first_fwd, n); ++i)
    if (lab[i] == kUnknown && is_main_op(i) && is_data_movement(c.name(items[i]))) lab[i] = P(PhaseKind::DataLoading);
  if (first_fwd < n) {
    size_t E = first_fwd + 1;
    while (E < n && lab[E] != P(PhaseKind::Backward) && lab[E] != P(PhaseKind::ZeroGrad) &&
           lab[E] != P(PhaseKind::Optimizer))
      ++E;
    bool training = c.has_backward;
    size_t first_loss = n;
    for (size_t i = first_fwd; i < E && first_loss == n; ++i)
      if (lab[i] == P(PhaseKind::Loss)) first_loss = i;
    if (first_loss < n) {
      for (size_t k = first_loss; k-- > first_fwd + 1;) {
        if (!is_main_op(k)) continue;
        if (lab[k] != kUnknown || is_parametric(c.name(items[k]))) break;
        lab[k] = P(PhaseKind::Loss);
      }
      for (size_t k = first_loss; k < E; ++k)
        if (lab[k] == kUnknown && is_main_op(k)) lab[k] = P(PhaseKind::Loss);
    } else if (training && E < n && lab[E] != P(PhaseKind::Optimizer)) {
      size_t last_fwd = first_fwd;
      for (size_t i = first_fwd; i < E; ++i)
        if (lab[i] == P(PhaseKind::Forward)) last_fwd = i;
      if (has_fwd_marker) {
        for (size_t k = last_fwd + 1; k < E; ++k)
          if (lab[k] == kUnknown && is_main_op(k)) lab[k] = P(PhaseKind::Loss);
      } else {
        size_t k = E;
        bool reduction = false;
        while (k > first_fwd + 1 && (!is_main_op(k - 1) || (lab[k - 1] == kUnknown && !is_parametric(c.name(items[k - 1]))))) {
          --k;
          std::string_view nm = c.name(items[k]);
          reduction |= nm == "aten::sum" || nm == "aten::mean";
        }
        if (reduction)
          for (size_t j = k; j < E; ++j)
            if (lab[j] == kUnknown && is_main_op(j)) lab[j] = P(PhaseKind::Loss);
      }
    }
    for (size_t i = first_fwd; i < E; ++i)
      if (lab[i] == kUnknown && is_main_op(i)) lab[i] = P(PhaseKind::Forward);
  }
  // After backward, without an Optimizer.step range: in-place updates are the optimizer.
  bool has_opt_marker = false;
  for (const Marker& mk : markers) has_opt_marker |= mk.phase == P(PhaseKind::Optimizer);
  size_t last_bwd = n;
  for (size_t i = 0; i < n; ++i)
    if (lab[i] == P(PhaseKind::Backward)) last_bwd = i;
  if (!has_opt_marker && last_bwd < n) {
    size_t j = last_bwd + 1, like = 0, ops = 0;
    for (; j < n && lab[j] == kUnknown; ++j)
      if (is_main_op(j)) {
        ++ops;
        like += is_optimizer_like(c.name(items[j]));
      }
    // Mostly in-place updates: the whole run is the step; else only the updates are.
    bool all = ops >= 4 && like * 2 >= ops;
    for (size_t i = last_bwd + 1; i < j; ++i)
      if (is_main_op(i) && (all || is_optimizer_like(c.name(items[i])))) lab[i] = P(PhaseKind::Optimizer);
  }
  // The rest: between two items of the same phase it is that phase, else other.
  for (size_t i = 0; i < n; ++i) {
    if (lab[i] != kUnknown) continue;
    size_t j = i;
    while (j < n && lab[j] == kUnknown) ++j;
    int8_t before = i > 0 ? lab[i - 1] : kUnknown, after = j < n ? lab[j] : kUnknown;
    int8_t fill = before == after && before != kUnknown ? before : P(PhaseKind::Other);
    if (i == 0 && after == P(PhaseKind::DataLoading)) fill = after;
    for (size_t k = i; k < j; ++k) lab[k] = fill;
    i = j - 1;
  }
  // Runs of one phase become segments; annotation items that are not markers carry no phase.
  w.segments.clear();
  for (size_t i = 0; i < n; ++i) {
    if (is_annotation[i] && !is_marker[i]) continue;
    auto ph = PhaseKind(lab[i]);
    Ns s = ev.start[items[i]];
    if (w.segments.empty() || w.segments.back().phase != ph) {
      if (!w.segments.empty()) w.segments.back().end = s;
      w.segments.push_back({ph, w.segments.empty() ? ib : s, ie, kNoNode, {}});
    }
    w.segments.back().items.push_back(items[i]);
  }
  if (w.segments.empty()) w.segments.push_back({PhaseKind::Other, ib, ie, kNoNode, {}});
  // Inside an iteration a segment's end never precedes its start (items can start together).
  for (auto& s : w.segments) s.end = std::max(s.end, s.begin);
  // Drop empty-duration segments by merging their items into the next one.
  for (size_t i = 0; i + 1 < w.segments.size();) {
    if (w.segments[i].end == w.segments[i].begin) {
      auto& nx = w.segments[i + 1];
      nx.items.insert(nx.items.begin(), w.segments[i].items.begin(), w.segments[i].items.end());
      nx.begin = w.segments[i].begin;
      w.segments.erase(w.segments.begin() + long(i));
      if (i > 0 && w.segments[i - 1].phase == w.segments[i].phase) {
        auto& pv = w.segments[i - 1];
        pv.items.insert(pv.items.end(), w.segments[i].items.begin(), w.segments[i].items.end());
        pv.end = w.segments[i].end;
        w.segments.erase(w.segments.begin() + long(i));
      }
    } else {
      ++i;
    }
  }
}

}  // namespace strata::annot
