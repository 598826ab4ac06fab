// Backward ops (and so their kernels) belong to the forward layer they differentiate.
//
// Links first: fwdbwd flows or Sequence number + Fwd thread id (the model's bwd_to_fwd map)
// tie a backward event to a forward op. A backward op root takes the links of its whole
// subtree; each forward op maps to the innermost forward layer holding it (the layer of the
// node of its op root, or of the op inside a compiled graph's container), the loss's forward
// ops to a "Loss" layer; of several, the deepest layer wins. With no link in a backward
// segment, backward ops are matched to the forward's and the loss's ops in reverse order by op kind.
//
// Ops with no forward op (AccumulateGrad: a gradient added into a parameter; the engine's own
// ops; DDP's bucket copies) follow the backward op before them on the same thread, and count
// as mapped by op order (backward_no_forward of them). The rest are unmapped: they stay with
// the op before them, or in the phase.
#include "core/annotate/internal.h"
#include "core/name_memo.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace strata::annot {

namespace {

// A backward op that runs forward work inside it (activation checkpointing's recompute): a
// module call or one of the forward entry points, which a backward never runs otherwise.
bool recomputes_forward(const Context& c, EventId r) {
  static constexpr std::string_view forward_ops[] = {
      "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::linear", "aten::batch_norm", "aten::layer_norm",
      "aten::group_norm", "aten::embedding", "aten::lstm", "aten::gru", "aten::scaled_dot_product_attention"};
  const TraceModel& m = c.m;
  const Track& tr = m.tracks[m.track_of(r)];
  auto st = m.ev.start.begin();
  for (size_t d = size_t(m.ev.depth[r]) + 1; d < tr.levels.size(); ++d) {
    const IndexRange& lv = tr.levels[d];
    auto lo = EventId(std::lower_bound(st + lv.begin, st + lv.end, m.ev.start[r]) - st);
    // A level with nothing inside the op has nothing deeper either: events nest.
    if (lo == lv.end || m.ev.start[lo] >= m.ev.end(r)) break;
    for (EventId e = lo; e < lv.end && m.ev.start[e] < m.ev.end(r); ++e) {
      std::string_view n = m.name_of(e);
      if ((c.cat(e) == Cat::PythonFunction && is_module_frame_name(n)) ||
          std::find(std::begin(forward_ops), std::end(forward_ops), n) != std::end(forward_ops))
        return true;
    }
  }
  return false;
}

}  // namespace

namespace {

// An op's name as its autograd node spells it: "aten::native_layer_norm" and
// "NativeLayerNormBackward0" are both "nativelayernorm", "aten::relu_" and "ReluBackward0" "relu".
std::string node_spelling(std::string_view n) {
  n = strip_prefix(n, "autograd::engine::evaluate_function: ");
  n = strip_prefix(n, "aten::");
  if (const size_t b = n.rfind("Backward"); b != std::string_view::npos && b > 0) n = n.substr(0, b);
  std::string out;
  for (char ch : n)
    if (ch != '_') out += char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return out;
}

// How many ops of a forward op's subtree are looked at for the ops that make its nodes.
constexpr size_t kSubtree = 1 << 16;
// How far ahead of where matching is, and how far behind, a node may find its op.
constexpr size_t kAhead = 12, kBehind = 16;

}  // namespace

ReverseOrderMatch::ReverseOrderMatch(Context& c, const IterWork& w) : c_(c) {
  // The spellings of the iteration's backward nodes: a forward op spelled so makes its own
  // node (aten::bmm a BmmBackward0; what it runs below runs outside autograd); one that is not
  // (aten::linear, aten::einsum, a CPU GRU cell) makes its nodes through the ops it runs.
  std::unordered_set<std::string> nodes;
  for (const Segment& s : w.segments)
    if (s.phase == PhaseKind::Backward)
      for (EventId r : s.items)
        if (c.is_root(r) && is_backward_name(c.name(r))) nodes.insert(spelling(r));
  // The loss's ops too: their nodes are the backward's first (a composed loss makes many).
  for (const Segment& s : w.segments) {
    if (s.phase != PhaseKind::Forward && s.phase != PhaseKind::Loss) continue;
    for (EventId r : s.items) {
      if (!c.is_root(r)) continue;
      Fwd f;
      f.root = r;
      f.own = spelling(r);
      // The ops whose nodes it makes: itself, or the first of the ops below it, and below
      // theirs, spelled as a node is (aten::linear → aten::t, aten::addmm; aten::conv2d →
      // aten::convolution; an RNN's linear, sigmoid and product per time step).
      std::vector<EventId> todo{r};
      for (size_t k = 0; k < todo.size() && todo.size() < kSubtree; ++k) {
        const std::string& spelled = spelling(todo[k]);
        if (!nodes.count(spelled)) {
          for (EventId g : child_ops(c, todo[k])) todo.push_back(g);
          continue;
        }
        auto it = std::find_if(f.ops.begin(), f.ops.end(), [&](const NodeOp& o) { return o.spelling == spelled; });
        if (it == f.ops.end()) it = f.ops.insert(f.ops.end(), NodeOp{spelled, c.kind(todo[k]), 0});
        ++it->left;
        ++f.capacity;
      }
      // None spelled as a node, but it computes (a conv2d whose convolution the trace leaves
      // out): a node of its kind may be its.
      if (!f.capacity && c.kind(r) != "other" && c.kind(r) != "reshape") {
        f.ops.push_back(NodeOp{f.own, c.kind(r), 1});
        f.capacity = 1;
      }
      if (f.capacity) fwd_.push_back(std::move(f));
    }
  }
  std::reverse(fwd_.begin(), fwd_.end());
}

const std::string& ReverseOrderMatch::spelling(EventId e) {
  auto [it, added] = spellings_.try_emplace(c_.m.ev.name[e]);
  if (added) it->second = node_spelling(c_.name(e));
  return it->second;
}

EventId ReverseOrderMatch::next(EventId backward_root) {
  std::string_view k = c_.kind(backward_root);
  // A node's function the clock's rounding left beside its evaluate_function (AddBackward0
  // after "evaluate_function: AddBackward0") is that node again.
  const std::string_view n = c_.name(backward_root), before = last_ == kNoEvent ? std::string_view() : c_.name(last_);
  const bool again = before.starts_with("autograd::engine::evaluate_function: ") && strip_prefix(before, "autograd::engine::evaluate_function: ") == n;
  last_ = backward_root;
  if (again || k == "accumulate_grad") return kNoEvent;
  // The next op of the node's spelling with a node to come (PowBackward0 an aten::pow), else
  // the next one of its kind; each op makes one node per op it runs: past its last,
  // matching moves on. Ahead, past a weight op not yet matched (its parameters make nodes: it
  // has some to come), only a node of an op's own spelling matches: one of an op it runs
  // inside (a view, a transpose) says too little to skip it. With none ahead, an op just
  // behind with a node to come is one whose node the engine ran later (it interleaves
  // parallel branches' nodes: attention's q, k and v): it takes the node, matching stays.
  const std::string& spelled = spelling(backward_root);
  auto has = [&](Fwd& f, bool by_kind) {
    return std::find_if(f.ops.begin(), f.ops.end(), [&](const NodeOp& o) { return o.left && (by_kind ? o.kind == k : o.spelling == spelled); });
  };
  size_t found = fwd_.size();
  bool past_weights = false;
  for (size_t q = j_; q < fwd_.size() && q < j_ + kAhead && found == fwd_.size(); ++q) {
    if (has(fwd_[q], false) != fwd_[q].ops.end() && (fwd_[q].own == spelled || !past_weights)) found = q;
    past_weights |= fwd_[q].used == 0 && is_weight_op(c_.name(fwd_[q].root));
  }
  for (size_t d = 1; found == fwd_.size() && d <= kBehind && d <= j_; ++d)
    if (has(fwd_[j_ - d], false) != fwd_[j_ - d].ops.end()) found = j_ - d;
  for (size_t q = j_; found == fwd_.size() && k != "other" && q < fwd_.size() && q < j_ + kAhead; ++q) {
    if (has(fwd_[q], true) != fwd_[q].ops.end()) found = q;
    if (fwd_[q].used == 0 && is_weight_op(c_.name(fwd_[q].root))) break;  // by kind, never past one
  }
  if (found == fwd_.size()) return kNoEvent;
  Fwd& f = fwd_[found];
  auto it = has(f, false);
  if (it == f.ops.end()) it = has(f, true);
  --it->left;
  ++f.used;
  if (found >= j_) j_ = f.used < f.capacity ? found : found + 1;
  return f.root;
}

bool is_gradient_sync(std::string_view n) {
  // (An autograd node named for a collective, TorchRec's All2All_Pooled_WaitBackward, is the
  // backward of a forward op: its layer's.)
  return !is_backward_name(n) && (n.starts_with("torch.distributed.") || is_host_collective(n));
}

bool has_forward_op(std::string_view n) {
  n = strip_prefix(n, "autograd::engine::evaluate_function: ");
  return !n.starts_with("torch::autograd::") && is_backward_name(n);
}

namespace {

// A forward op in no layer, directly in the forward phase: its backward op's place is the
// backward phase itself.
constexpr NodeId kInPhase = kNoNode - 1;

}  // namespace

void map_backward(Context& c, std::vector<IterWork>& iters, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of) {
  const TraceModel& m = c.m;
  // The forward node a forward event belongs to: the innermost layer holding it, found from the
  // first event at or above it that has a node (its op root, or an op in a compiled graph's
  // container); for the loss's ops outside any layer, their phase node (mirrored as "Loss");
  // for other forward ops in no layer, kInPhase (their backward ops go in the backward phase
  // itself); else kNoNode.
  auto forward_node = [&](EventId f) -> NodeId {
    NodeId n = kNoNode;
    for (EventId e = f; e != kNoEvent && n == kNoNode; e = c.parent[e]) n = node_of[e];
    while (n != kNoNode && b.kind[n] != NodeKind::Layer && b.kind[n] != NodeKind::Phase) n = b.parent[n];
    if (n == kNoNode) return kNoNode;
    if (b.kind[n] == NodeKind::Layer) return b.phase[n] == PhaseKind::Backward ? kNoNode : n;
    EventId r = c.op_root(f) != kNoEvent ? c.op_root(f) : f;
    if (b.phase[n] == PhaseKind::Loss || is_loss_op(c.name(r))) return n;
    return b.phase[n] == PhaseKind::Forward ? kInPhase : kNoNode;
  };
  auto layer_depth = [&](NodeId n) {
    int d = 0;
    for (; n != kNoNode && n != kInPhase && b.kind[n] == NodeKind::Layer; n = b.parent[n]) ++d;
    return d;
  };
  // Backward op root → the forward node it maps to (kNoNode: linked, but to no layer). Made
  // before any backward node exists: a forward op recomputed inside a backward op has none.
  struct Target {
    NodeId node = kNoNode;
    int depth = -1;
    EventId fwd = kNoEvent;
  };
  std::unordered_map<EventId, Target> target;
  target.reserve(m.bwd_to_fwd.size());
  for (auto& [bwd, fwd] : m.bwd_to_fwd) {
    EventId r = c.op_root(bwd) != kNoEvent ? c.op_root(bwd) : bwd;
    NodeId n = forward_node(fwd);
    int d = n == kNoNode ? -1 : layer_depth(n);
    Target& t = target[r];
    // The deepest layer; then the deepest forward event; then the first (a stable order).
    bool better = t.fwd == kNoEvent || d > t.depth ||
                  (d == t.depth && (m.ev.depth[fwd] > m.ev.depth[t.fwd] ||
                                    (m.ev.depth[fwd] == m.ev.depth[t.fwd] && fwd < t.fwd)));
    if (better) t = {n, d, fwd};
  }
  NameMemo backward_name(m, is_backward_name), gradient_sync(m, is_gradient_sync), forward_op_of(m, has_forward_op);
  for (auto& w : iters) {
    if (c.cancelled()) return;  // the caller drops the partial tree
    std::optional<ReverseOrderMatch> order;  // the fallback where a segment has no links, made then
    std::unordered_map<NodeId, NodeId> mirror;  // forward layer → backward layer (per segment)
    for (Segment& s : w.segments) {
      if (s.phase != PhaseKind::Backward) continue;
      mirror.clear();
      // A forward layer's backward twin (its parents' twins around it); a phase node stands for
      // the loss: a "Loss" layer, the twin of a Loss phase.
      std::function<NodeId(NodeId)> mirror_of = [&](NodeId l) -> NodeId {
        auto it = mirror.find(l);
        if (it != mirror.end()) return it->second;
        NodeId id;
        if (l == kInPhase) {
          id = s.node;
        } else if (b.kind[l] == NodeKind::Phase) {
          bool loss_phase = b.phase[l] == PhaseKind::Loss;
          id = loss_phase ? b.add_id(NodeKind::Layer, b.name[l], s.node, PhaseKind::Backward, INT64_MAX, INT64_MIN)
                          : b.add(NodeKind::Layer, "Loss", s.node, PhaseKind::Backward, INT64_MAX, INT64_MIN);
          if (loss_phase) b.mirror[id] = l;
        } else {
          NodeId fp = b.parent[l];
          NodeId parent = b.kind[fp] == NodeKind::Layer ? mirror_of(fp) : s.node;
          id = b.add_id(NodeKind::Layer, b.name[l], parent, PhaseKind::Backward, INT64_MAX, INT64_MIN);
          b.mirror[id] = l;
        }
        mirror.emplace(l, id);
        return id;
      };
      size_t links_here = 0;
      for (EventId r : s.items)
        if (c.is_root(r) && target.count(r)) ++links_here;
      if (links_here == 0 && !order) order.emplace(c, w);
      bool by_order = links_here == 0 && !order->empty();
      struct ThreadState {
        NodeId prev = kNoNode;  // the last backward op's layer
        bool syncing = false;   // inside gradient sync work
      };
      std::unordered_map<uint32_t, ThreadState> threads;
      for (EventId r : s.items) {
        if (!c.is_root(r)) continue;
        NodeId layer = kNoNode;
        bool main_thread = c.on_main(r);
        // DDP's reducer and its collectives sync the whole model's gradients: the phase's own
        // work, and so is what follows them up to the next autograd node (the reducer's views).
        ThreadState& thread = threads[m.track_of(r)];
        const bool forward_op = forward_op_of(r), backward_op = !main_thread || backward_name(r);
        thread.syncing = gradient_sync(r) || (thread.syncing && !forward_op);
        if (thread.syncing) {
          thread.prev = kNoNode;
        } else if (backward_op) {
          ++a.backward_ops;
          NodeId& prev = thread.prev;
          auto it = target.find(r);
          if (it != target.end()) {
            layer = it->second.node;
            if (layer != kNoNode) ++a.backward_mapped_links;
          } else if (by_order && forward_op) {
            if (const EventId f = order->next(r); f != kNoEvent) {
              layer = forward_node(f);
              if (layer != kNoNode) ++a.backward_mapped_order;
            }
          } else if (!forward_op && prev != kNoNode) {  // AccumulateGrad, the engine's own: with the op before
            ++a.backward_mapped_order;
            ++a.backward_no_forward;
          }
          if (layer == kNoNode) layer = prev;
          else prev = layer;
        }
        NodeId parent = layer != kNoNode ? mirror_of(layer) : s.node;
        if (backward_op)
          if (recomputes_forward(c, r)) {  // shown as such: a Recompute layer around it
            parent = b.add(NodeKind::Layer, "Recompute (activation checkpointing)", parent, PhaseKind::Backward, m.ev.start[r], m.ev.end(r));
            ++a.backward_recompute;
          }
        NodeId op =
            b.add_named(NodeKind::Op, m.ev.name[r], c.name(r), parent, PhaseKind::Backward, m.ev.start[r], m.ev.end(r), r);
        node_of[r] = op;
        for (NodeId p = parent; p != s.node && p != kNoNode; p = b.parent[p]) b.widen(p, m.ev.start[r], m.ev.end(r));
      }
      a.backward_tracks.clear();
      for (size_t t = 0; t < c.is_backward_track.size(); ++t)
        if (c.is_backward_track[t]) a.backward_tracks.push_back(uint32_t(t));
    }
  }
}

}  // namespace strata::annot
