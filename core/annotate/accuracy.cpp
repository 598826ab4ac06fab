// Scoring against the ground truth a trace holds (see accuracy.h).
#include "core/annotate/accuracy.h"

#include "core/annotate/internal.h"
#include "core/json_scan.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace strata {

namespace {

bool phase_of_range(std::string_view name, PhaseKind& p) {
  if (name == "Load Data" || name == "data_loading") p = PhaseKind::DataLoading;
  else if (name == "Forward" || name == "forward") p = PhaseKind::Forward;
  else if (name == "Calc Loss" || name == "loss") p = PhaseKind::Loss;
  else if (name == "Zero Grad" || name == "zero_grad") p = PhaseKind::ZeroGrad;
  else if (name == "Backward" || name == "backward") p = PhaseKind::Backward;
  else if (name == "Optimizer" || name == "optimizer") p = PhaseKind::Optimizer;
  else return false;
  return true;
}

// Truth ranges are record_function ranges: user annotations, or (the legacy autograd
// profiler writes no categories) uncategorised events.
bool truth_category(Cat c) { return c == Cat::UserAnnotation || c == Cat::None; }

bool is_hid(const TraceModel& m, EventId e) {
  return truth_category(m.ev.category(e)) && m.name_of(e).starts_with("hid=");
}

// A phase range of the truth: Hotline's are hid= ranges; the corpus's are plain user ranges.
bool is_truth_phase(const TraceModel& m, EventId e) {
  PhaseKind p;
  return truth_category(m.ev.category(e)) && phase_of_range(m.name_of(e), p);
}

bool is_module_frame(const TraceModel& m, EventId e) {
  return m.ev.category(e) == Cat::PythonFunction && is_module_frame_name(m.name_of(e));
}

// "hid=12 layer1.0 (BasicBlock)" → 12, "layer1.0 (BasicBlock)".
std::string_view parse_hid(std::string_view n, int32_t& id) {
  n.remove_prefix(4);
  id = -1;
  auto r = std::from_chars(n.data(), n.data() + n.size(), id);
  return r.ptr < n.data() + n.size() ? std::string_view(r.ptr + 1, size_t(n.data() + n.size() - r.ptr - 1)) : "";
}

void nest_phases(GroundTruth& g) {
  for (auto& r : g.ranges) {
    if (r.is_phase) continue;
    for (auto& p : g.ranges)
      if (p.is_phase && r.begin >= p.begin && r.end <= p.end) r.phase = p.phase;
  }
}

// A CPU op as the annotation sees one (cpu_op, or a complete uncategorised event on a CPU
// thread), less PyTorch's markers and the truth's own ranges.
bool is_op(const TraceModel& m, EventId e, bool cpu_track) {
  Cat k = m.ev.category(e);
  if (!(k == Cat::CpuOp || (cpu_track && k == Cat::None && m.ev.phase[e] == EventPhase::Complete))) return false;
  std::string_view n = m.name_of(e);
  PhaseKind p;
  return !is_pytorch_marker(n) && !n.starts_with("hid=") && !phase_of_range(n, p);
}

// Per event: its enclosing event on its track (the track's levels, as the annotation reads them).
std::vector<EventId> parents_of(const TraceModel& m) {
  std::vector<EventId> parent(m.ev.size(), kNoEvent);
  for (const Track& t : m.tracks)
    for (size_t d = 1; d < t.levels.size(); ++d) {
      const IndexRange& up = t.levels[d - 1];
      const IndexRange& lv = t.levels[d];
      EventId p = up.begin;
      for (EventId e = lv.begin; e < lv.end; ++e) {
        while (p + 1 < up.end && m.ev.start[p + 1] <= m.ev.start[e]) ++p;
        if (p < up.end && m.ev.start[p] <= m.ev.start[e]) parent[e] = p;
      }
    }
  return parent;
}

// The outermost CPU ops of a trace (an op no other op encloses), by start.
std::vector<EventId> op_roots(const TraceModel& m, const std::vector<EventId>& parent) {
  std::vector<uint8_t> under(m.ev.size(), 0);
  std::vector<EventId> roots;
  for (const Track& t : m.tracks) {
    bool cpu = t.kind == TrackKind::CpuThread;
    // Levels are stored in order: an event's parent comes before it.
    for (EventId e = t.events.begin; e < t.events.end; ++e) {
      bool op = is_op(m, e, cpu);
      EventId p = parent[e];
      bool up = p != kNoEvent && under[p];
      under[e] = op || up;
      if (op && !up) roots.push_back(e);
    }
  }
  std::sort(roots.begin(), roots.end(), [&](EventId x, EventId y) {
    return m.ev.start[x] != m.ev.start[y] ? m.ev.start[x] < m.ev.start[y] : x < y;
  });
  return roots;
}

uint64_t name_hash(std::string_view n) { return std::hash<std::string_view>{}(n); }

// The truth tree: calls and leaf ops per forward.
void build_tree(const TraceModel& m, GroundTruth& g, const std::vector<TruthModule>* modules) {
  const size_t n = m.ev.size();
  const bool ranges = g.source == GroundTruth::Source::Ranges;
  std::vector<EventId> parent = parents_of(m);
  std::vector<uint8_t> role(n, 0);  // 1 call, 2 forward, 4 loss (module source)
  bool any_forward = false;
  for (EventId e = 0; e < n; ++e) {
    if (ranges) {
      PhaseKind p = PhaseKind::Other;
      if (is_hid(m, e)) {
        int32_t id;
        std::string_view label = parse_hid(m.name_of(e), id);
        if (!phase_of_range(label, p)) role[e] = 1;
        else if (p == PhaseKind::Forward) role[e] = 2;
      } else if (is_truth_phase(m, e) && phase_of_range(m.name_of(e), p) && p == PhaseKind::Forward) {
        role[e] = 2;
      }
      any_forward |= role[e] == 2;
    } else if (is_module_frame(m, e)) {
      role[e] = is_loss_module(module_of_frame(m.name_of(e))) ? 4 : 1;
    }
  }
  // Per event, by its ancestors: the forward it is in, its innermost call, whether an op or a
  // loss encloses it. Without forward ranges, a forward is an outermost call.
  std::vector<EventId> fwd(n, kNoEvent), call(n, kNoEvent);
  std::vector<uint8_t> under_op(n, 0), in_loss(n, 0);
  std::vector<EventId> roots, call_events;
  for (const Track& t : m.tracks) {
    bool cpu = t.kind == TrackKind::CpuThread;
    for (EventId e = t.events.begin; e < t.events.end; ++e) {
      EventId p = parent[e];
      if (p != kNoEvent) {
        fwd[e] = role[p] == 2 ? p : fwd[p];
        call[e] = role[p] == 1 || role[p] == 3 ? p : call[p];
        under_op[e] = under_op[p];
        in_loss[e] = in_loss[p] || role[p] == 4;
      }
      if (role[e] == 1 && !in_loss[e]) {
        if (!any_forward && fwd[e] == kNoEvent && call[e] == kNoEvent) role[e] = 3;  // a call that is a forward
        if (fwd[e] != kNoEvent || role[e] == 3) call_events.push_back(e);
      }
      if (!any_forward && role[e] != 3 && p != kNoEvent && role[p] == 3) fwd[e] = p;
      if (under_op[e]) continue;
      if (is_op(m, e, cpu)) {
        under_op[e] = 1;
        if (fwd[e] != kNoEvent && !in_loss[e]) roots.push_back(e);
      }
    }
  }
  auto fwd_of = [&](EventId e) { return role[e] == 3 ? e : fwd[e]; };
  // Forwards by start.
  std::vector<EventId> fwd_events;
  for (EventId e = 0; e < n; ++e)
    if (role[e] == 2 || role[e] == 3) fwd_events.push_back(e);
  auto by_start = [&](EventId x, EventId y) {
    if (m.ev.start[x] != m.ev.start[y]) return m.ev.start[x] < m.ev.start[y];
    if (m.ev.dur[x] != m.ev.dur[y]) return m.ev.dur[x] > m.ev.dur[y];
    return x < y;
  };
  std::sort(fwd_events.begin(), fwd_events.end(), by_start);
  std::unordered_map<EventId, uint32_t> fwd_index, call_index;
  for (EventId f : fwd_events) {
    fwd_index[f] = uint32_t(g.forwards.size());
    g.forwards.push_back({m.ev.start[f], m.ev.end(f), 0, 0, 0, 0, {}});
  }
  // Calls, grouped by forward, by start.
  std::sort(call_events.begin(), call_events.end(), [&](EventId x, EventId y) {
    uint32_t fx = fwd_index[fwd_of(x)], fy = fwd_index[fwd_of(y)];
    return fx != fy ? fx < fy : by_start(x, y);
  });
  std::unordered_map<int32_t, const TruthModule*> by_hid;
  if (modules)
    for (const TruthModule& tm : *modules) by_hid[tm.hid] = &tm;
  for (EventId e : call_events) {
    GroundTruth::Call c;
    std::string_view nm = m.name_of(e);
    if (ranges) {
      std::string_view label = parse_hid(nm, c.hid);
      size_t paren = label.rfind(" (");
      if (label.ends_with(')') && paren != std::string_view::npos) {
        c.path = label.substr(0, paren);
        c.cls = label.substr(paren + 2, label.size() - paren - 3);
      } else {
        c.cls = label;
      }
    } else {
      std::string_view mod = module_of_frame(nm);
      c.path = mod;
      c.cls = module_class(mod);
      if (c.cls.size() < mod.size()) (void)std::from_chars(mod.data() + c.cls.size() + 1, mod.data() + mod.size(), c.hid);
    }
    if (auto it = by_hid.find(c.hid); ranges && it != by_hid.end()) {
      c.path = it->second->path;
      c.cls = it->second->cls;
    }
    c.forward = fwd_index[fwd_of(e)];
    c.begin = m.ev.start[e];
    c.end = m.ev.end(e);
    call_index[e] = uint32_t(g.calls.size());
    g.calls.push_back(std::move(c));
  }
  for (EventId e : call_events) {
    GroundTruth::Call& c = g.calls[call_index[e]];
    if (role[e] != 3 && call[e] != kNoEvent) {
      auto it = call_index.find(call[e]);
      if (it != call_index.end() && g.calls[it->second].forward == c.forward) c.parent = int32_t(it->second);
    }
  }
  // Each forward's items (child calls and own ops) per parent, in time order; the leaf ops are
  // numbered depth first, so that every call's ops are one range.
  struct Item { Ns begin, end; uint64_t offset; bool is_call; uint32_t index; EventId event; };
  std::vector<std::vector<Item>> call_items(g.calls.size()), fwd_items(g.forwards.size());
  for (uint32_t i = 0; i < g.calls.size(); ++i) {
    const GroundTruth::Call& c = g.calls[i];
    Item it{c.begin, c.end, m.ev.source_offset[call_events[i]], true, i, call_events[i]};
    (c.parent >= 0 ? call_items[size_t(c.parent)] : fwd_items[c.forward]).push_back(it);
    if (c.forward < g.forwards.size()) {
      auto& f = g.forwards[c.forward];
      if (f.call_end == 0) f.call_begin = i;
      f.call_end = i + 1;
    }
  }
  for (EventId e : roots) {
    auto fi = fwd_index.find(fwd_of(e));
    if (fi == fwd_index.end()) continue;
    Item it{m.ev.start[e], m.ev.end(e), m.ev.source_offset[e], false, 0, e};
    auto ci = call[e] != kNoEvent ? call_index.find(call[e]) : call_index.end();
    if (ci != call_index.end() && g.calls[ci->second].forward == fi->second) call_items[ci->second].push_back(it);
    else fwd_items[fi->second].push_back(it);
  }
  // Siblings do not overlap: at one start, the one that ends first (a truncated empty one)
  // comes first, then the file's order.
  auto item_order = [](const Item& x, const Item& y) {
    if (x.begin != y.begin) return x.begin < y.begin;
    if (x.end != y.end) return x.end < y.end;
    return x.offset < y.offset;
  };
  for (auto& v : call_items) std::sort(v.begin(), v.end(), item_order);
  for (auto& v : fwd_items) std::sort(v.begin(), v.end(), item_order);
  // The truth's own ops: torch's record_function before 1.14 allocates, around each range it
  // opens, an aten::zeros (with its aten::empty and aten::zero_, which truncated times may put
  // beside it) just before the range and an aten::empty first inside it. Where most calls show
  // that, those ops are the instrumentation's, no module's: left out of the leaf ops.
  auto alloc = [&](const Item& it, std::string_view what) { return !it.is_call && m.name_of(it.event) == what; };
  auto allocs = [&](const Item& it) { return alloc(it, "aten::zeros") || alloc(it, "aten::empty") || alloc(it, "aten::zero_"); };
  std::vector<std::vector<Item>*> lists;
  for (auto& v : call_items) lists.push_back(&v);
  for (auto& v : fwd_items) lists.push_back(&v);
  std::vector<std::vector<uint8_t>> drop(lists.size());
  size_t prefixed = 0;
  for (size_t li = 0; li < lists.size(); ++li) {
    const std::vector<Item>& v = *lists[li];
    drop[li].assign(v.size(), 0);
    if (!v.empty() && alloc(v[0], "aten::empty")) drop[li][0] = 2;  // perhaps the range's first op
    for (size_t k = 0; k < v.size(); ++k) {
      if (!v[k].is_call) continue;
      for (size_t j = k; j-- > 0 && k - j <= 3 && allocs(v[j]);) {
        if (!alloc(v[j], "aten::zeros")) continue;
        for (size_t x = j; x < k; ++x) drop[li][x] = 1;
        ++prefixed;
        break;
      }
    }
  }
  if (!g.calls.empty() && prefixed * 2 >= g.calls.size())
    for (size_t li = 0; li < lists.size(); ++li) {
      std::vector<Item>& v = *lists[li];
      size_t w = 0;
      for (size_t k = 0; k < v.size(); ++k) {
        if (drop[li][k]) g.ignored.push_back({v[k].begin, v[k].end, name_hash(m.name_of(v[k].event)), -1, 0});
        else v[w++] = v[k];
      }
      v.resize(w);
    }
  // Depth-first numbering (an explicit stack: models nest deeply).
  for (uint32_t fi = 0; fi < g.forwards.size(); ++fi) {
    GroundTruth::Forward& f = g.forwards[fi];
    f.op_begin = uint32_t(g.ops.size());
    auto add_op = [&](const Item& it, int32_t c) {
      g.ops.push_back({it.begin, it.end, name_hash(m.name_of(it.event)), c, fi});
    };
    struct Frame { int32_t call; size_t next; };
    std::vector<Frame> stack{{-1, 0}};
    while (!stack.empty()) {
      Frame& fr = stack.back();
      const std::vector<Item>& items = fr.call < 0 ? fwd_items[fi] : call_items[size_t(fr.call)];
      if (fr.next == items.size()) {
        if (fr.call >= 0) g.calls[size_t(fr.call)].op_end = uint32_t(g.ops.size());
        stack.pop_back();
        continue;
      }
      const Item& it = items[fr.next++];
      if (!it.is_call) {
        add_op(it, fr.call);
        continue;
      }
      (fr.call < 0 ? f.top : g.calls[size_t(fr.call)].children).push_back(it.index);
      g.calls[it.index].op_begin = uint32_t(g.ops.size());
      stack.push_back({int32_t(it.index), 0});
    }
    f.op_end = uint32_t(g.ops.size());
  }
  // Blocks: non-leaf calls whose signature repeats in their forward.
  std::map<std::pair<uint32_t, std::string>, uint32_t> seen;
  for (GroundTruth::Call& c : g.calls) {
    c.signature = c.cls;
    c.signature += '(';
    for (size_t k = 0; k < c.children.size(); ++k) {
      if (k) c.signature += ',';
      c.signature += g.calls[c.children[k]].cls;
    }
    c.signature += ')';
    if (!c.children.empty()) ++seen[{c.forward, c.signature}];
  }
  for (GroundTruth::Call& c : g.calls) c.block = !c.children.empty() && seen[{c.forward, c.signature}] >= 2;
}

struct OpKey {
  Ns begin, end;
  uint64_t hash;
  bool operator==(const OpKey&) const = default;
};
struct OpKeyHash {
  size_t operator()(const OpKey& k) const {
    return size_t(k.hash ^ (uint64_t(k.begin) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(k.end) * 0xC2B2AE3D27D4EB4Full));
  }
};

// Pairwise F1 of a grouping against the truth's, from the pairs' counts.
double pair_count(uint64_t k) { return double(k) * double(k - (k > 0)) / 2; }

}  // namespace

size_t GroundTruth::blocks() const {
  return size_t(std::count_if(calls.begin(), calls.end(), [](const Call& c) { return c.block; }));
}

GroundTruth ground_truth(const TraceModel& m, const std::vector<TruthModule>* modules) {
  GroundTruth g;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    std::string_view n = m.name_of(e);
    PhaseKind phase = PhaseKind::Other;
    if (is_hid(m, e)) {
      int32_t id = -1;
      std::string_view label = parse_hid(n, id);
      GroundTruth::TimeRange rg{m.ev.start[e], m.ev.end(e), id, PhaseKind::Other, false, std::string(label)};
      rg.is_phase = phase_of_range(label, rg.phase);
      g.ranges.push_back(std::move(rg));
    } else if (is_truth_phase(m, e) && phase_of_range(n, phase)) {
      g.ranges.push_back({m.ev.start[e], m.ev.end(e), -1, phase, true, std::string(n)});
    }
  }
  if (!g.ranges.empty()) {
    g.source = GroundTruth::Source::Ranges;
    nest_phases(g);
    build_tree(m, g, modules);
    return g;
  }
  // The modules' frames: each one a layer of the forward pass, except the loss's.
  std::vector<std::pair<Ns, Ns>> losses;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    if (!is_module_frame(m, e)) continue;
    std::string_view n = module_of_frame(m.name_of(e));
    // Loss functions are modules too: not the model's layers.
    if (is_loss_module(n)) losses.push_back({m.ev.start[e], m.ev.end(e)});
    else g.ranges.push_back({m.ev.start[e], m.ev.end(e), int32_t(e), PhaseKind::Forward, false, std::string(n)});
  }
  std::erase_if(g.ranges, [&](const GroundTruth::TimeRange& r) {
    return std::any_of(losses.begin(), losses.end(), [&](auto& l) { return r.begin >= l.first && r.end <= l.second; });
  });
  if (!g.ranges.empty()) {
    g.source = GroundTruth::Source::Modules;
    build_tree(m, g, modules);
  }
  return g;
}

std::string strip_events(const TraceModel& m, unsigned flags) {
  if (!m.source) return {};
  const char* p = m.source->data();
  size_t n = m.source->size();
  std::vector<std::pair<size_t, size_t>> cuts;
  for (EventId e = 0; e < m.ev.size(); ++e) {
    const bool strip = ((flags & kStripTruthRanges) && (is_hid(m, e) || is_truth_phase(m, e))) ||
                       ((flags & kStripModules) && is_module_frame(m, e)) ||
                       ((flags & kStripStacks) && m.ev.category(e) == Cat::PythonFunction);
    if (!strip) continue;
    size_t off = m.ev.source_offset[e], end;
    if (off >= n || p[off] != '{' || json::value_end(p, off, n, end) != json::ScanError::None) continue;
    size_t k = json::skip_ws(p, end, n);
    if (k < n && p[k] == ',') {
      cuts.push_back({off, k + 1});
    } else {  // the last entry: drop the comma before it
      size_t b = off;
      while (b > 0 && json::is_ws(p[b - 1])) --b;
      if (b > 0 && p[b - 1] == ',') --b;
      cuts.push_back({b, end});
    }
  }
  std::sort(cuts.begin(), cuts.end());
  std::string out;
  out.reserve(n);
  size_t pos = 0;
  for (auto& [b, e] : cuts) {
    if (b < pos) continue;
    out.append(p + pos, b - pos);
    pos = e;
  }
  out.append(p + pos, n - pos);
  if (flags & kStripLinks)
    for (std::string_view key : {std::string_view("\"Sequence number\""), std::string_view("\"fwdbwd\"")})
      for (size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + key.size()))
        out[at + key.size() - 2] = '~';  // "Sequence numbe~", "fwdbw~": keys no reader knows
  return out;
}

BackwardAgreement backward_agreement(const TraceModel& linked_trace, const Annotation& linked, const Annotation& unlinked) {
  // The forward layer a backward op node is placed under: its innermost layer's twin.
  auto twin = [](const AnnotationTree& t, NodeId n) -> NodeId {
    for (NodeId p = t.parent[n]; p != kNoNode && t.kind[p] != NodeKind::Phase; p = t.parent[p])
      if (t.kind[p] == NodeKind::Layer) return t.mirror[p];
    return kNoNode;
  };
  auto key = [](const AnnotationTree& t, NodeId n) { return std::make_tuple(t.begin[n], t.end[n], std::string(t.name_of(n))); };
  BackwardAgreement out;
  const AnnotationTree& a = linked.tree;
  const AnnotationTree& b = unlinked.tree;
  // The op nodes placed by links: those holding a linked backward event.
  std::unordered_set<NodeId> by_link;
  for (const auto& [bwd, fwd] : linked_trace.bwd_to_fwd)
    if (bwd < linked.node_of_event.size() && linked.node_of_event[bwd] != kNoNode) by_link.insert(linked.node_of_event[bwd]);
  for (NodeId n = 0; n < a.size(); ++n) {
    if (a.kind[n] != NodeKind::Op || a.phase[n] != PhaseKind::Backward || a.event[n] == kNoEvent || !by_link.count(n)) continue;
    const NodeId fa = twin(a, n);
    if (fa == kNoNode) continue;  // not placed under a forward layer (nor the loss)
    const EventId e = a.event[n];
    ++out.compared;
    const NodeId m = e < unlinked.node_of_event.size() ? unlinked.node_of_event[e] : kNoNode;
    if (m == kNoNode || b.kind[m] != NodeKind::Op) continue;
    const NodeId fb = twin(b, m);
    if (fb != kNoNode && key(a, fa) == key(b, fb)) ++out.agreed;
  }
  return out;
}

namespace {

// The leaf ops in a trace (the scored one, perhaps stripped): its outermost ops, found by
// time and name, in order; `foreign` gets the outermost ops that are no leaf op.
// How far a child may end after its parent in a trace written in whole microseconds.
constexpr Ns kRounding = 1'000;

std::vector<EventId> match_leaf_ops(const TraceModel& m, const GroundTruth& truth, std::vector<EventId>* foreign) {
  const size_t nops = truth.ops.size();
  std::unordered_map<OpKey, std::vector<uint32_t>, OpKeyHash> by_key;
  for (uint32_t i = 0; i < nops; ++i) {
    const auto& o = truth.ops[i];
    by_key[{o.begin, o.end, o.name_hash}].push_back(i);
  }
  for (uint32_t i = 0; i < truth.ignored.size(); ++i) {
    const auto& o = truth.ignored[i];
    by_key[{o.begin, o.end, o.name_hash}].push_back(uint32_t(nops) + i);
  }
  std::unordered_map<OpKey, size_t, OpKeyHash> taken;
  std::vector<EventId> event_of(nops, kNoEvent);
  for (EventId e : op_roots(m, parents_of(m))) {
    OpKey k{m.ev.start[e], m.ev.end(e), name_hash(m.name_of(e))};
    auto it = by_key.find(k);
    size_t& next = taken[k];
    if (it == by_key.end() || next >= it->second.size()) {
      // A child of a leaf op that the stripped trace's nesting left outermost (the profiler
      // rounds to whole µs, so a child can end after its parent) is no op of its own.
      auto after = std::upper_bound(truth.ops.begin(), truth.ops.end(), m.ev.start[e],
                                    [](Ns t, const auto& o) { return t < o.begin; });
      const bool inside = after != truth.ops.begin() && m.ev.end(e) <= std::prev(after)->end + kRounding;
      if (foreign && !inside) foreign->push_back(e);
      continue;
    }
    if (uint32_t i = it->second[next++]; i < nops) event_of[i] = e;  // else one of the truth's own ops
  }
  return event_of;
}

// What the figures count against: the blocks no layer holds exactly, and the layers of two or
// more ops that are no call nor run of sibling calls, with their leaf ops [lo, hi].
struct TreeMisses {
  std::vector<uint32_t> blocks;  // calls
  struct Node { NodeId layer; uint32_t lo, hi; };
  std::vector<Node> nodes;
};

// The truth tree's figures: leaf F1, block recall, node precision.
void score_tree(const TraceModel& m, const Annotation& a, const GroundTruth& truth, AccuracyScore& s, TreeMisses* misses = nullptr) {
  const AnnotationTree& t = a.tree;
  const size_t nops = truth.ops.size();
  s.forwards = truth.forwards.size();
  s.calls = truth.calls.size();
  s.leaf_ops = nops;
  std::vector<EventId> foreign;  // outermost ops of the scored trace that are no leaf op
  const std::vector<EventId> event_of = match_leaf_ops(m, truth, &foreign);
  auto layer_of = [&](EventId e) -> NodeId {
    if (e == kNoEvent || e >= a.node_of_event.size() || a.node_of_event[e] == kNoNode) return kNoNode;
    return t.ancestor(a.node_of_event[e], NodeKind::Layer);
  };
  // Leaf F1: groups are the innermost call (truth) and the innermost layer (inferred); an op
  // with neither is alone.
  std::unordered_map<uint64_t, uint64_t> joint, truth_count, ours_count;
  const uint64_t tn = truth.calls.size(), on = t.size();
  for (uint32_t i = 0; i < nops; ++i) {
    s.leaf_ops_unmatched += event_of[i] == kNoEvent;
    const int32_t c = truth.ops[i].call;
    const uint64_t tid = c >= 0 ? uint64_t(c) : tn + i;
    const NodeId l = layer_of(event_of[i]);
    const uint64_t oid = l != kNoNode ? uint64_t(l) : on + i;
    ++joint[(tid << 32) | oid];
    ++truth_count[tid];
    ++ours_count[oid];
  }
  double tp = 0, tt = 0, pp = 0;
  for (auto& [k, v] : joint) tp += pair_count(v);
  for (auto& [k, v] : truth_count) tt += pair_count(v);
  for (auto& [k, v] : ours_count) pp += pair_count(v);
  if (nops) {
    s.leaf_precision = pp > 0 ? tp / pp : 1;
    s.leaf_recall = tt > 0 ? tp / tt : 1;
    s.leaf_f1 = s.leaf_precision + s.leaf_recall > 0 ? 2 * s.leaf_precision * s.leaf_recall / (s.leaf_precision + s.leaf_recall) : 0;
  }
  if (!s.baseline_over_kernels) s.baseline_f1 = nops ? (tt > 0 ? 0.0 : 1.0) : -1;  // every op alone: no pair
  // Each layer's leaf ops (through its descendants): the lowest, the highest, how many; and
  // how many outermost ops it holds that are no leaf op.
  struct Held { uint32_t lo = UINT32_MAX, hi = 0, count = 0, foreign = 0; };
  std::unordered_map<NodeId, Held> held;
  auto up_layers = [&](EventId e, auto&& f) {
    for (NodeId l = layer_of(e); l != kNoNode; l = t.parent[l] == kNoNode ? kNoNode : t.ancestor(t.parent[l], NodeKind::Layer))
      f(held[l]);
  };
  for (uint32_t i = 0; i < nops; ++i)
    up_layers(event_of[i], [&](Held& h) {
      h.lo = std::min(h.lo, i);
      h.hi = std::max(h.hi, i);
      ++h.count;
    });
  for (EventId e : foreign) {
    if (layer_of(e) == kNoNode) continue;
    up_layers(e, [](Held& h) { ++h.foreign; });
  }
  // Calls by their first leaf op; a run of siblings is read from there.
  std::vector<std::vector<uint32_t>> starting(nops + 1);
  std::vector<uint32_t> slot(truth.calls.size(), 0);  // position among its siblings
  for (uint32_t c = 0; c < truth.calls.size(); ++c)
    if (truth.calls[c].op_end > truth.calls[c].op_begin) starting[truth.calls[c].op_begin].push_back(c);
  auto siblings_of = [&](uint32_t c) -> const std::vector<uint32_t>& {
    const auto& call = truth.calls[c];
    return call.parent >= 0 ? truth.calls[size_t(call.parent)].children : truth.forwards[call.forward].top;
  };
  for (uint32_t c = 0; c < truth.calls.size(); ++c) {
    const auto& sib = siblings_of(c);
    slot[c] = uint32_t(std::find(sib.begin(), sib.end(), c) - sib.begin());
  }
  // [lo, hi] is one call's leaf ops, or those of consecutive siblings.
  auto is_node = [&](uint32_t lo, uint32_t hi) {
    for (uint32_t c : starting[lo]) {
      const auto& sib = siblings_of(c);
      uint32_t end = truth.calls[c].op_end;
      for (size_t k = slot[c] + 1; end <= hi && k < sib.size(); ++k) {
        const auto& next = truth.calls[sib[k]];
        if (next.op_end == next.op_begin) continue;  // calls without ops change nothing
        if (next.op_begin != end) break;            // the parent's own ops between them
        end = next.op_end;
      }
      if (truth.calls[c].op_end == hi + 1 || end == hi + 1) return true;
    }
    return false;
  };
  std::unordered_set<uint64_t> exact;  // [lo, hi] some layer holds exactly
  for (auto& [l, h] : held) {
    if (h.count == 0) continue;
    const bool whole = h.foreign == 0 && h.hi - h.lo + 1 == h.count;
    if (whole) exact.insert((uint64_t(h.lo) << 32) | h.hi);
    if (h.count < 2) continue;
    ++s.nodes;
    const bool correct = whole && is_node(h.lo, h.hi);
    s.nodes_correct += correct;
    if (misses && !correct) misses->nodes.push_back({l, h.lo, h.hi});
  }
  if (s.nodes) s.node_precision = double(s.nodes_correct) / double(s.nodes);
  for (const auto& c : truth.calls) {
    if (!c.block || c.op_end == c.op_begin) continue;
    ++s.blocks;
    const bool found = exact.count((uint64_t(c.op_begin) << 32) | (c.op_end - 1)) > 0;
    s.blocks_found += found;
    if (misses && !found) misses->blocks.push_back(uint32_t(&c - truth.calls.data()));
  }
  if (s.blocks) s.block_recall = double(s.blocks_found) / double(s.blocks);
}

}  // namespace

AccuracyScore score_against(const TraceModel& m, const Annotation& a, const GroundTruth& truth) {
  AccuracyScore s;
  const AnnotationTree& t = a.tree;
  struct Span { Ns b, e; PhaseKind p; };
  std::vector<Span> ours;
  for (NodeId i = 0; i < t.size(); ++i)
    if (t.kind[i] == NodeKind::Phase) ours.push_back({t.begin[i], t.end[i], t.phase[i]});
  Ns agree = 0, total = 0;
  for (auto& r : truth.ranges) {
    if (!r.is_phase) continue;
    total += r.end - r.begin;
    for (auto& o : ours)
      if (o.p == r.phase) agree += std::max<Ns>(0, std::min(o.e, r.end) - std::max(o.b, r.begin));
  }
  s.phase_agreement = total ? double(agree) / double(total) : -1;  // -1: the truth has no phases

  // Kernels by the launch's time: truth phase and innermost truth range.
  auto innermost = [&](Ns ts) -> const GroundTruth::TimeRange* {
    const GroundTruth::TimeRange* best = nullptr;
    for (auto& r : truth.ranges)
      if (ts >= r.begin && ts < r.end && (!best || r.end - r.begin < best->end - best->begin)) best = &r;
    return best;
  };
  Ns kt_agree = 0, kt_total = 0;
  std::map<std::pair<int64_t, int64_t>, uint64_t> joint, baseline_joint;
  std::map<int64_t, uint64_t> ours_count, truth_count, baseline_count;
  for (EventId g = 0; g < m.ev.size(); ++g) {
    if (m.ev.category(g) != Cat::Kernel) continue;
    s.baseline_over_kernels = true;
    EventId l = m.launch_of(g);
    if (l == kNoEvent) continue;
    const GroundTruth::TimeRange* r = innermost(m.ev.start[l]);
    if (!r) continue;
    NodeId n = g < a.node_of_event.size() ? a.node_of_event[g] : kNoNode;
    PhaseKind ph = n == kNoNode ? PhaseKind::Other : t.phase[n];
    kt_total += m.ev.dur[g];
    if (ph == r->phase) kt_agree += m.ev.dur[g];
    if (r->phase != PhaseKind::Forward) continue;
    ++s.forward_kernels;
    NodeId leaf = n == kNoNode ? kNoNode : t.ancestor(n, NodeKind::Layer);
    int64_t ours_id = leaf != kNoNode ? int64_t(leaf) : n != kNoNode ? -2 - int64_t(n) : -1;
    ++joint[{ours_id, r->id}];
    ++ours_count[ours_id];
    ++truth_count[r->id];
    // The baseline: the launch's outermost CPU op is its layer.
    EventId top = kNoEvent;
    for (EventId p = m.parent_of(l); p != kNoEvent; p = m.parent_of(p))
      if (m.ev.category(p) == Cat::CpuOp) top = p;
    const int64_t base_id = top == kNoEvent ? -1 - int64_t(l) : int64_t(top);
    ++baseline_joint[{base_id, r->id}];
    ++baseline_count[base_id];
  }
  s.kernel_phase_agreement = kt_total ? double(kt_agree) / double(kt_total) : 0;
  // Pairwise: of the pairs of forward kernels one grouping puts together, how many the other does.
  double tt = 0;
  for (auto& [k, v] : truth_count) tt += pair_count(v);
  auto f1 = [&](const auto& j, const auto& count, double* precision, double* recall) {
    double tp = 0, pp = 0;
    for (auto& [k, v] : j) tp += pair_count(v);
    for (auto& [k, v] : count) pp += pair_count(v);
    const double pr = pp > 0 ? tp / pp : 1, rc = tt > 0 ? tp / tt : 1;
    if (precision) *precision = pr, *recall = rc;
    return pr + rc > 0 ? 2 * pr * rc / (pr + rc) : 0;
  };
  s.layer_f1 = f1(joint, ours_count, &s.layer_precision, &s.layer_recall);
  s.baseline_f1 = f1(baseline_joint, baseline_count, nullptr, nullptr);
  score_tree(m, a, truth, s);
  return s;
}

std::string truth_dump(const TraceModel& m, const Annotation& a, const GroundTruth& truth, uint32_t forward) {
  std::string out;
  if (forward >= truth.forwards.size()) return out;
  const std::vector<EventId> event_of = match_leaf_ops(m, truth, nullptr);
  const auto& f = truth.forwards[forward];
  const AnnotationTree& t = a.tree;
  for (uint32_t i = f.op_begin; i < f.op_end; ++i) {
    const auto& o = truth.ops[i];
    std::string call = "-";
    if (o.call >= 0) {
      const auto& c = truth.calls[size_t(o.call)];
      call = c.path.empty() ? c.cls : c.path + " (" + c.cls + ")";
      if (c.block) call += " [block]";
    }
    EventId e = event_of[i];
    std::string name = e == kNoEvent ? std::string("(not found)") : std::string(m.name_of(e));
    NodeId n = e != kNoEvent && e < a.node_of_event.size() ? a.node_of_event[e] : kNoNode;
    NodeId l = n == kNoNode ? kNoNode : t.ancestor(n, NodeKind::Layer);
    std::string layer = l == kNoNode ? (n == kNoNode ? std::string("-") : "(" + std::string(t.name_of(t.parent[n])) + ")") : t.path(l);
    out += std::to_string(i - f.op_begin) + "\t" + name + "\t" + call + "\t" + layer + "\n";
  }
  // The blocks no layer holds and the layers that are no module call, in this forward.
  AccuracyScore scratch;
  TreeMisses misses;
  score_tree(m, a, truth, scratch, &misses);
  auto in_forward = [&](uint32_t lo) { return lo >= f.op_begin && lo < f.op_end; };
  for (uint32_t c : misses.blocks) {
    const auto& call = truth.calls[c];
    if (in_forward(call.op_begin))
      out += "missed block\t" + call.path + " (" + call.cls + ")\tops " + std::to_string(call.op_begin - f.op_begin) + "-" +
             std::to_string(call.op_end - 1 - f.op_begin) + "\n";
  }
  for (const auto& n : misses.nodes)
    if (in_forward(n.lo))
      out += "wrong layer\t" + t.path(n.layer) + "\tops " + std::to_string(n.lo - f.op_begin) + "-" + std::to_string(n.hi - f.op_begin) + "\n";
  // Where the phases disagree: each truth phase range with our phase spans over it, and the
  // outermost ops (the top three levels) in the parts that disagree.
  std::vector<NodeId> phases;
  for (NodeId i = 0; i < t.size(); ++i)
    if (t.kind[i] == NodeKind::Phase) phases.push_back(i);
  std::vector<EventId> shallow;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.ev.depth[e] <= 2) shallow.push_back(e);
  std::sort(shallow.begin(), shallow.end(), [&](EventId x, EventId y) { return m.ev.start[x] < m.ev.start[y]; });
  for (const auto& r : truth.ranges) {
    if (!r.is_phase) continue;
    std::string spans;
    Ns agree = 0;
    for (NodeId i : phases) {
      if (t.end[i] <= r.begin || t.begin[i] >= r.end) continue;
      const Ns b = std::max(t.begin[i], r.begin), e = std::min(t.end[i], r.end);
      if (t.phase[i] == r.phase) agree += e - b;
      spans += std::string(" ") + phase_name(t.phase[i]) + "[" + std::to_string(t.begin[i] - r.begin) + "," +
               std::to_string(t.end[i] - r.begin) + "]";
      if (t.phase[i] == r.phase) continue;
      auto it = std::lower_bound(shallow.begin(), shallow.end(), b, [&](EventId x, Ns v) { return m.ev.start[x] < v; });
      for (; it != shallow.end() && m.ev.start[*it] < e; ++it)
        spans += " <" + std::to_string(m.ev.depth[*it]) + std::string(m.name_of(*it)) + ">";
    }
    if (agree < r.end - r.begin)
      out += std::string("phase ") + phase_name(r.phase) + " " + std::to_string(r.end - r.begin) + " ns, agree " +
             std::to_string(agree) + ":" + spans + "\n";
  }
  return out;
}

}  // namespace strata
