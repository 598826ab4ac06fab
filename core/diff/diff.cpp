// Two runs compared (diff.h).
#include "core/diff/diff.h"

#include "core/json_writer.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace strata {

std::string path_in_iteration(const AnnotationTree& t, NodeId n) {
  std::string p = t.path(n);
  if (t.ancestor(n, NodeKind::Iteration) == kNoNode) return p;
  size_t slash = p.find('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

namespace {

// One side: which iterations count, and per node whether it is in one of them.
struct Side {
  const TraceModel& m;
  const Annotation& a;
  std::vector<uint8_t> in;  // per node of a.tree
  size_t iterations = 0;
  Ns iteration = 0;         // the median (or chosen) iteration
  int64_t shown = -1;       // its index
  bool gpu = false;

  Side(const TraceModel& model, const Annotation& ann, int64_t chosen) : m(model), a(ann) {
    const AnnotationTree& t = a.tree;
    in.assign(t.size(), 0);
    gpu = a.gpu_ops > 0;
    if (a.iterations.empty()) {  // no iterations: the whole tree is one
      std::fill(in.begin(), in.end(), 1);
      iterations = 1;
      iteration = m.time_end - m.time_begin;
      return;
    }
    std::vector<std::pair<Ns, size_t>> complete;  // duration, index
    for (size_t i = 0; i < a.iterations.size(); ++i) {
      if (chosen >= 0 && int64_t(i) != chosen) continue;
      const Iteration& it = a.iterations[i];
      if (it.node != kNoNode)
        for (NodeId n = it.node; n < t.subtree_end[it.node]; ++n) in[n] = 1;
      ++iterations;
      if (!it.partial || chosen >= 0) complete.push_back({it.end - it.begin, i});
    }
    std::sort(complete.begin(), complete.end());
    iteration = complete.empty() ? a.analyses.iter_median : complete[complete.size() / 2].first;
    if (!complete.empty()) shown = int64_t(complete[complete.size() / 2].second);
    iterations = std::max<size_t>(1, iterations);
  }
  Ns per_iteration(Ns total) const { return total / Ns(iterations); }

  // Each GPU op of the counted iterations with its node.
  template <class Fn>
  void for_each_gpu_op(Fn&& fn) const {
    for (const Track& tr : m.tracks) {
      if (tr.kind != TrackKind::GpuStream) continue;
      for (EventId g = tr.events.begin; g < tr.events.end; ++g) {
        if (!is_gpu_op_cat(m.ev.category(g)) || g >= a.node_of_event.size()) continue;
        const NodeId n = a.node_of_event[g];
        if (n != kNoNode && in[n]) fn(g, n);
      }
    }
  }

  // Per node, its GPU ops' time summed, collectives apart: they are communication (a row of
  // their own), and a DDP bucket's all-reduce launched from the backward of whichever layer
  // finished the bucket is not that layer's compute.
  std::vector<Ns> gpu_time;
  void gather_gpu_time() {
    const AnnotationTree& t = a.tree;
    gpu_time.assign(t.size(), 0);
    for_each_gpu_op([&](EventId g, NodeId n) {
      if (!is_communication_kernel(m.name_of(g))) gpu_time[n] += m.ev.dur[g];
    });
    for (NodeId n = NodeId(t.size()); n-- > 1;)
      if (t.parent[n] != kNoNode) gpu_time[t.parent[n]] += gpu_time[n];
  }
};


// Rows from per-name totals on each side, matched by name.
std::vector<DiffRow> by_name(const std::map<std::string, Ns>& a, const std::map<std::string, Ns>& b, const Side& sa,
                             const Side& sb) {
  std::vector<DiffRow> rows;
  for (auto& [name, t] : a) {
    DiffRow r;
    r.name_a = name;
    r.a = sa.per_iteration(t);
    if (auto it = b.find(name); it != b.end()) r.name_b = name, r.b = sb.per_iteration(it->second);
    rows.push_back(std::move(r));
  }
  for (auto& [name, t] : b)
    if (!a.count(name)) {
      DiffRow r;
      r.name_b = name;
      r.b = sb.per_iteration(t);
      rows.push_back(std::move(r));
    }
  return rows;
}

Ns magnitude(Ns d) { return d < 0 ? -d : d; }

void by_change(std::vector<DiffRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return magnitude(x.delta()) > magnitude(y.delta());
  });
}

// A layer as the alignment sees it, summed over the counted iterations under its path: what it
// is (its name, the numbers of inferred names aside: "Conv 7" is a "Conv"; a module's own name
// is kept) in its phase, its time and its self time (less its child layers').
struct LayerItem {
  std::string path, key;
  size_t parent = SIZE_MAX;  // the item of its nearest enclosing layer
  bool leaf = true;
  Ns time = 0, self = 0;
  std::vector<size_t> leaves;  // the leaf items under it (itself when a leaf)
};

std::string layer_key(const AnnotationTree& t, NodeId n) {
  std::string name(t.name_of(n));
  if (name.find(' ') != std::string::npos) {  // inferred ("Conv 7", "Block 2: 2 Conv + ReLU")
    std::string k;
    for (char c : name)
      if (c < '0' || c > '9') k += c;
    name = k;
  }
  NodeId ph = t.ancestor(n, NodeKind::Phase);
  return (ph != kNoNode ? std::string(t.name_of(ph)) : std::string()) + "/" + name;
}

// A layer's time: its GPU ops' time (collectives apart) when both sides ran on a GPU; else wall
// time from the end of what ran before it in its parent, a layer or a loose op: the gap between
// them is its module call's (its Python, hooks, a stall at the start of its forward), the loose
// ops are the parent's own. The first in its parent starts at its own start; what precedes it
// is the parent's.
Ns layer_time(const Side& s, NodeId n, NodeId previous_sibling) {
  const AnnotationTree& t = s.a.tree;
  if (s.gpu) return s.gpu_time[n];
  Ns from = previous_sibling != kNoNode ? std::min(t.begin[n], t.end[previous_sibling]) : t.begin[n];
  return t.end[n] - from;
}

// The layers of the counted iterations by path, in forward order: a path first seen in a later
// iteration (a layer one iteration's ops did not map to) goes after the one before it there.
std::vector<LayerItem> layer_items(const Side& s) {
  const AnnotationTree& t = s.a.tree;
  std::vector<LayerItem> items;
  std::vector<size_t> order;  // items in forward order
  std::unordered_map<std::string, size_t> at;
  std::vector<size_t> item_of(t.size(), SIZE_MAX);
  size_t previous_item = SIZE_MAX;
  for (NodeId n = 0; n < t.size(); ++n) {
    if (t.kind[n] == NodeKind::Iteration) previous_item = SIZE_MAX;
    if (!s.in[n] || t.kind[n] != NodeKind::Layer) continue;
    std::string p = path_in_iteration(t, n);
    auto [it, fresh] = at.emplace(p, items.size());
    if (fresh) {
      items.push_back({p, layer_key(t, n), SIZE_MAX, true, 0, 0, {}});
      auto after = previous_item == SIZE_MAX ? order.begin() : std::find(order.begin(), order.end(), previous_item) + 1;
      order.insert(after, it->second);
    }
    const size_t i = previous_item = it->second;
    item_of[n] = i;
    NodeId up = t.parent[n];
    while (up != kNoNode && t.kind[up] != NodeKind::Layer) up = t.parent[up];
    if (up != kNoNode && item_of[up] != SIZE_MAX && item_of[up] != i) {
      items[i].parent = item_of[up];
      items[item_of[up]].leaf = false;
    }
    NodeId previous = kNoNode;
    Ns children = 0;
    for (NodeId c : t.children(n)) {
      if (t.kind[c] == NodeKind::Layer) children += layer_time(s, c, previous);
      previous = c;
    }
    previous = kNoNode;
    if (t.parent[n] != kNoNode)
      for (NodeId c : t.children(t.parent[n])) {
        if (c == n) break;
        previous = c;
      }
    const Ns time = layer_time(s, n, previous);
    items[i].time += time;
    items[i].self += std::max<Ns>(0, time - children);
  }
  std::vector<size_t> position(items.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::vector<LayerItem> sorted(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].parent != SIZE_MAX) items[i].parent = position[items[i].parent];
    sorted[position[i]] = std::move(items[i]);
  }
  items = std::move(sorted);
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].leaf)
      for (size_t up = i; up != SIZE_MAX; up = items[up].parent) items[up].leaves.push_back(i);
  return items;
}

// The longest common subsequence of the two leaf-key sequences: matched leaf pairs, in order.
// Leaves, not blocks: two runs of one model may group their layers differently (a block whose
// ops changed no longer repeats its neighbours) while their leaves still line up.
std::vector<std::pair<size_t, size_t>> align_leaves(const std::vector<LayerItem>& a, const std::vector<LayerItem>& b) {
  std::vector<size_t> la, lb;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].leaf) la.push_back(i);
  for (size_t j = 0; j < b.size(); ++j)
    if (b[j].leaf) lb.push_back(j);
  const size_t n = la.size(), m = lb.size();
  std::vector<std::pair<size_t, size_t>> out;
  if (n == 0 || m == 0) return out;
  if (n * m > (size_t(1) << 26)) {  // too large to align: match equal paths
    std::unordered_map<std::string, size_t> pos;
    for (size_t j : lb) pos.emplace(b[j].path, j);
    for (size_t i : la)
      if (auto it = pos.find(a[i].path); it != pos.end()) out.push_back({i, it->second});
    return out;
  }
  std::vector<uint32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a[la[i]].key == b[lb[j]].key ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (a[la[i]].key == b[lb[j]].key) out.push_back({la[i++], lb[j++]});
    else if (at(i + 1, j) >= at(i, j + 1)) ++i;
    else ++j;
  }
  return out;
}

// Blocks (layers with layers inside) match when they hold mostly the same aligned leaves: the
// overlap of their leaf sets over their union at least a half, the best pairs first.
std::vector<std::pair<size_t, size_t>> align_blocks(const std::vector<LayerItem>& a, const std::vector<LayerItem>& b,
                                                    const std::vector<size_t>& b_of_a) {
  struct Candidate { size_t i, j; double score; };
  std::vector<Candidate> candidates;
  std::vector<size_t> shared(b.size(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].leaf) continue;
    std::fill(shared.begin(), shared.end(), 0);
    for (size_t l : a[i].leaves)
      if (b_of_a[l] != SIZE_MAX)
        for (size_t up = b[b_of_a[l]].parent; up != SIZE_MAX; up = b[up].parent) ++shared[up];
    for (size_t j = 0; j < b.size(); ++j) {
      if (!shared[j]) continue;
      const double score = double(shared[j]) / double(a[i].leaves.size() + b[j].leaves.size() - shared[j]);
      if (score >= 0.5) candidates.push_back({i, j, score + (a[i].key == b[j].key ? 1e-3 : 0)});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](auto& x, auto& y) { return x.score > y.score; });
  std::vector<uint8_t> used_a(a.size(), 0), used_b(b.size(), 0);
  std::vector<std::pair<size_t, size_t>> out;
  for (const Candidate& c : candidates)
    if (!used_a[c.i] && !used_b[c.j]) used_a[c.i] = used_b[c.j] = 1, out.push_back({c.i, c.j});
  return out;
}

std::string signed_duration(Ns d) { return (d >= 0 ? "+" : "-") + format_duration(magnitude(d)); }

std::string slower_or_faster(Ns d) { return format_duration(magnitude(d)) + (d >= 0 ? " slower" : " faster"); }

// The last component of a row's path, for sentences.
std::string short_name(const DiffRow& r) {
  const std::string& p = r.name_b.empty() ? r.name_a : r.name_b;
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void layers(const Side& sa, const Side& sb, Diff& d) {
  std::vector<LayerItem> a = layer_items(sa), b = layer_items(sb);
  std::vector<std::pair<size_t, size_t>> matched = align_leaves(a, b);
  std::vector<size_t> b_of_a(a.size(), SIZE_MAX);
  for (auto [i, j] : matched) b_of_a[i] = j;
  for (auto pair : align_blocks(a, b, b_of_a)) matched.push_back(pair);
  std::vector<uint8_t> used_a(a.size(), 0), used_b(b.size(), 0);
  auto row = [&](const LayerItem* x, const LayerItem* y, const char* detail) {
    DiffRow r;
    if (x) r.name_a = x->path, r.a = sa.per_iteration(x->time), r.self_a = sa.per_iteration(x->self);
    if (y) r.name_b = y->path, r.b = sb.per_iteration(y->time), r.self_b = sb.per_iteration(y->self);
    r.detail = detail;
    d.layers.push_back(std::move(r));
  };
  for (auto [i, j] : matched) {
    used_a[i] = used_b[j] = 1;
    row(&a[i], &b[j], "");
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (!used_a[i]) row(&a[i], nullptr, "only in A");
  for (size_t j = 0; j < b.size(); ++j)
    if (!used_b[j]) row(nullptr, &b[j], "only in B");
  d.layers_a = a.size();
  d.layers_b = b.size();
  d.layers_aligned = matched.size();
  const size_t larger = std::max(a.size(), b.size());
  d.aligned_share = larger ? double(matched.size()) / double(larger) : 1.0;
  d.same_model = larger == 0 || d.aligned_share >= 0.5;
  // By the change in self time: a stall inside one layer ranks that layer, not every block
  // around it up to the model.
  std::stable_sort(d.layers.begin(), d.layers.end(), [](const DiffRow& x, const DiffRow& y) {
    return magnitude(x.self_delta()) > magnitude(y.self_delta());
  });
}

void phases(const Side& sa, const Side& sb, Diff& d) {
  auto totals = [](const Side& s) {
    std::map<std::string, Ns> out;
    const AnnotationTree& t = s.a.tree;
    for (NodeId n = 0; n < t.size(); ++n)
      if (s.in[n] && t.kind[n] == NodeKind::Phase) out[std::string(t.name_of(n))] += t.duration(n);
    return out;
  };
  d.phases = by_name(totals(sa), totals(sb), sa, sb);
  by_change(d.phases);
}

// Outermost CPU ops by name, in wall time.
void ops(const Side& sa, const Side& sb, Diff& d) {
  auto totals = [](const Side& s) {
    std::map<std::string, Ns> out;
    const AnnotationTree& t = s.a.tree;
    for (NodeId n = 0; n < t.size(); ++n)
      if (s.in[n] && t.kind[n] == NodeKind::Op && (t.parent[n] == kNoNode || t.kind[t.parent[n]] != NodeKind::Op))
        out[std::string(t.name_of(n))] += t.duration(n);
    return out;
  };
  d.ops = by_name(totals(sa), totals(sb), sa, sb);
  by_change(d.ops);
}

// GPU work by the CPU op that launched it; the detail names each side's longest kernel.
void kernels(const Side& sa, const Side& sb, Diff& d) {
  struct Work { std::map<std::string, Ns> by_op; std::map<std::string, std::map<std::string, Ns>> names; };
  auto gather = [](const Side& s) {
    Work w;
    const TraceModel& m = s.m;
    const AnnotationTree& t = s.a.tree;
    s.for_each_gpu_op([&](EventId g, NodeId n) {
      NodeId op = t.ancestor(n, NodeKind::Op);
      while (op != kNoNode && t.parent[op] != kNoNode && t.kind[t.parent[op]] == NodeKind::Op) op = t.parent[op];
      std::string key = op != kNoNode ? std::string(t.name_of(op)) : std::string("(no op)");
      w.by_op[key] += m.ev.dur[g];
      w.names[key][std::string(m.name_of(g))] += m.ev.dur[g];
    });
    return w;
  };
  Work a = gather(sa), b = gather(sb);
  d.kernels = by_name(a.by_op, b.by_op, sa, sb);
  auto longest = [](const std::map<std::string, Ns>& names) {
    auto it = std::max_element(names.begin(), names.end(), [](auto& x, auto& y) { return x.second < y.second; });
    std::string n = it == names.end() ? std::string() : it->first;
    return n.size() > 60 ? n.substr(0, 57) + "..." : n;
  };
  for (DiffRow& r : d.kernels) {
    std::string ka = r.name_a.empty() ? "" : longest(a.names[r.name_a]), kb = r.name_b.empty() ? "" : longest(b.names[r.name_b]);
    r.detail = ka == kb ? ka : (ka.empty() ? "-" : ka) + " → " + (kb.empty() ? "-" : kb);
  }
  by_change(d.kernels);
}

// Communication and idle time by cause (whole-trace figures, per counted iteration), memory at
// the peak.
void other(const Side& sa, const Side& sb, Diff& d) {
  const Analyses &ra = sa.a.analyses, &rb = sb.a.analyses;
  auto add = [&](std::string name, Ns a, Ns b, const char* detail) {
    DiffRow r;
    r.name_a = r.name_b = std::move(name);
    r.a = sa.per_iteration(a);
    r.b = sb.per_iteration(b);
    r.detail = detail;
    d.other.push_back(std::move(r));
  };
  if (ra.communication || rb.communication) add("communication", ra.communication, rb.communication, "collective kernels' busy time");
  for (size_t k = 0; k < size_t(IdleCause::Count); ++k)
    if (ra.idle.by_cause[k] || rb.idle.by_cause[k])
      add(std::string("GPU idle: ") + idle_cause_name(IdleCause(k)), ra.idle.by_cause[k], rb.idle.by_cause[k], "");
  by_change(d.other);
  if (const DeviceMemory* p = ra.memory.peak_device()) d.peak_memory_a = p->peak_allocated;
  if (const DeviceMemory* p = rb.memory.peak_device()) d.peak_memory_b = p->peak_allocated;
}

void notes(const Side& sa, const Side& sb, Diff& d) {
  if (sa.a.iterations.size() != sb.a.iterations.size())
    d.notes.push_back(strprintf("A has %zu iterations, B %zu: compared per iteration", sa.a.iterations.size(),
                                sb.a.iterations.size()));
  if (sa.gpu != sb.gpu)
    d.notes.push_back(std::string(sa.gpu ? "B" : "A") + " has no GPU work: layers and GPU work are compared in wall time");
  if (sa.m.distributed.rank != sb.m.distributed.rank)
    d.notes.push_back(strprintf("A is rank %lld, B rank %lld", (long long)sa.m.distributed.rank, (long long)sb.m.distributed.rank));
  auto device = [](const TraceModel& m) { return m.devices.empty() ? std::string() : m.devices.front().name; };
  if (device(sa.m) != device(sb.m) && !device(sa.m).empty() && !device(sb.m).empty())
    d.notes.push_back("A ran on " + device(sa.m) + ", B on " + device(sb.m) + ": GPU work is matched by the ops that launched it");
  if (!d.same_model)
    d.notes.push_back(strprintf("the two look like different models: only %zu of %zu layers align (%.0f%%); what matched is shown",
                                d.layers_aligned, std::max(d.layers_a, d.layers_b), 100 * d.aligned_share));
}

// A layer as the explanation names it: its own name, and the layer it is in when it has one
// ("Tanh 1 in Layer 2: attention + MLP"); the model's root and stages say nothing.
std::string name_in_phase(std::string_view path) {
  std::vector<std::string_view> parts;
  for (size_t at = 0; at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view part = path.substr(at, slash - at);
    if (part != "Model" && !part.starts_with("Stage ")) parts.push_back(part);
    at = slash + 1;
  }
  if (parts.empty()) return std::string(path);
  std::string out(parts.back());
  if (parts.size() >= 2) out += " in " + std::string(parts[parts.size() - 2]);
  return out;
}

// The changes in words, largest first: the iteration, then each phase that moved with the
// layer and the GPU work that moved most inside it.
void explain(Diff& d) {
  const Ns di = d.iteration_b - d.iteration_a;
  d.explain.push_back(strprintf("Iteration %s (A %s, B %s)", slower_or_faster(di).c_str(), format_duration(d.iteration_a).c_str(),
                                format_duration(d.iteration_b).c_str()));
  const Ns floor = std::max<Ns>(1000, std::max(d.iteration_a, d.iteration_b) / 100);
  for (const DiffRow& p : d.phases) {
    if (magnitude(p.delta()) < floor) continue;
    const std::string phase = p.name_b.empty() ? p.name_a : p.name_b;
    std::string s = phase + " " + slower_or_faster(p.delta());
    if (!p.a) s += " (only in B)";
    else if (!p.b) s += " (only in A)";
    for (const DiffRow& l : d.layers) {  // the layer inside it that moved most
      const std::string& path = l.name_b.empty() ? l.name_a : l.name_b;
      if (!path.starts_with(phase + "/") || magnitude(l.delta()) < floor / 2) continue;
      s += ": " + name_in_phase(path.substr(phase.size() + 1)) + " " + signed_duration(l.delta());
      if (!l.a) s += " (added)";
      else if (!l.b) s += " (removed)";
      break;
    }
    d.explain.push_back(s);
  }
  for (const DiffRow& k : d.kernels) {
    if (magnitude(k.delta()) < floor) break;
    d.explain.push_back("GPU work launched by " + short_name(k) + " " + signed_duration(k.delta()) +
                        (k.detail.empty() ? "" : " (" + k.detail + ")"));
    break;
  }
}

// A row's names: one field when both sides' names are one (phases), else one per side, null on
// the side that lacks the row.
void write_rows(JsonWriter& w, const char* key, const std::vector<DiffRow>& rows, const char* a_name, const char* b_name,
                size_t limit) {
  w.key(key).begin_array();
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const DiffRow& r = rows[i];
    w.begin_object();
    if (std::string_view(a_name) == b_name) {
      w.field(a_name, r.name_a.empty() ? r.name_b : r.name_a);
    } else {
      r.name_a.empty() ? w.field(a_name, nullptr) : w.field(a_name, r.name_a);
      r.name_b.empty() ? w.field(b_name, nullptr) : w.field(b_name, r.name_b);
    }
    r.a ? w.field("a_ns", *r.a) : w.field("a_ns", nullptr);
    r.b ? w.field("b_ns", *r.b) : w.field("b_ns", nullptr);
    w.field("delta_ns", r.delta());
    if (r.self_a || r.self_b) w.field("self_delta_ns", r.self_delta());
    if (!r.detail.empty()) w.field("detail", r.detail);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

Diff diff_runs(const TraceModel& ma, const Annotation& a, const TraceModel& mb, const Annotation& b, const DiffOptions& o) {
  Diff d;
  d.file_a = ma.path;
  d.file_b = mb.path;
  Side sa(ma, a, o.iteration_a), sb(mb, b, o.iteration_b);
  sa.gpu = sb.gpu = sa.gpu && sb.gpu;  // one basis for both sides
  d.time_basis = sa.gpu ? "gpu" : "wall";
  if (sa.gpu) sa.gather_gpu_time(), sb.gather_gpu_time();
  d.iteration_a = sa.iteration;
  d.iteration_b = sb.iteration;
  d.iterations_a = sa.iterations;
  d.iterations_b = sb.iterations;
  d.shown_a = sa.shown;
  d.shown_b = sb.shown;
  phases(sa, sb, d);
  layers(sa, sb, d);
  ops(sa, sb, d);
  kernels(sa, sb, d);
  other(sa, sb, d);
  notes(Side(ma, a, o.iteration_a), Side(mb, b, o.iteration_b), d);
  explain(d);
  return d;
}

std::string diff_text(const Diff& d) {
  std::string o = "A: " + d.file_a + "\nB: " + d.file_b + "\n";
  for (const std::string& s : d.explain) o += "  " + s + "\n";
  for (const std::string& n : d.notes) o += "  note: " + n + "\n";
  o += strprintf("  layers: %zu in A, %zu in B, %zu aligned (%.0f%%); times per iteration, %s time\n", d.layers_a, d.layers_b,
                 d.layers_aligned, 100 * d.aligned_share, d.time_basis == "gpu" ? "GPU" : "wall");
  auto table = [&](const char* title, const std::vector<DiffRow>& rows, size_t limit) {
    if (rows.empty()) return;
    o += strprintf("  %-62s %12s %12s %12s\n", title, "A", "B", "change");
    for (size_t i = 0; i < rows.size() && i < limit; ++i) {
      const DiffRow& r = rows[i];
      std::string name = r.name_b.empty() ? r.name_a : r.name_b;
      if (!r.name_a.empty() && !r.name_b.empty() && r.name_a != r.name_b) name = r.name_a + " ~ " + r.name_b;
      if (name.size() > 60) name = "..." + name.substr(name.size() - 57);
      std::string change = signed_duration(r.delta());
      if (r.self_a || r.self_b) change += " (self " + signed_duration(r.self_delta()) + ")";
      if (!r.detail.empty()) change += "  " + r.detail;
      o += strprintf("    %-60s %12s %12s %s\n", name.c_str(), r.a ? format_duration(*r.a).c_str() : "-",
                     r.b ? format_duration(*r.b).c_str() : "-", change.c_str());
    }
  };
  table("phases", d.phases, 20);
  table("layers, by the change in self time", d.layers, 15);
  table("GPU work by the op that launched it", d.kernels, 10);
  table("CPU ops (outermost)", d.ops, 10);
  table("other", d.other, 10);
  if (d.peak_memory_a || d.peak_memory_b)
    o += "  memory at the peak: A " + (d.peak_memory_a ? format_bytes(double(*d.peak_memory_a)) : std::string("unknown")) + ", B " +
         (d.peak_memory_b ? format_bytes(double(*d.peak_memory_b)) : std::string("unknown")) + "\n";
  return o;
}

std::string diff_json(const Diff& d) {
  JsonWriter w;
  w.begin_object().field("schema", "strata.diff/1").field("a", d.file_a).field("b", d.file_b).field("time_basis", d.time_basis);
  w.key("iteration").begin_object().field("a_ns", d.iteration_a).field("b_ns", d.iteration_b)
      .field("delta_ns", d.iteration_b - d.iteration_a).field("iterations_a", uint64_t(d.iterations_a))
      .field("iterations_b", uint64_t(d.iterations_b)).end_object();
  write_rows(w, "phases", d.phases, "phase", "phase", SIZE_MAX);
  write_rows(w, "layers", d.layers, "path_a", "path_b", SIZE_MAX);
  write_rows(w, "ops", d.ops, "name_a", "name_b", 200);
  write_rows(w, "kernels", d.kernels, "op_a", "op_b", 200);
  write_rows(w, "other", d.other, "name", "name", SIZE_MAX);
  w.key("peak_memory").begin_object();
  d.peak_memory_a ? w.field("a_bytes", *d.peak_memory_a) : w.field("a_bytes", nullptr);
  d.peak_memory_b ? w.field("b_bytes", *d.peak_memory_b) : w.field("b_bytes", nullptr);
  w.end_object();
  w.key("alignment").begin_object().field("layers_a", uint64_t(d.layers_a)).field("layers_b", uint64_t(d.layers_b))
      .field("layers_aligned", uint64_t(d.layers_aligned)).field("aligned_share", d.aligned_share).field("same_model", d.same_model)
      .end_object();
  w.key("explain").begin_array();
  for (const std::string& s : d.explain) w.value(s);
  w.end_array();
  w.key("notes").begin_array();
  for (const std::string& s : d.notes) w.value(s);
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace strata
