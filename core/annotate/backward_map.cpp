// Backward ops (and so their kernels) belong to the forward layer they differentiate:
// through fwdbwd flows or Sequence number + Fwd thread id (the model's fwd_to_bwd maps),
// else by matching backward ops to forward ops in reverse order by op kind. Ops with no
// forward op (AccumulateGrad, …) follow the backward op before them.
#include "core/annotate/internal.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace strata::annot {

namespace {

struct FwdOp {
  NodeId layer;  // the op node's parent when it is a layer, else kNoNode
  uint32_t n = 0;
  std::string_view kinds[6];  // of the root and its direct children (inline: one per forward op)
  bool has(std::string_view k) const { return std::find(kinds, kinds + n, k) != kinds + n; }
};

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

void map_backward(Context& c, std::vector<IterWork>& iters, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of) {
  const TraceModel& m = c.m;
  // Backward root → a forward event it differentiates.
  std::unordered_map<EventId, EventId> root_to_fwd;
  for (auto& [bwd, fwd] : m.bwd_to_fwd) {
    EventId r = c.op_root(bwd) != kNoEvent ? c.op_root(bwd) : bwd;
    auto it = root_to_fwd.find(r);
    if (it == root_to_fwd.end()) root_to_fwd.emplace(r, fwd);
    else if (m.ev.depth[fwd] > m.ev.depth[it->second]) it->second = fwd;
  }
  auto layer_of_op = [&](EventId fwd) -> NodeId {
    EventId r = c.op_root(fwd) != kNoEvent ? c.op_root(fwd) : fwd;
    NodeId op = node_of[r];
    if (op == kNoNode || b.kind[op] != NodeKind::Op || b.phase[op] != PhaseKind::Forward) return kNoNode;
    NodeId p = b.parent[op];
    return b.kind[p] == NodeKind::Layer ? p : kNoNode;
  };
  for (auto& w : iters) {
    if (c.cancelled()) return;  // the caller drops the partial tree
    // Forward ops of this iteration in reverse, for the order fallback.
    std::vector<FwdOp> fwd;
    for (const Segment& s : w.segments) {
      if (s.phase != PhaseKind::Forward) continue;
      for (EventId r : s.items) {
        if (!c.is_root(r) || node_of[r] == kNoNode) continue;
        FwdOp& f = fwd.emplace_back();
        f.layer = layer_of_op(r);
        f.kinds[f.n++] = c.kind(r);
        // Direct children of the root (aten::linear → aten::t, aten::addmm).
        for (EventId e : child_ops(c, r)) {
          if (f.n >= 6) break;
          f.kinds[f.n++] = c.kind(e);
        }
      }
    }
    std::reverse(fwd.begin(), fwd.end());
    std::unordered_map<NodeId, NodeId> mirror;  // forward layer → backward layer (per segment)
    for (Segment& s : w.segments) {
      if (s.phase != PhaseKind::Backward) continue;
      mirror.clear();
      std::function<NodeId(NodeId)> mirror_of = [&](NodeId l) -> NodeId {
        auto it = mirror.find(l);
        if (it != mirror.end()) return it->second;
        NodeId fp = b.parent[l];
        NodeId parent = b.kind[fp] == NodeKind::Layer ? mirror_of(fp) : s.node;
        NodeId id = b.add_id(NodeKind::Layer, b.name[l], parent, PhaseKind::Backward, INT64_MAX, INT64_MIN);
        b.mirror[id] = l;
        mirror.emplace(l, id);
        return id;
      };
      size_t links_here = 0;
      for (EventId r : s.items)
        if (c.is_root(r) && root_to_fwd.count(r)) ++links_here;
      bool by_order = links_here == 0 && !fwd.empty();
      size_t j = 0;
      NodeId prev_layer = kNoNode;
      for (EventId r : s.items) {
        if (!c.is_root(r)) continue;
        NodeId layer = kNoNode;
        bool main_thread = c.on_main(r);
        if (!main_thread || is_backward_name(c.name(r))) {
          ++a.backward_ops;
          auto it = root_to_fwd.find(r);
          if (it != root_to_fwd.end()) {
            layer = layer_of_op(it->second);
            if (layer != kNoNode) ++a.backward_mapped_links;
          } else if (by_order) {
            std::string_view k = c.kind(r);
            if (k != "accumulate_grad" && k != "other") {
              for (size_t q = j; q < fwd.size() && q < j + 12; ++q) {
                if (!fwd[q].has(k)) continue;
                layer = fwd[q].layer;
                j = q;
                if (layer != kNoNode) ++a.backward_mapped_order;
                break;
              }
            }
          }
          if (layer == kNoNode) layer = prev_layer;
          else prev_layer = layer;
        }
        NodeId parent = layer != kNoNode ? mirror_of(layer) : s.node;
        if (!main_thread || is_backward_name(c.name(r)))
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
