// Shared state of the annotation passes (not part of the public API).
#pragma once

#include "core/annotate/annotation.h"
#include "core/annotate/markers.h"
#include "core/parallel.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::annot {

bool is_sync_call(std::string_view n);  // a call that waits for the GPU ("cudaStreamSynchronize")

// A short kind for an op ("conv", "batch_norm", "linear", …), forward or backward spelling.
std::string_view op_kind(std::string_view n);

// The phase nodes of a tree by time: which phase a moment falls in.
struct PhaseIndex {
  struct Span { Ns b, e; NodeId n; };
  std::vector<Span> spans;
  explicit PhaseIndex(const AnnotationTree& t) {
    for (NodeId i = 0; i < t.size(); ++i)
      if (t.kind[i] == NodeKind::Phase) spans.push_back({t.begin[i], t.end[i], i});
    std::sort(spans.begin(), spans.end(), [](auto& x, auto& y) { return x.b < y.b; });
  }
  NodeId at(Ns ts) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), ts, [](Ns v, const Span& s) { return v < s.b; });
    if (it == spans.begin()) return kNoNode;
    --it;
    return ts < it->e ? it->n : kNoNode;
  }
};

// For each unit kind (op_kind of its main op), the leaf module it aligns with, or -1: the
// longest common subsequence of the two kind sequences (the forward runs the model's modules
// mostly in the order they are defined). Empty when the problem is too large to align.
std::vector<int32_t> align_to_model(const std::vector<std::string_view>& unit_kinds, const std::vector<std::string_view>& leaf_kinds);

// The memory analysis (Analyses::memory), a pass over the allocator events.
void analyze_memory(const TraceModel& m, Annotation& a);

// Derived per-event columns and the roles of the tracks, computed once.
struct Context {
  const TraceModel& m;
  const AnnotateOptions& opt;
  unsigned threads = 1;

  // Per event: one parent column and one flag byte (not a column per role): large fresh
  // arrays cost more in page faults than the passes that fill them.
  enum : uint8_t { kOp = 1, kOpRoot = 2, kUnderOp = 4, kOnMain = 8, kOnBackward = 16, kSharesInput = 32 };
  std::vector<EventId> parent;  // enclosing event on the same track, else kNoEvent
  std::vector<uint8_t> flags;   // kOp: CPU op (cpu_op, or an uncategorised X event on a CPU thread);
                                // kOpRoot: its outermost op; kUnderOp: an op or inside one;
                                // kOnMain / kOnBackward: on the main / an autograd thread;
                                // kSharesInput: a forward op root whose input a later op takes too

  uint32_t main_track = kNoTrack;          // the thread that runs the training loop
  std::vector<uint8_t> is_main;            // per track: the main thread or its overflow track
  std::vector<uint8_t> is_backward_track;  // per track: the autograd engine's threads
  std::vector<EventId> gpu_ops;            // kernels, copies, sets; by start
  std::vector<EventId> profiler_ranges;    // cuda_profiler_range events (untimed GPU ops)
  std::vector<EventId> main_items;         // op roots and user annotations on the main thread, by start
  std::vector<EventId> bwd_items;          // op roots on autograd threads, by start
  std::vector<EventId> top_modules;        // outermost nn.Module frames on the main thread, by start
  std::vector<EventId> outer_ranges;       // the program's outermost ranges on the main thread (no op, other
                                           // range but a ProfilerStep, or module call holds them), by start
  bool has_backward = false;
  bool has_gpu = false;

  std::vector<std::string_view> kinds;  // per name: op_kind, computed on first use
  std::vector<int8_t> sync_names;       // per name: is_sync_call, computed on first use (-1: not yet)
  const Progress* progress = nullptr;

  Context(const TraceModel& model, const AnnotateOptions& o)
      : m(model), opt(o), kinds(model.strings.size()), sync_names(model.strings.size(), -1) {}
  bool cancelled() const { return progress && progress->cancelled(); }
  bool is_outer_range(EventId e) const {
    auto& st = m.ev.start;
    auto it = std::lower_bound(outer_ranges.begin(), outer_ranges.end(), e,
                               [&](EventId x, EventId y) { return st[x] != st[y] ? st[x] < st[y] : x < y; });
    return it != outer_ranges.end() && *it == e;
  }
  // A CUDA call that waits for the GPU (not thread-safe: serial passes only).
  bool is_sync(EventId e) {
    if (!is_cuda_call_cat(cat(e))) return false;
    int8_t& s = sync_names[m.ev.name[e]];
    if (s < 0) s = is_sync_call(name(e));
    return s || m.is_blocking_copy(e);
  }
  // op_kind of an event's name, once per distinct name (not thread-safe: serial passes only).
  std::string_view kind(EventId e) {
    std::string_view& k = kinds[m.ev.name[e]];
    if (k.empty()) k = op_kind(name(e));
    return k;
  }
  std::string_view name(EventId e) const { return m.name_of(e); }
  bool is_root(EventId e) const { return flags[e] & kOpRoot; }
  bool on_main(EventId e) const { return flags[e] & kOnMain; }
  bool on_backward(EventId e) const { return flags[e] & kOnBackward; }
  // Outermost CPU op ancestor-or-self, else kNoEvent.
  EventId op_root(EventId e) const {
    if (!(flags[e] & kUnderOp)) return kNoEvent;
    while (!(flags[e] & kOpRoot)) e = parent[e];
    return e;
  }
  Cat cat(EventId e) const { return m.ev.category(e); }
};

// The tree while it is built: nodes in creation order, finalized into pre-order columns.
struct TreeBuilder {
  std::vector<NodeKind> kind;
  std::vector<StrId> name;
  std::vector<NodeId> parent;
  std::vector<PhaseKind> phase;
  std::vector<Ns> begin, end;
  std::vector<EventId> event;
  std::vector<NodeId> mirror;
  StringTable strings;

  std::vector<StrId> interned;  // per model name: its id here (interning per node is a hash each)

  NodeId add(NodeKind k, std::string_view nm, NodeId par, PhaseKind ph, Ns b, Ns e, EventId ev = kNoEvent) {
    return add_id(k, strings.intern(nm), par, ph, b, e, ev);
  }
  // A node named like the model string `ms`.
  NodeId add_named(NodeKind k, StrId ms, std::string_view nm, NodeId par, PhaseKind ph, Ns b, Ns e, EventId ev) {
    if (ms >= interned.size()) interned.resize(ms + 1, kNoStr);
    if (interned[ms] == kNoStr) interned[ms] = strings.intern(nm);
    return add_id(k, interned[ms], par, ph, b, e, ev);
  }
  NodeId add_id(NodeKind k, StrId nm, NodeId par, PhaseKind ph, Ns b, Ns e, EventId ev = kNoEvent) {
    auto id = NodeId(kind.size());
    kind.push_back(k);
    name.push_back(nm);
    parent.push_back(par);
    phase.push_back(ph);
    begin.push_back(b);
    end.push_back(e);
    event.push_back(ev);
    mirror.push_back(kNoNode);
    return id;
  }
  size_t size() const { return kind.size(); }
  // Room for n nodes: growing by doubling copies and first-touches every column twice.
  void reserve(size_t n) {
    kind.reserve(n);
    name.reserve(n);
    parent.reserve(n);
    phase.reserve(n);
    begin.reserve(n);
    end.reserve(n);
    event.reserve(n);
    mirror.reserve(n);
  }
  void widen(NodeId n, Ns b, Ns e) {
    if (b < begin[n]) begin[n] = b;
    if (e > end[n]) end[n] = e;
  }
  // Takes a node out of the tree (move its children first): its own parent makes it
  // unreachable from any root, and finalize_tree walks from the roots. Nothing may point at it
  // after, nor walk up from it.
  void drop(NodeId n) { parent[n] = n; }
};

// One iteration's phase segments on the main thread's timeline.
struct Segment {
  PhaseKind phase;
  Ns begin, end;
  NodeId node = kNoNode;
  std::vector<EventId> items;  // main-thread items and backward roots in it, by start
  std::string label;           // the program's name for it ("sparse_data_dist", "attn(F)"); empty: the phase's
};

struct IterWork {
  Iteration it;
  EventId range = kNoEvent;    // the program's range that is the iteration, when one is
  std::vector<EventId> items;  // main items in [begin, end), by start
  std::vector<Segment> segments;
  std::vector<EventId> markers;  // phase markers (annotation ranges), not layers
  bool loss_by_position = false;  // the loss was placed from its op, no range or module saying where
};

// Passes.
void build_context(Context& c);
std::vector<IterWork> find_iterations(Context& c, Annotation& a);
void find_phases(Context& c, IterWork& w);
// After every step's phases: no phase's exit lasts longer than its shortest over the steps.
void bound_phase_exits(const Context& c, std::vector<IterWork>& iters);
// Layers and op nodes for every segment; fills node_of for op roots (and descendants later).
void build_layers(Context& c, std::vector<IterWork>& iters, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of);
void map_backward(Context& c, std::vector<IterWork>& iters, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of);
// Forward ops whose input another op (run after them) takes too, read from the backward's
// gradient sums: sets Context::kSharesInput on their op roots (shared_inputs.cpp).
void find_shared_inputs(Context& c, const std::vector<IterWork>& iters);

// Whether a backward root runs an autograd node made by a forward op ("XxxBackward0", also under
// the engine's "evaluate_function: "), not work with no forward op: AccumulateGrad, the
// engine's other nodes (torch::autograd::…) and ops, DDP's bucket copies.
bool has_forward_op(std::string_view n);
// Whether a backward-time root syncs gradients across ranks (DDP's reducer copies, a
// collective's range): no layer's work.
bool is_gradient_sync(std::string_view n);

// Backward op roots matched to the forward (and loss) op roots they differentiate where the trace has no
// links: the engine runs an iteration's autograd nodes in the reverse of their forward order
// (as their inputs' gradients are ready), so in reverse order, by the op the node is named for
// (PowBackward0, aten::pow) or else by op kind, within a short window. A forward op makes one
// node per op of it that the backward has nodes of: the first of its subtree's spelled so.
// next() is called for each backward root in order.
class ReverseOrderMatch {
 public:
  ReverseOrderMatch(Context& c, const IterWork& w);
  bool empty() const { return fwd_.empty(); }
  EventId next(EventId backward_root);  // its forward op root, or kNoEvent

 private:
  struct NodeOp {  // ops of one spelling whose nodes a forward op makes
    std::string spelling;
    std::string_view kind;
    uint32_t left = 0;  // not matched yet
  };
  struct Fwd {
    EventId root = kNoEvent;
    std::string own;  // its own spelling
    std::vector<NodeOp> ops;
    uint32_t used = 0, capacity = 0;  // nodes matched to it; the nodes it makes
  };
  const std::string& spelling(EventId e);  // node_spelling of its name, once per name
  Context& c_;
  std::unordered_map<StrId, std::string> spellings_;
  std::vector<Fwd> fwd_;  // the iteration's forward op roots, last first
  size_t j_ = 0;          // where matching goes on
  EventId last_ = kNoEvent;  // the backward root before
};
void finalize_tree(Context& c, TreeBuilder& b, Annotation& a, std::vector<NodeId>& node_of);
void compute_metrics(Context& c, AnnotationTree& t, const std::vector<NodeId>& node_of_event);
void run_analyses(Context& c, Annotation& a);
void count_flops(const Context& c, Annotation& a);  // the range profiler's FLOPs (flops.cpp)

// Layers, blocks and the model's root inferred for forward op nodes with no finer structure,
// under `parent` (infer_layers.cpp); `model_root`: they are the whole forward.
void infer_layers(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops, bool model_root);
// The leaf units alone, as nodes under `parent`, for naming by the model's modules.
struct InferredUnit {
  NodeId node = kNoNode;
  std::string_view kind;  // op_kind of its main op
  std::string label;      // what it is ("Conv", "BatchNorm")
};
std::vector<InferredUnit> infer_units(Context& c, TreeBuilder& b, NodeId parent, const std::vector<NodeId>& ops);
// What a unit of that kind is, as a person names it ("BatchNorm"); an activation by its op.
std::string readable_unit(std::string_view kind, std::string_view op);

// CPU ops one level below `r` on its track, in time order.
std::vector<EventId> child_ops(const Context& c, EventId r);
// The outermost nn.Module frame enclosing an event on its track, or kNoEvent.
EventId outer_module_of(const Context& c, EventId e);

// Whether an op that starts at `begin` and ends at `end` ran last inside the op before it,
// which ended at `before_end`: whole-microsecond timestamps (torch 1.13's CPU export) end both
// at one tick, so the trace has it beside its parent, starting where the parent ends and
// lasting nothing, or one tick where its end was rounded up and its parent's down. (A call
// of the model's own starts a Python statement later, never at the tick the last one ended.)
inline bool left_beside_by_rounding(Ns before_end, Ns begin, Ns end) {
  return begin == before_end && (end == begin || (begin % 1000 == 0 && end - begin == 1000));
}
// The same for two op nodes of the tree: `op` left beside `before`.
inline bool left_beside(const TreeBuilder& b, NodeId before, NodeId op) { return left_beside_by_rounding(b.end[before], b.begin[op], b.end[op]); }

// A conjugate's or negation's lazy resolution (aten::resolve_conj after a linear's addmm): the
// work of the op that made the tensor, wherever the clock's rounding put it.
inline bool resolves_lazy_bit(std::string_view op) { return op == "aten::resolve_conj" || op == "aten::resolve_neg"; }

// Name classification.
bool is_loss_op(std::string_view n);
bool is_factory_op(std::string_view n);  // makes a tensor from constants or a shape (full, ones_like, arange)
bool is_data_movement(std::string_view n);
bool is_gather_op(std::string_view n);  // reads rows by index (index_select, gather, index)
bool is_parametric(std::string_view n);
bool is_optimizer_like(std::string_view n);
bool is_backward_name(std::string_view n);
bool is_shape_op(std::string_view n);  // moves or reshapes a tensor, computes nothing (view, transpose, squeeze_)
bool is_weight_op(std::string_view n);  // a module's weight op or norm (conv, linear, embedding, LSTM, LayerNorm); no matmul
std::string_view strip_prefix(std::string_view s, std::string_view p);
std::string lower(std::string_view s);  // ASCII lower case


}  // namespace strata::annot

