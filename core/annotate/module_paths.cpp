// Layers from nn.Module frames named by the model's attribute paths (`--model`, File ▸ Load
// model structure): a pass over the finished tree, before its noise reduction.
//
// A trace recorded with_modules names a module call "nn.Module: Conv2d_3": its class and an
// instance number per class (the same for every call of one instance), never its attribute
// name; with_stack frames do not carry it either (their names are the callee's file, first
// line and function: "torch/nn/modules/module.py(1783): _call_impl", "…/resnet.py(89):
// forward"). print(model) lists each module's children in definition order, and a forward
// calls a module's children of one class in that order in practice (conv1 before conv2, query
// before key and value), so the k-th instance of class C called under a module is its k-th
// child of class C.
#include "core/annotate/annotation.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace strata {

namespace {

constexpr std::string_view kModulePrefix = "nn.Module: ";

// Containers that are never called: their modules are called by the module holding them.
bool is_container(std::string_view type) { return type == "ModuleList" || type == "ModuleDict"; }

// The modules a module calls, in definition order: its children, with a container's in its
// place ("encoder.layers.0" for a TransformerEncoder, whose `layers` is a ModuleList).
void callees(const std::vector<ModelModule>& model, int32_t m, std::vector<int32_t>& out) {
  for (int32_t c : model[size_t(m)].children) {
    if (is_container(model[size_t(c)].type)) callees(model, c, out);
    else out.push_back(c);
  }
}

// "Conv2d_3" → "Conv2d" (the class of an instance as the profiler names it).
std::string_view class_of(std::string_view instance) {
  const size_t u = instance.rfind('_');
  if (u == std::string_view::npos || u == 0 || u + 1 == instance.size()) return instance;
  for (char ch : instance.substr(u + 1))
    if (!std::isdigit(static_cast<unsigned char>(ch))) return instance;
  return instance.substr(0, u);
}

}  // namespace

size_t name_module_layers(const TraceModel& m, const std::vector<ModelModule>& model, Annotation& a) {
  AnnotationTree& t = a.tree;
  if (model.empty() || t.size() == 0) return 0;
  auto module_frame = [&](NodeId n) {
    const EventId e = t.event[n];
    return t.kind[n] == NodeKind::Layer && e != kNoEvent && e < m.ev.size() && m.ev.category(e) == Cat::PythonFunction &&
           m.name_of(e).starts_with(kModulePrefix);
  };
  std::vector<int32_t> mapped(t.size(), -1);  // per node: the model module it is, or -1
  std::vector<uint8_t> is_module(t.size(), 0);
  std::vector<uint8_t> taken(model.size(), 0);        // a module some instance already is
  std::vector<StrId> name_of_module(model.size(), kNoStr);
  std::unordered_map<StrId, int32_t> instance;        // "Conv2d_3" (a trace string) → its model module
  std::unordered_map<StrId, bool> unmatched;          // instances the model does not list
  std::unordered_map<int32_t, std::vector<int32_t>> called_by;  // callees(), once per module
  size_t renamed = 0;
  // Pre-order: a node's module ancestors are matched before it.
  for (NodeId n = 1; n < t.size(); ++n) {
    if (!module_frame(n)) continue;
    is_module[n] = 1;
    const EventId e = t.event[n];
    const StrId key = m.ev.name[e];
    int32_t idx = -1;
    if (auto it = instance.find(key); it != instance.end()) {
      idx = it->second;
    } else {
      const std::string_view cls = class_of(m.name_of(e).substr(kModulePrefix.size()));
      // The nearest module call around it that the model lists: user ranges and modules it does
      // not list in between (wrappers: activation checkpointing's, DDP's) are passed.
      NodeId p = t.parent[n];
      while (p != kNoNode && t.kind[p] == NodeKind::Layer && !(is_module[p] && mapped[p] >= 0)) p = t.parent[p];
      const int32_t around = p != kNoNode && t.kind[p] == NodeKind::Layer ? mapped[p] : -1;
      if (around >= 0) {
        auto [calls, fresh] = called_by.try_emplace(around);
        if (fresh) callees(model, around, calls->second);
        for (int32_t ch : calls->second)
          if (!taken[size_t(ch)] && model[size_t(ch)].type == cls) {
            idx = ch;
            break;
          }
      } else if (!taken[0] && model[0].type == cls) {  // the model itself (possibly inside a wrapper: DDP, a loss)
        idx = 0;
      }
      if (idx >= 0) {
        taken[size_t(idx)] = 1;
        instance.emplace(key, idx);
      } else {
        unmatched.emplace(key, true);
      }
    }
    mapped[n] = idx;
    if (idx < 0) continue;
    StrId& nm = name_of_module[size_t(idx)];
    if (nm == kNoStr) nm = t.strings.intern(model[size_t(idx)].path.empty() ? model[size_t(idx)].type : model[size_t(idx)].path);
    t.name[n] = nm;
    ++renamed;
  }
  // Backward layers take their forward layer's name.
  for (NodeId n = 0; n < t.size(); ++n) {
    const NodeId f = t.mirror[n];
    if (f != kNoNode && f < t.size() && mapped[f] >= 0) {
      t.name[n] = t.name[f];
      ++renamed;
    }
  }
  if (instance.empty() && unmatched.empty()) return renamed;  // no module calls: the inferred layers use the model
  if (instance.empty()) {
    a.notes.push_back("model structure: no nn.Module call in the trace is a " + model[0].type +
                      " (the model's root): layers keep the trace's module names");
    return renamed;
  }
  const size_t callable = size_t(std::count_if(model.begin(), model.end(), [](const ModelModule& mm) { return !is_container(mm.type); }));
  std::string note = "layers named by the model's attribute paths: " +
                     (instance.size() == callable ? "all " + std::to_string(callable) + " of its modules"
                                                  : std::to_string(instance.size()) + " of its " + std::to_string(callable) + " modules") +
                     " called";
  if (!unmatched.empty()) {
    std::vector<std::string_view> names;
    for (const auto& [k, _] : unmatched) names.push_back(m.strings.view(k).substr(kModulePrefix.size()));
    std::sort(names.begin(), names.end());
    note += "; " + std::to_string(names.size()) + " module instance" + (names.size() == 1 ? "" : "s") +
            " it does not list keep their names (";
    for (size_t i = 0; i < names.size() && i < 4; ++i) note += (i ? ", " : "") + std::string(names[i]);
    note += names.size() > 4 ? ", …)" : ")";
  }
  a.notes.push_back(std::move(note));
  return renamed;
}

}  // namespace strata
