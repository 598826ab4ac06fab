// The tree down to ops: iteration → phase → layers (nested) → op. Forward layers come from
// nn.Module python frames, else user annotations (record_function / NVTX ranges) around the
// ops; forward ops with neither are grouped into layer-like units named by what they do,
// and repeated runs of units (residual blocks, transformer layers) get a block tier.
#include "core/annotate/internal.h"
#include "core/name_memo.h"

#include <algorithm>
#include <unordered_map>

namespace strata::annot {

namespace {


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
  NameMemo host_collective;                   // is_host_collective, per name

  LayerBuild(Context& cx, TreeBuilder& bx, Annotation& ax, std::vector<NodeId>& no)
      : c(cx), b(bx), a(ax), node_of(no), host_collective(cx.m, is_host_collective) {
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
      // its child ops are what gets grouped. An aten op is one op whatever it runs inside
      // (cosine_similarity's products and sums, aten::max's squeeze_ and as_strided_), and so
      // is an autograd Function that computes one function with no weights (tabnet's sparsemax).
      if (ch.empty() && !is_parametric(c.name(r)) && !c.name(r).starts_with("aten::")) {
        std::vector<EventId> kids = child_ops(c, r);
        const bool weights = std::any_of(kids.begin(), kids.end(), [&](EventId k) { return is_parametric(c.name(k)); });
        if (kids.size() >= 8 && weights) {
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

  // A collective with the packing around it (DDP's buffer broadcast: flatten_dense_tensors,
  // c10d::broadcast_, unflatten_dense_tensors and a copy_ per buffer) is communication, no
  // model layer: a layer of its own, named for the collective, the rest left to inference. A
  // lone collective (a tensor-parallel all-reduce between two linears) stays where it runs.
  std::vector<NodeId> communication_runs(NodeId parent, const std::vector<NodeId>& ops) {
    auto name = [&](NodeId op) { return b.event[op] == kNoEvent ? std::string_view() : c.name(b.event[op]); };
    auto is_collective = [&](NodeId op) { return b.event[op] != kNoEvent && host_collective(b.event[op]); };
    auto packs = [](std::string_view n) {
      return n == "aten::flatten_dense_tensors" || n == "aten::unflatten_dense_tensors" || n == "aten::copy_" || n == "aten::narrow" ||
             n == "aten::view" || n == "aten::as_strided" || n == "aten::empty" || n == "aten::detach" || n == "aten::set_";
    };
    std::vector<NodeId> rest;
    for (size_t i = 0; i < ops.size();) {
      size_t j = i, collectives = 0, packing = 0;
      while (j < ops.size() && (is_collective(ops[j]) || packs(name(ops[j])))) {
        collectives += is_collective(ops[j]);
        packing += name(ops[j]).ends_with("dense_tensors");
        ++j;
      }
      if (collectives && packing) {
        std::string label = "Communication: ";
        for (size_t k = i; k < j; ++k)
          if (is_collective(ops[k]) && name(ops[k]) != "record_param_comms") {
            std::string_view collective = strip_prefix(name(ops[k]), "c10d::");
            if (collective.ends_with('_')) collective.remove_suffix(1);  // c10d::broadcast_
            label += collective;
            break;
          }
        const NodeId layer = b.add(NodeKind::Layer, label, parent, b.phase[ops[i]], b.begin[ops[i]], b.end[ops[i]]);
        for (size_t k = i; k < j; ++k) {
          b.parent[ops[k]] = layer;
          b.widen(layer, b.begin[ops[k]], b.end[ops[k]]);
        }
        i = j;
        continue;
      }
      const size_t end = std::max(j, i + 1);
      rest.insert(rest.end(), ops.begin() + long(i), ops.begin() + long(end));
      i = end;
    }
    return rest;
  }

  // Layer-like units for runs of ops that have no finer structure (infer_layers.cpp): without
  // the model's text, units, blocks and the model's root by what PyTorch's modules are; with
  // it, the units take its modules' names and its module tree groups them.
  void heuristic_units(NodeId parent, const std::vector<NodeId>& ops, bool model_root) {
    any_heuristic = true;
    if (leaf_kinds.empty()) {
      infer_layers(c, b, parent, ops, model_root);
      return;
    }
    std::vector<InferredUnit> us = infer_units(c, b, parent, ops);
    std::vector<NodeId> units;
    std::vector<std::string> names = unit_names(us);
    for (size_t i = 0; i < us.size(); ++i) {
      b.name[us[i].node] = b.strings.intern(names[i]);
      units.push_back(us[i].node);
    }
    // With the model's names, its module tree groups the units.
    std::vector<std::string> scopes(units.size());
    for (size_t i = 0; i < units.size(); ++i) {
      const std::string path = names[i].substr(0, names[i].find(" #"));  // "layer4.0.relu #2": the relu called again
      if (path.find('.') != std::string::npos && path.find(' ') == std::string::npos) scopes[i] = path.substr(0, path.rfind('.'));
    }
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

  // The model's module a unit aligns with (--model), else what it is ("Conv 3"). A unit left
  // over after the alignment whose module holds a leaf of its kind is that leaf called again
  // (one ReLU applied twice in a block). Names are unique among the siblings.
  std::vector<std::string> unit_names(const std::vector<InferredUnit>& us) {
    const std::vector<ModelLeaf>& leaves = c.opt.model;
    std::vector<std::string_view> kinds;
    for (const InferredUnit& u : us) kinds.push_back(u.kind);
    const std::vector<int32_t> leaf = align_to_model(kinds, leaf_kinds);
    // "layer4.0.conv1" -> "layer4.0" -> "layer4" -> "" (the root).
    auto scope_of = [](std::string_view path) {
      const size_t dot = path.rfind('.');
      return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
    };
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
      if (nm.empty()) nm = us[i].label + " " + std::to_string(++counter[us[i].kind]);  // "Conv 3"
      if (uint32_t k = used[nm]++; k) nm += " #" + std::to_string(k + 1);
      names[i] = std::move(nm);
    }
    return names;
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
  // What the backward shows of the forward's data flow, for the inference.
  if (!lb.direct_ops.empty()) find_shared_inputs(c, iters);
  // Only ops directly in the forward phase: a module or a user range is already a layer. A
  // phase with no layer of the program's is the model's whole forward (the root module).
  std::vector<uint8_t> has_layers(b.size(), 0);
  for (NodeId n = 0; n < b.size(); ++n)
    if (b.kind[n] == NodeKind::Layer && b.parent[n] != kNoNode) has_layers[b.parent[n]] = 1;
  // A range of the program's around the whole model (DistributedDataParallel.forward, its finer
  // ranges only on part of it) holding several weight ops directly leaves them ungrouped:
  // inference fills that gap, and says so. A range around part of the forward holding weight
  // ops is the program's own grouping of them (a block it names), kept as it is.
  auto coarse_range = [&](NodeId parent, const std::vector<NodeId>& ops) {
    if (b.kind[parent] != NodeKind::Layer || b.event[parent] == kNoEvent || c.cat(b.event[parent]) != Cat::UserAnnotation) return false;
    NodeId phase = b.parent[parent];
    while (phase != kNoNode && b.kind[phase] != NodeKind::Phase) phase = b.parent[phase];
    if (phase == kNoNode || 2 * (b.end[parent] - b.begin[parent]) < b.end[phase] - b.begin[phase]) return false;
    size_t weights = 0;
    for (NodeId op : ops) weights += b.event[op] != kNoEvent && is_weight_op(c.name(b.event[op]));
    return weights >= 2;
  };
  for (auto& [parent, all_ops] : lb.direct_ops) {
    const std::vector<NodeId> ops = lb.communication_runs(parent, all_ops);
    if (ops.size() < 4) continue;
    if (b.kind[parent] == NodeKind::Phase || std::find(lb.containers.begin(), lb.containers.end(), parent) != lb.containers.end()) {
      lb.heuristic_units(parent, ops, b.kind[parent] == NodeKind::Phase && !has_layers[parent]);
    } else if (coarse_range(parent, ops)) {
      lb.heuristic_units(parent, ops, false);
      if (!a.ranges_with_inferred_layers++) a.inferred_inside = std::string(b.strings.view(b.name[parent]));
    }
  }
  a.layer_source = lb.any_module ? LayerSource::Module
                   : lb.any_annotation ? LayerSource::UserAnnotation
                   : lb.any_heuristic ? LayerSource::Heuristic
                                      : LayerSource::None;
}

}  // namespace strata::annot
