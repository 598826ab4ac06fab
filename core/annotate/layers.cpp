// The tree down to ops: iteration → phase → layers (nested) → op. Forward layers come from
// nn.Module python frames, else user annotations (record_function / NVTX ranges) around the
// ops; forward ops with neither are grouped into layer-like units named by what they do,
// and repeated runs of units (residual blocks, transformer layers) get a block tier.
#include "core/annotate/internal.h"

#include <algorithm>
#include <unordered_map>

namespace strata::annot {

namespace {

bool is_anchor(std::string_view kind) {
  return kind != "reshape" && kind != "other" && kind != "add" && kind != "mul" && kind != "cat" && kind != "reduce";
}

struct LayerBuild {
  Context& c;
  TreeBuilder& b;
  Annotation& a;
  std::vector<NodeId>& node_of;
  std::unordered_map<EventId, NodeId> layer_of_event;
  std::unordered_map<NodeId, std::vector<NodeId>> direct_ops;  // non-module parents → op children
  std::vector<EventId> markers;  // phase markers, sorted (rare: a per-event column costs more)
  std::vector<NodeId> containers;  // layers made from one op holding a whole graph
  bool any_module = false, any_annotation = false, any_heuristic = false;
  std::vector<std::string_view> leaf_kinds;  // --model: op_kind of each leaf module's type

  LayerBuild(Context& cx, TreeBuilder& bx, Annotation& ax, std::vector<NodeId>& no)
      : c(cx), b(bx), a(ax), node_of(no) {
    for (const ModelLeaf& l : c.opt.model) leaf_kinds.push_back(op_kind(l.type));
  }

  // The layer chain of an op root (outermost first): nn.Module frames and user ranges.
  void chain(EventId r, std::vector<EventId>& out) {
    out.clear();
    for (EventId p = c.parent[r]; p != kNoEvent; p = c.parent[p]) {
      Cat k = c.cat(p);
      std::string_view n = c.name(p);
      if (k == Cat::PythonFunction) {
        if (c.opt.module_events_as_layers && n.starts_with("nn.Module: ")) out.push_back(p);
      } else if (k == Cat::UserAnnotation) {
        if (c.opt.user_annotations_as_layers && !is_profiler_step_name(n) &&
            !std::binary_search(markers.begin(), markers.end(), p))
          out.push_back(p);
      }
    }
    std::reverse(out.begin(), out.end());
  }

  NodeId layer_node(EventId e, NodeId parent, PhaseKind ph) {
    auto it = layer_of_event.find(e);
    if (it != layer_of_event.end()) return it->second;
    bool module = c.cat(e) == Cat::PythonFunction;
    std::string_view n = module ? strip_prefix(c.name(e), "nn.Module: ") : c.name(e);
    NodeId id = b.add(NodeKind::Layer, n, parent, ph, c.m.ev.start[e], c.m.ev.end(e), e);
    layer_of_event.emplace(e, id);
    (module ? any_module : any_annotation) = true;
    return id;
  }

  void forward_segment(Segment& s, NodeId phase_node) {
    std::vector<EventId> ch;
    for (EventId r : s.items) {
      if (!c.is_root(r)) continue;
      chain(r, ch);
      // A compiled graph (CompiledFunction, TorchScript) holds the whole forward in one op:
      // its child ops are what gets grouped.
      if (ch.empty() && !is_parametric(c.name(r))) {
        std::vector<EventId> kids = child_ops(c, r);
        if (kids.size() >= 8) {
          NodeId box = b.add_named(NodeKind::Layer, c.m.ev.name[r], c.name(r), phase_node, s.phase, c.m.ev.start[r],
                                   c.m.ev.end(r), r);
          node_of[r] = box;
          containers.push_back(box);
          for (EventId k : kids) {
            NodeId op = b.add_named(NodeKind::Op, c.m.ev.name[k], c.name(k), box, s.phase, c.m.ev.start[k],
                                    c.m.ev.end(k), k);
            node_of[k] = op;
            direct_ops[box].push_back(op);
          }
          continue;
        }
      }
      NodeId parent = phase_node;
      for (EventId l : ch) parent = layer_node(l, parent, s.phase);
      NodeId op =
          b.add_named(NodeKind::Op, c.m.ev.name[r], c.name(r), parent, s.phase, c.m.ev.start[r], c.m.ev.end(r), r);
      node_of[r] = op;
      if (parent == phase_node || b.event[parent] == kNoEvent || c.cat(b.event[parent]) != Cat::PythonFunction)
        direct_ops[parent].push_back(op);
    }
  }

  // Layer-like units for runs of ops that have no finer structure.
  struct Unit {
    std::string_view kind;
    std::vector<NodeId> ops;
    bool lead = false;      // has ops before its anchor (views, residual adds, counters)
    bool has_add = false;   // one of them is an add (a residual connection)
  };

  void heuristic_units(NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
    if (leaf_kinds.empty()) {  // by what PyTorch's modules are (infer_layers.cpp)
      infer_layers(c, b, parent, ops, model_root);
      any_heuristic = true;
      return;
    }
    // Ops that only prepare (views, in-place counters like BatchNorm's num_batches_tracked,
    // residual adds) join the next anchor op's unit; trailing ones join the last unit.
    std::vector<Unit> us;
    std::vector<NodeId> pending;
    bool pending_add = false;
    for (NodeId op : ops) {
      std::string_view k = c.kind(b.event[op]);
      if (!is_anchor(k)) {
        pending.push_back(op);
        pending_add |= k == "add";
        continue;
      }
      Unit u{k, pending, !pending.empty(), pending_add};
      u.ops.push_back(op);
      us.push_back(std::move(u));
      pending.clear();
      pending_add = false;
    }
    if (!pending.empty()) {
      if (us.empty()) us.push_back({"ops", {}, true, pending_add});
      us.back().ops.insert(us.back().ops.end(), pending.begin(), pending.end());
    }
    // Structural merges: a projection shortcut (a conv right after a norm, its norm, then
    // the residual add and activation) is one unit; so is an MLP block (linear directly
    // followed by its norm, activation, dropout).
    std::vector<Unit> merged;
    for (size_t i = 0; i < us.size(); ++i) {
      Unit u = us[i];
      if (u.kind == "conv" && !merged.empty() && merged.back().kind == "batch_norm" && i + 2 < us.size() &&
          us[i + 1].kind == "batch_norm" && us[i + 2].kind == "activation" && us[i + 2].has_add) {
        for (size_t k = 1; k <= 2; ++k) u.ops.insert(u.ops.end(), us[i + k].ops.begin(), us[i + k].ops.end());
        u.kind = "shortcut";
        i += 2;
      } else if (u.kind == "linear" && i + 1 < us.size() && !us[i + 1].lead &&
                 (us[i + 1].kind == "layer_norm" || us[i + 1].kind == "batch_norm")) {
        size_t j = i + 1;
        u.ops.insert(u.ops.end(), us[j].ops.begin(), us[j].ops.end());
        while (j + 1 < us.size() && !us[j + 1].lead && (us[j + 1].kind == "activation" || us[j + 1].kind == "dropout")) {
          ++j;
          u.ops.insert(u.ops.end(), us[j].ops.begin(), us[j].ops.end());
        }
        u.kind = "mlp";
        i = j;
      }
      merged.push_back(std::move(u));
    }
    std::vector<NodeId> units;
    std::vector<std::string_view> kinds;
    std::vector<std::string> labels;
    for (const Unit& u : merged) labels.push_back(readable(u));
    std::vector<std::string> names = unit_names(merged, labels);
    for (size_t i = 0; i < merged.size(); ++i) {
      Unit& u = merged[i];
      NodeId first = u.ops.front();
      NodeId id = b.add(NodeKind::Layer, names[i], parent, b.phase[first], b.begin[first], b.end[first]);
      for (NodeId op : u.ops) {
        b.parent[op] = id;
        b.widen(id, b.begin[op], b.end[op]);
      }
      units.push_back(id);
      kinds.push_back(u.kind);
    }
    any_heuristic = true;
    if (leaf_kinds.empty()) {
      blocks(parent, units, kinds, names, labels);
      return;
    }
    // With the model's names, its module tree groups the units.
    std::vector<std::string> scopes(units.size());
    for (size_t i = 0; i < units.size(); ++i)
      if (names[i].find('.') != std::string::npos && names[i].find(' ') == std::string::npos)
        scopes[i] = names[i].substr(0, names[i].rfind('.'));
    for (size_t i = 0; i < units.size(); ++i) {  // a unit left unnamed between two of one module is in it
      if (!scopes[i].empty()) continue;
      size_t next = i + 1;
      while (next < units.size() && scopes[next].empty()) ++next;
      if (i > 0 && next < units.size() && scopes[next].starts_with(scopes[i - 1])) scopes[i] = scopes[i - 1];
    }
    module_groups(parent, units, scopes, 0, units.size(), 0);
  }

  // Consecutive units whose scopes share their first `depth` + 1 path components are one
  // module's: a layer named by that path, holding them, grouped again one level down.
  void module_groups(NodeId parent, const std::vector<NodeId>& units, const std::vector<std::string>& scopes, size_t from,
                     size_t to, size_t depth) {
    auto prefix = [&](const std::string& scope) -> std::string_view {  // the first depth + 1 components, or ""
      size_t pos = 0;
      for (size_t d = 0; d <= depth; ++d) {
        if (pos > scope.size()) return {};
        size_t dot = scope.find('.', pos);
        pos = dot == std::string::npos ? scope.size() + 1 : dot + 1;
      }
      return std::string_view(scope).substr(0, std::min(scope.size(), pos - 1));
    };
    for (size_t i = from; i < to;) {
      std::string_view p = prefix(scopes[i]);
      size_t j = i + 1;
      while (j < to && !p.empty() && prefix(scopes[j]) == p) ++j;
      if (!p.empty()) {
        NodeId first = units[i];
        NodeId layer = b.add(NodeKind::Layer, std::string(p), parent, b.phase[first], b.begin[first], b.end[first]);
        for (size_t k = i; k < j; ++k) {
          if (b.parent[units[k]] != parent) continue;  // already in a deeper group
          b.parent[units[k]] = layer;
          b.widen(layer, b.begin[units[k]], b.end[units[k]]);
        }
        std::vector<NodeId> inner(units.begin() + long(i), units.begin() + long(j));
        std::vector<std::string> inner_scopes(scopes.begin() + long(i), scopes.begin() + long(j));
        module_groups(layer, inner, inner_scopes, 0, inner.size(), depth + 1);
      }
      i = j;
    }
  }

  // What a unit is: its kind ("Conv"), a merged unit by what it merges ("MLP: Linear → LayerNorm → ReLU").
  std::string readable(const Unit& u) {
    std::string_view anchor_op;
    for (NodeId op : u.ops)
      if (c.kind(b.event[op]) == u.kind || anchor_op.empty()) anchor_op = c.name(b.event[op]);
    std::string name = readable_unit(u.kind, anchor_op);
    if (u.kind != "shortcut" && u.kind != "mlp") return name;
    std::string parts;
    for (NodeId op : u.ops) {
      std::string_view k = c.kind(b.event[op]);
      if (!is_anchor(k)) continue;
      std::string r = readable_unit(k, c.name(b.event[op]));
      if (parts.empty() || !parts.ends_with(r)) parts += (parts.empty() ? "" : " → ") + r;
    }
    return name + ": " + parts;
  }

  // The model's module a unit aligns with (--model), else what it is ("Conv 3"). A unit left
  // over after the alignment whose module holds a leaf of its kind is that leaf called again
  // (one ReLU applied twice in a block). Names are unique among the siblings.
  std::vector<std::string> unit_names(const std::vector<Unit>& us, const std::vector<std::string>& labels) {
    const std::vector<ModelLeaf>& leaves = c.opt.model;
    std::vector<int32_t> leaf;
    if (!leaf_kinds.empty()) {
      std::vector<std::string_view> kinds;
      for (const Unit& u : us) kinds.push_back(u.kind == "shortcut" ? "conv" : u.kind == "mlp" ? "linear" : u.kind);
      leaf = align_to_model(kinds, leaf_kinds);
    }
    auto scope_of = [](std::string_view path) { return path.substr(0, std::min(path.size(), path.rfind('.'))); };
    auto leaf_name = [&](size_t j) { return leaves[j].path.empty() ? leaves[j].type : leaves[j].path; };
    std::vector<std::string> names(us.size());
    std::unordered_map<std::string_view, uint32_t> counter;
    std::unordered_map<std::string, uint32_t> used;
    std::string_view scope;  // the module of the last aligned unit
    for (size_t i = 0; i < us.size(); ++i) {
      std::string nm;
      if (!leaf.empty() && leaf[i] >= 0) {
        nm = leaf_name(size_t(leaf[i]));
        scope = scope_of(leaves[size_t(leaf[i])].path);
      } else if (!leaf.empty()) {  // the nearest module around the last aligned one holding a leaf of this kind
        for (std::string_view s = scope; nm.empty(); s = scope_of(s)) {
          for (size_t j = 0; j < leaves.size() && nm.empty(); ++j)
            if (leaf_kinds[j] == us[i].kind && scope_of(leaves[j].path) == s) nm = leaf_name(j);
          if (s.empty()) break;
        }
      }
      if (nm.empty()) {  // "Conv 3", "MLP 1: Linear → LayerNorm → ReLU"
        const size_t colon = std::min(labels[i].size(), labels[i].find(':'));
        nm = labels[i].substr(0, colon) + " " + std::to_string(++counter[us[i].kind]) + labels[i].substr(colon);
      }
      if (uint32_t k = used[nm]++; k) nm += " #" + std::to_string(k + 1);
      names[i] = std::move(nm);
    }
    return names;
  }

  // Tandem repeats of unit kinds: blocks of P units repeated at least twice in a row.
  // "Block 2: 2 Conv + 2 BatchNorm + ReLU + Shortcut": what its units are, in order, counted
  // (no commas: scenario specs and lists are comma-separated).
  static std::string block_name(uint32_t n, const std::vector<std::string>& labels, size_t from, size_t count) {
    std::vector<std::pair<std::string_view, uint32_t>> seen;
    for (size_t k = from; k < from + count; ++k) {
      std::string_view r = labels[k];
      r = r.substr(0, r.find(':'));  // "MLP: Linear → …" counts as MLP
      auto it = std::find_if(seen.begin(), seen.end(), [&](auto& x) { return x.first == r; });
      if (it == seen.end()) seen.push_back({r, 1});
      else ++it->second;
    }
    std::string name = "Block " + std::to_string(n) + ":";
    for (size_t k = 0; k < seen.size(); ++k)
      name += (k ? " + " : " ") + (seen[k].second > 1 ? std::to_string(seen[k].second) + " " : std::string()) + std::string(seen[k].first);
    return name;
  }

  // A block is named after the module holding all its units when they carry the model's names.
  void blocks(NodeId parent, const std::vector<NodeId>& units, const std::vector<std::string_view>& kinds,
              const std::vector<std::string>& names, const std::vector<std::string>& labels) {
    size_t n = units.size(), i = 0;
    uint32_t count = 0;
    while (i + 4 <= n) {
      size_t best_p = 0, best_r = 0;
      size_t max_p = std::min<size_t>(64, (n - i) / 2);
      for (size_t p = 3; p <= max_p; ++p) {
        size_t r = 1;
        while (i + (r + 1) * p <= n) {
          bool same = true;
          for (size_t k = 0; k < p && same; ++k) same = kinds[i + k] == kinds[i + r * p + k];
          if (!same) break;
          ++r;
        }
        if (r >= 2 && p * r > best_p * best_r) {
          best_p = p;
          best_r = r;
        }
      }
      if (best_r < 2) {
        ++i;
        continue;
      }
      for (size_t r = 0; r < best_r; ++r) {
        NodeId first = units[i + r * best_p];
        std::string_view common = leaf_kinds.empty() ? std::string_view() : std::string_view(names[i + r * best_p]);
        for (size_t k = 1; k < best_p; ++k) {
          std::string_view other = names[i + r * best_p + k];
          size_t len = 0;
          while (len < common.size() && len < other.size() && common[len] == other[len]) ++len;
          common = common.substr(0, len);
        }
        common = common.substr(0, common.rfind('.') == std::string_view::npos ? 0 : common.rfind('.'));
        NodeId blk = b.add(NodeKind::Layer, common.empty() ? block_name(++count, labels, i + r * best_p, best_p) : std::string(common),
                           parent, b.phase[first], b.begin[first], b.end[first]);
        for (size_t k = 0; k < best_p; ++k) {
          NodeId u = units[i + r * best_p + k];
          b.parent[u] = blk;
          b.widen(blk, b.begin[u], b.end[u]);
        }
      }
      i += best_p * best_r;
    }
  }
};

}  // namespace

void build_layers(Context& c, std::vector<IterWork>& iters, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of) {
  LayerBuild lb(c, b, a, node_of);
  for (auto& w : iters) lb.markers.insert(lb.markers.end(), w.markers.begin(), w.markers.end());
  std::sort(lb.markers.begin(), lb.markers.end());
  Ns rb = iters.empty() ? c.m.time_begin : iters.front().it.begin;
  Ns re = iters.empty() ? c.m.time_end : iters.back().it.end;
  NodeId root = b.add(NodeKind::Root, "trace", kNoNode, PhaseKind::Other, rb, re);
  for (auto& w : iters) {
    if (c.cancelled()) return;  // the caller drops the partial tree
    NodeId it = b.add(NodeKind::Iteration, w.it.name, root, PhaseKind::Other, w.it.begin, w.it.end);
    w.it.node = it;
    b.widen(root, w.it.begin, w.it.end);
    for (Segment& s : w.segments) {
      NodeId ph = b.add(NodeKind::Phase, s.label.empty() ? phase_name(s.phase) : s.label, it, s.phase, s.begin, s.end);
      s.node = ph;
      if (s.phase == PhaseKind::Forward) {
        lb.forward_segment(s, ph);
        continue;
      }
      for (EventId r : s.items) {
        if (!c.is_root(r) || c.on_backward(r)) continue;  // backward roots: map_backward
        NodeId op = b.add_named(NodeKind::Op, c.m.ev.name[r], c.name(r), ph, s.phase, c.m.ev.start[r], c.m.ev.end(r), r);
        node_of[r] = op;
      }
    }
  }
  // Only ops directly in the forward phase: a module or a user range is already a layer. A
  // phase with no layer of the program's is the model's whole forward (the root module).
  std::vector<uint8_t> has_layers(b.size(), 0);
  for (NodeId n = 0; n < b.size(); ++n)
    if (b.kind[n] == NodeKind::Layer && b.parent[n] != kNoNode) has_layers[b.parent[n]] = 1;
  for (auto& [parent, ops] : lb.direct_ops)
    if ((b.kind[parent] == NodeKind::Phase ||
         std::find(lb.containers.begin(), lb.containers.end(), parent) != lb.containers.end()) &&
        ops.size() >= 4)
      lb.heuristic_units(parent, ops, b.kind[parent] == NodeKind::Phase && !has_layers[parent]);
  a.layer_source = lb.any_module ? LayerSource::Module
                   : lb.any_annotation ? LayerSource::UserAnnotation
                   : lb.any_heuristic ? LayerSource::Heuristic
                                      : LayerSource::None;
}

}  // namespace strata::annot
