// Noise reduction into the multi-scale levels: a child that takes most of its parent is
// hoisted (its children shown in its place), consecutive siblings with the same name
// collapse into "name ×N", and runs of tiny siblings merge into one group named like
// "37 ops (top: aten::add_ 40%)". The input tree is left as it is.
#include "core/annotate/annotation.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace strata {

std::vector<SiblingBlock> reduce_siblings(const std::vector<Sibling>& kids, Ns parent_dur, const ReduceOptions& o) {
  // Same-name runs first: a run counts as one item from its first begin to its last end.
  struct Item { uint32_t first, count; Ns begin, end; bool apart; };
  std::vector<Item> items;
  for (size_t i = 0; i < kids.size();) {
    size_t j = i + 1;
    if (o.collapse_runs && !kids[i].apart)
      while (j < kids.size() && !kids[j].apart && kids[j].key == kids[i].key) ++j;
    items.push_back({uint32_t(i), uint32_t(j - i), kids[i].begin, kids[j - 1].end, kids[i].apart});
    i = j;
  }
  // Then runs of tiny items.
  std::vector<SiblingBlock> out;
  const double tiny = o.tiny_share * double(std::max<Ns>(parent_dur, 1));
  auto is_tiny = [&](const Item& it) { return !it.apart && double(it.end - it.begin) < tiny; };
  for (size_t i = 0; i < items.size();) {
    size_t j = i;
    while (j < items.size() && is_tiny(items[j])) ++j;
    if (j - i >= std::max<uint32_t>(o.min_group, 2)) {
      out.push_back({SiblingBlock::Group, items[i].first, items[j - 1].first + items[j - 1].count - items[i].first});
      i = j;
      continue;
    }
    if (j == i) j = i + 1;
    for (size_t k = i; k < j; ++k)
      out.push_back({items[k].count > 1 ? SiblingBlock::SameName : SiblingBlock::Single, items[k].first, items[k].count});
    i = j;
  }
  return out;
}

namespace {

class Reducer {
 public:
  Reducer(const AnnotationTree& in, const ReduceOptions& o) : in_(in), o_(o) {}

  AnnotationTree run() {
    if (in_.size() == 0) return {};
    emit_node(0, kNoNode);
    finish_shares();
    return std::move(out_);
  }

 private:
  const AnnotationTree& in_;
  const ReduceOptions& o_;
  AnnotationTree out_;

  NodeId push(NodeKind k, std::string_view name, NodeId parent, NodeId origin, uint32_t members) {
    auto id = NodeId(out_.kind.size());
    out_.kind.push_back(k);
    out_.name.push_back(out_.strings.intern(name));
    out_.parent.push_back(parent);
    out_.subtree_end.push_back(id + 1);
    out_.depth.push_back(parent == kNoNode ? 0 : uint16_t(out_.depth[parent] + 1));
    out_.phase.push_back(in_.phase[origin]);
    out_.begin.push_back(in_.begin[origin]);
    out_.end.push_back(in_.end[origin]);
    out_.event.push_back(members == 1 ? in_.event[origin] : kNoEvent);
    out_.mirror.push_back(kNoNode);
    out_.members.push_back(members);
    out_.origin.push_back(origin);
    out_.gpu_busy.push_back(in_.gpu_busy.empty() ? 0 : in_.gpu_busy[origin]);
    out_.gpu_begin.push_back(in_.gpu_begin.empty() ? 0 : in_.gpu_begin[origin]);
    out_.gpu_end.push_back(in_.gpu_end.empty() ? 0 : in_.gpu_end[origin]);
    out_.kernels.push_back(in_.kernels.empty() ? 0 : in_.kernels[origin]);
    out_.sync.push_back(in_.sync.empty() ? 0 : in_.sync[origin]);
    out_.share.push_back(0);
    out_.bound.push_back(in_.bound.empty() ? Bound::Unknown : in_.bound[origin]);
    return id;
  }

  bool has_metrics() const { return !in_.kernels.empty(); }

  // Children after hoisting: a dominant layer child is replaced by its own children.
  void expanded_children(NodeId n, Ns parent_dur, std::vector<NodeId>& out, int budget) {
    for (NodeId ch = in_.first_child(n); ch != kNoNode; ch = in_.next_sibling(ch)) {
      Ns d = in_.duration(ch);
      bool hoist = o_.hoist && budget > 0 && parent_dur > 0 && double(d) > o_.hoist_share * double(parent_dur) &&
                   (in_.kind[ch] == NodeKind::Layer) && in_.first_child(ch) != kNoNode &&
                   in_.first_child(n) == ch && in_.next_sibling(ch) == kNoNode;
      if (hoist) expanded_children(ch, parent_dur, out, budget - 1);
      else out.push_back(ch);
    }
  }

  void emit_node(NodeId n, NodeId out_parent) {
    NodeId id = push(in_.kind[n], in_.name_of(n), out_parent, n, 1);
    emit_children(n, id);
    out_.subtree_end[id] = NodeId(out_.kind.size());
  }

  void emit_children(NodeId n, NodeId id) {
    std::vector<NodeId> kids;
    expanded_children(n, in_.duration(n), kids, 8);
    std::vector<Sibling> sibs(kids.size());
    for (size_t i = 0; i < kids.size(); ++i) {
      NodeId k = kids[i];
      // Same name and same kind: a layer and an op may share a name.
      sibs[i] = {in_.begin[k], in_.end[k], uint64_t(in_.name[k]) << 8 | uint64_t(in_.kind[k]),
                 in_.kind[k] == NodeKind::Iteration || in_.kind[k] == NodeKind::Phase};
    }
    for (const SiblingBlock& b : reduce_siblings(sibs, in_.duration(n), o_)) {
      if (b.kind == SiblingBlock::Group) emit_group(kids, b.first, b.first + b.count, id);
      else if (b.kind == SiblingBlock::SameName) emit_run(kids, b.first, b.count, id);
      else emit_node(kids[b.first], id);
    }
  }

  void add_metrics(NodeId g, NodeId x) {
    if (!has_metrics()) return;
    out_.gpu_busy[g] += in_.gpu_busy[x];
    out_.kernels[g] += in_.kernels[x];
    out_.sync[g] += in_.sync[x];
    if (in_.kernels[x]) {
      if (out_.gpu_begin[g] == 0 || in_.gpu_begin[x] < out_.gpu_begin[g]) out_.gpu_begin[g] = in_.gpu_begin[x];
      out_.gpu_end[g] = std::max(out_.gpu_end[g], in_.gpu_end[x]);
    }
  }

  // Consecutive same-name siblings kids[i0, i0 + count) as one "name ×N" node.
  void emit_run(const std::vector<NodeId>& kids, size_t i0, uint32_t count, NodeId parent) {
    std::string nm = std::string(in_.name_of(kids[i0])) + " \u00d7" + std::to_string(count);
    NodeId g = push(NodeKind::Group, nm, parent, kids[i0], count);
    out_.gpu_busy[g] = out_.kernels[g] = 0;
    out_.gpu_begin[g] = out_.gpu_end[g] = out_.sync[g] = 0;
    for (size_t k = i0; k < i0 + count; ++k) add_metrics(g, kids[k]);
    out_.end[g] = in_.end[kids[i0 + count - 1]];
    out_.subtree_end[g] = NodeId(out_.kind.size());
  }

  // Tiny siblings kids[i0, i1) as one group named after the one that takes the most time.
  void emit_group(const std::vector<NodeId>& kids, size_t i0, size_t i1, NodeId parent) {
    std::unordered_map<StrId, Ns> by_name;
    Ns total = 0;
    bool all_ops = true, all_layers = true;
    for (size_t k = i0; k < i1; ++k) {
      NodeId x = kids[k];
      by_name[in_.name[x]] += in_.duration(x);
      total += in_.duration(x);
      all_ops &= in_.kind[x] == NodeKind::Op;
      all_layers &= in_.kind[x] == NodeKind::Layer;
    }
    StrId top = kNoStr;
    Ns top_t = -1;
    for (auto& [nm, d] : by_name)
      if (d > top_t || (d == top_t && nm < top)) {
        top = nm;
        top_t = d;
      }
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", total > 0 ? 100.0 * double(top_t) / double(total) : 0.0);
    std::string nm = std::to_string(i1 - i0) + (all_ops ? " ops" : all_layers ? " layers" : " items") + " (top: " +
                     std::string(in_.strings.view(top)) + " " + pct + ")";
    NodeId g = push(NodeKind::Group, nm, parent, kids[i0], uint32_t(i1 - i0));
    out_.gpu_busy[g] = out_.kernels[g] = 0;
    out_.gpu_begin[g] = out_.gpu_end[g] = out_.sync[g] = 0;
    Ns longest = -1;
    for (size_t k = i0; k < i1; ++k) {
      add_metrics(g, kids[k]);
      if (has_metrics() && in_.duration(kids[k]) > longest) {
        longest = in_.duration(kids[k]);
        out_.bound[g] = in_.bound[kids[k]];
      }
    }
    out_.end[g] = in_.end[kids[i1 - 1]];
    out_.subtree_end[g] = NodeId(out_.kind.size());
  }

  void finish_shares() {
    for (size_t i = 0; i < out_.size(); ++i) {
      NodeId p = out_.parent[i];
      Ns d = out_.end[i] - out_.begin[i];
      Ns pd = p == kNoNode ? d : out_.end[p] - out_.begin[p];
      out_.share[i] = pd > 0 ? float(double(d) / double(pd)) : (p == kNoNode ? 1.f : 0.f);
    }
  }
};

}  // namespace

AnnotationTree reduce_tree(const AnnotationTree& t, const ReduceOptions& options) {
  return Reducer(t, options).run();
}

}  // namespace strata
