// Noise reduction into the multi-scale levels: a child that takes most of its parent is
// hoisted (its children shown in its place), consecutive siblings with the same name
// collapse into "name ×N", and runs of tiny siblings merge into one group named like
// "37 ops (top: aten::add_ 40%)". The input tree is left as it is.
#include "core/annotate/annotation.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace strata {

namespace {

struct Item {
  NodeId first;    // original node
  uint32_t count;  // consecutive original siblings it stands for (1: the node itself)
  bool run;        // same-name run
  Ns begin, end;
  size_t idx;      // position of `first` among the expanded children
};

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
    Ns pd = in_.duration(n);
    expanded_children(n, pd, kids, 8);
    if (kids.empty()) return;
    // Same-name runs.
    std::vector<Item> items;
    for (size_t i = 0; i < kids.size();) {
      size_t j = i + 1;
      if (o_.collapse_runs && in_.kind[kids[i]] != NodeKind::Iteration && in_.kind[kids[i]] != NodeKind::Phase)
        while (j < kids.size() && in_.name[kids[j]] == in_.name[kids[i]] && in_.kind[kids[j]] == in_.kind[kids[i]]) ++j;
      items.push_back({kids[i], uint32_t(j - i), j - i > 1, in_.begin[kids[i]], in_.end[kids[j - 1]], i});
      i = j;
    }
    // Tiny siblings.
    double tiny = o_.tiny_share * double(std::max<Ns>(pd, 1));
    for (size_t i = 0; i < items.size();) {
      auto is_tiny = [&](const Item& it) {
        NodeKind k = in_.kind[it.first];
        return k != NodeKind::Iteration && k != NodeKind::Phase && double(it.end - it.begin) < tiny;
      };
      size_t j = i;
      while (j < items.size() && is_tiny(items[j])) ++j;
      if (j - i >= std::max<uint32_t>(o_.min_group, 2)) {
        emit_group(items, i, j, kids, id);
        i = j;
        continue;
      }
      if (j == i) j = i + 1;
      for (size_t k = i; k < j; ++k) emit_item(items[k], kids, id);
      i = j;
    }
  }

  void add_metrics(NodeId g, NodeId x) {
    if (!has_metrics()) return;
    out_.gpu_busy[g] += in_.gpu_busy[x];
    out_.kernels[g] += in_.kernels[x];
    if (in_.kernels[x]) {
      if (out_.gpu_begin[g] == 0 || in_.gpu_begin[x] < out_.gpu_begin[g]) out_.gpu_begin[g] = in_.gpu_begin[x];
      out_.gpu_end[g] = std::max(out_.gpu_end[g], in_.gpu_end[x]);
    }
  }

  void emit_item(const Item& it, const std::vector<NodeId>& kids, NodeId parent) {
    if (!it.run) {
      emit_node(it.first, parent);
      return;
    }
    std::string nm = std::string(in_.name_of(it.first)) + " \u00d7" + std::to_string(it.count);
    NodeId g = push(NodeKind::Group, nm, parent, it.first, it.count);
    out_.gpu_busy[g] = out_.kernels[g] = 0;
    out_.gpu_begin[g] = out_.gpu_end[g] = 0;
    size_t i0 = it.idx;
    for (size_t k = i0; k < i0 + it.count; ++k) add_metrics(g, kids[k]);
    out_.end[g] = it.end;
    out_.subtree_end[g] = NodeId(out_.kind.size());
  }

  void emit_group(const std::vector<Item>& items, size_t i, size_t j, const std::vector<NodeId>& kids, NodeId parent) {
    size_t i0 = items[i].idx;
    size_t i1 = items[j - 1].idx + items[j - 1].count;
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
    out_.gpu_begin[g] = out_.gpu_end[g] = 0;
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
