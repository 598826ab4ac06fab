// Automatic annotation of a trace: iterations → phases → layers (nested) → ops → GPU work,
// with per-node metrics, a noise-reduced copy of the tree and whole-trace analyses.
//
// The tree is stored as columns in depth-first pre-order: node n's subtree is the index range
// [n, subtree_end[n]), its first child is n + 1 (when subtree_end[n] > n + 1) and the next
// sibling of a child c is subtree_end[c]. Node 0 is the root (the whole trace).
#pragma once

#include "core/base/status.h"
#include "core/efficiency/efficiency.h"
#include "core/progress.h"
#include "core/trace_model.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

class JsonWriter;
struct Annotation;

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;

enum class NodeKind : uint8_t { Root, Iteration, Phase, Layer, Op, Group };
enum class PhaseKind : uint8_t { DataLoading, Forward, Loss, ZeroGrad, Backward, Optimizer, Other, Count };
// What bounds a node: GPU compute, the host's launches (launch overhead), data loading, the
// host blocked in a call that waits for the GPU (a sync, a synchronous or pageable copy,
// aten::item), communication (collectives), or the host's own CPU work (ops and Python that
// launch nothing).
enum class Bound : uint8_t { Unknown, Gpu, CpuLaunch, DataLoading, HostBlocked, Communication, CpuCompute };
// Where the layer tier came from.
enum class LayerSource : uint8_t { None, Module, UserAnnotation, Heuristic };
enum class IterationSource : uint8_t {
  ProfilerStep, IterationRanges, StepRanges, OptimizerStep, DataLoader, ModuleCalls, Periodic, WholeTrace, None
};

const char* node_kind_name(NodeKind k);
const char* phase_name(PhaseKind p);  // "Forward", "Data loading", …
const char* bound_name(Bound b);
const char* layer_source_name(LayerSource s);
const char* iteration_source_name(IterationSource s);

struct AnnotationTree {
  std::vector<NodeKind> kind;
  std::vector<StrId> name;          // into `strings`
  std::vector<NodeId> parent;       // kNoNode for the root
  std::vector<NodeId> subtree_end;  // one past the node's last descendant
  std::vector<uint16_t> depth;
  std::vector<PhaseKind> phase;     // the phase a node is in (Other above the phase tier)
  std::vector<Ns> begin, end;       // CPU span
  std::vector<EventId> event;       // op nodes: the CPU op; layer nodes: the module / annotation event
  std::vector<NodeId> mirror;       // backward layer nodes: the forward layer they differentiate (a Loss layer: the Loss phase)
  std::vector<uint32_t> members;    // group nodes: how many siblings they merged (else 1)
  std::vector<NodeId> origin;       // reduced trees: the original node (a group's first member)
  // Metrics (filled by compute_metrics).
  std::vector<Ns> gpu_busy;               // union of its GPU ops' intervals
  std::vector<Ns> gpu_begin, gpu_end;     // first start, last end of its GPU ops (0 when none)
  std::vector<uint32_t> kernels;          // GPU ops (kernels, copies, sets)
  std::vector<Ns> sync;                   // time in synchronizing calls under it
  std::vector<float> share;               // of the parent's CPU span (0..1)
  std::vector<Bound> bound;
  StringTable strings;

  size_t size() const { return kind.size(); }
  std::string_view name_of(NodeId n) const { return strings.view(name[n]); }
  Ns duration(NodeId n) const { return end[n] - begin[n]; }
  NodeId first_child(NodeId n) const { return subtree_end[n] > n + 1 ? n + 1 : kNoNode; }
  NodeId next_sibling(NodeId c) const {
    NodeId p = parent[c];
    return p != kNoNode && subtree_end[c] < subtree_end[p] ? subtree_end[c] : kNoNode;
  }
  std::vector<NodeId> children(NodeId n) const;
  // "Iteration 38/Backward/layer1.0/conv2/aten::convolution_backward" (the root is left out).
  std::string path(NodeId n) const;
  // The nearest ancestor-or-self of this kind, or kNoNode.
  NodeId ancestor(NodeId n, NodeKind k) const;
  size_t bytes() const;
};

// What bounds an item that spans `dur` on the host and launched `gpu_ops` GPU ops (busy
// `gpu_busy` in total, from `gpu_begin` to `gpu_end`), with `sync` of it in synchronizing
// calls: the one rule for the tree's nodes, the details panel and the summary.
Bound classify_bound(PhaseKind phase, Ns dur, uint64_t gpu_ops, Ns gpu_busy, Ns gpu_begin, Ns gpu_end, Ns sync);

struct ReduceOptions {
  double tiny_share = 0.01;   // siblings each under this share of the parent merge into a group (narrower is unreadable)
  double hoist_share = 0.75;  // a lone child over this share of its parent replaces the parent's other children…
  bool hoist = true;          // …(hoisting: the big child's children are shown one tier up)
  bool collapse_runs = true;  // consecutive siblings with the same name become one "name ×N"
  uint32_t min_group = 2;     // fewer tiny siblings than this stay as they are
};

// The reduction's rule for one parent's children, shared by the tree's reduction and the
// viewer's levels: consecutive siblings with the same name become one run (unless `apart`),
// then runs of at least `min_group` tiny items (each under `tiny_share` of the parent) merge
// into a group. Siblings are given in time order.
struct Sibling {
  Ns begin = 0, end = 0;
  uint64_t key = 0;    // equal keys (same name) collapse into runs
  bool apart = false;  // never collapsed or grouped (iterations, phases)
};
struct SiblingBlock {
  enum Kind : uint8_t { Single, SameName, Group };
  Kind kind = Single;
  uint32_t first = 0, count = 1;  // the siblings it stands for
};
std::vector<SiblingBlock> reduce_siblings(const std::vector<Sibling>& kids, Ns parent_dur, const ReduceOptions& o);

// A model's modules as `print(model)` writes them (`--model FILE`): its leaves in definition
// order, with their paths ("layer3.1.conv2") and types ("Conv2d"). Repeated modules folded as
// "(0-2): 3 x Block(" are unfolded. Invalid, naming the line, on other text.
struct ModelLeaf {
  std::string path, type;
};
Result<std::vector<ModelLeaf>> parse_model_text(std::string_view text);

// The whole module tree of the same text: every module in definition order (pre-order), the
// root first, with its attribute path ("layer3.1.conv2", "" for the root), its type and its
// children in definition order. Folded repeats are unfolded. Invalid as above.
struct ModelModule {
  std::string path, type;
  int32_t parent = -1;
  std::vector<int32_t> children;
};
Result<std::vector<ModelModule>> parse_model_tree(std::string_view text);
std::vector<ModelLeaf> model_leaves(const std::vector<ModelModule>& tree);  // its leaves, in order

// Layers made from nn.Module frames ("nn.Module: Conv2d_3") renamed by the model's attribute
// paths: each forward's module calls are matched against the model's tree by class and order
// (the first instance of class C called under a module is its first child of class C, the
// second its second, …; calls of one instance again are that module again), a layer taking its
// module's full path ("layer4.1.conv2") and the root the model's type ("ResNet"); backward
// layers take their forward layer's name. Modules the model does not list keep their names.
// Adds a note saying what matched. Returns how many layer nodes were renamed.
size_t name_module_layers(const TraceModel& m, const std::vector<ModelModule>& model, Annotation& a);

struct AnnotateOptions {
  unsigned threads = 0;  // 0: hardware concurrency (at most 8)
  std::vector<ModelLeaf> model;  // inferred layers take these modules' names where their ops align
  std::vector<ModelModule> model_tree;  // layers from nn.Module frames take these modules' paths
  ReduceOptions reduce;
  bool user_annotations_as_layers = true;  // record_function / NVTX ranges inside forward
  bool module_events_as_layers = true;     // nn.Module python_function events
  RooflineOverride roofline;               // the efficiency figures' device peaks, when given
};

// Parses print(model) text into both: `model_tree` and its leaves as `model`. Invalid, naming
// the line, on other text (the options are left as they were then).
Status set_model_text(AnnotateOptions& o, std::string_view text);


struct Iteration {
  NodeId node = kNoNode;
  std::string name;
  Ns begin = 0, end = 0;
  int64_t step = -1;     // N of its ProfilerStep#N, when the iterations come from them
  bool partial = false;  // cut by the trace window's edge
};

struct DeviceUtil {
  int32_t device = -1;
  int64_t stream = -1;  // -1: the whole device
  Ns busy = 0, elapsed = 0;
  uint64_t ops = 0;
};

enum class GpuWork : uint8_t { Compute, Communication, Memory };
bool is_communication_kernel(std::string_view name);  // NCCL / RCCL collectives and send/recv
bool is_tensor_core_kernel(std::string_view name);    // runs on tensor cores (HMMA, sm80_ xmma, bf16, …), by name
const char* gpu_work_name(GpuWork w);  // "compute", "communication", "memory"

// Time per name: GPU ops (kernels, copies, sets) or top-level CPU ops.
struct NameStat {
  std::string name;
  uint64_t count = 0;
  Ns total = 0, max = 0;
  EventId longest = kNoEvent;
  bool tensor_core = false;          // GPU ops: a tensor-core kernel
  GpuWork kind = GpuWork::Compute;   // GPU ops: what it does
};

// Why a GPU sat idle, in the classes of the phase verdicts: the host issuing the next op
// (launch overhead), data loading, the host blocked in a call that waits for the GPU,
// communication (the host in a collective, or the next op a collective waiting for its
// peers), the host's own CPU work (ops and Python that launch nothing), or none of those.
enum class IdleCause : uint8_t { Launch, DataLoading, HostBlocked, Communication, CpuCompute, Other, Count };
const char* idle_cause_name(IdleCause c);  // "launch overhead", "data loading", "host blocked", …
const char* idle_cause_key(IdleCause c);   // JSON: "launch", "data_loading", "host_blocked", …

struct IdleGap {
  Ns begin = 0, end = 0;
  int32_t device = -1;
  IdleCause cause = IdleCause::Other;
};

struct IdleGaps {
  Ns total = 0;
  std::array<Ns, size_t(IdleCause::Count)> by_cause{};
  uint64_t count = 0;
  Ns of(IdleCause c) const { return by_cause[size_t(c)]; }
  std::vector<IdleGap> gaps;  // each gap, per device in time order (devices one after another)
};

// What a device's memory holds, by what it is for (TBD's memory categories).
enum class MemoryCategory : uint8_t { Weights, Gradients, OptimizerState, Activations, Temporaries, Other, Count };
const char* memory_category_key(MemoryCategory c);   // "weights", "optimizer_state", … (JSON keys)
const char* memory_category_name(MemoryCategory c);  // "weights", "optimizer state", … (text)

// What is allocated on one device just after one of its memory events. Each allocation the
// trace saw is put in a category by when it was allocated and when it is freed:
//   weights          allocated before the first iteration, never freed
//   gradients        allocated in backward, alive past it (until zero_grad or the step frees them)
//   optimizer_state  allocated in an optimizer step, never freed
//   activations      allocated in forward or loss, alive past that phase
//   temporaries      freed in the phase that allocated them
//   other            the rest (data loading, no phase, allocated before the first iteration and freed)
// What was allocated before the trace began is known only as the total less what the trace
// saw: it counts as weights when the trace starts before the first iteration, else as other.
struct LiveMemory {
  int8_t device_type = -1;
  int16_t device_id = -1;
  uint32_t through = UINT32_MAX;  // the memory event (index into TraceModel::memory)
  Ns at = 0;
  int64_t allocated = 0;          // the device's total then; `bytes` sums to it exactly
  std::array<int64_t, size_t(MemoryCategory::Count)> bytes{};
  int64_t before_trace = 0;       // part of `allocated` no event of the trace allocated
  MemoryCategory before_trace_as = MemoryCategory::Other;
  bool split = true;              // false: the trace records no addresses, all is `other`
  struct Layer { NodeId node = kNoNode; std::string path; int64_t bytes = 0; };
  std::vector<Layer> layers;      // the layers that allocated what is alive, most first; kNoNode: no layer
  struct Allocation { uint32_t event = 0; MemoryCategory category = MemoryCategory::Other; NodeId layer = kNoNode; };
  std::vector<Allocation> allocations;  // the live allocations the trace saw, largest first
  int64_t of(MemoryCategory c) const { return bytes[size_t(c)]; }
};
// State just after memory event `event` on its device.
LiveMemory live_memory(const TraceModel& m, const Annotation& a, uint32_t event);
// The last memory event of a device at or before t; UINT32_MAX when none.
uint32_t memory_event_at(const MemoryEvents& me, int8_t device_type, int16_t device_id, Ns t);
// The op that was running on the allocating thread at a memory event, or kNoEvent.
EventId allocating_op(const TraceModel& m, uint32_t event);

struct DeviceMemory {
  int8_t device_type = -1;  // 0 CPU, 1 CUDA
  int16_t device_id = -1;
  int64_t peak_allocated = 0, peak_reserved = 0;
  Ns peak_ts = 0;
  std::string peak_where;  // the annotation path at the peak
  int64_t capacity = 0;    // deviceProperties.totalGlobalMem; 0 when unknown
  LiveMemory at_peak;      // its `allocations` left empty (live_memory gives them on demand)
};

struct MemoryUse {
  bool present = false;
  // What the trace recorded (MemoryEvents): without addresses, what is alive cannot be split
  // by category; without totals, the peak is of derived totals.
  bool totals_derived = false, reserved_recorded = false, addresses_recorded = false;
  // Per device (GPUs when the trace has any, else the CPU); `peak` is the one with the highest.
  std::vector<DeviceMemory> devices;
  size_t peak = 0;
  struct PhaseAlloc { PhaseKind phase; int64_t allocated = 0, freed = 0; };
  std::vector<PhaseAlloc> per_phase;  // volumes over the trace
  struct LayerAlloc { std::string path; int64_t allocated = 0, net = 0; };
  std::vector<LayerAlloc> top_layers;  // forward layers that allocate the most over the trace
  const DeviceMemory* peak_device() const { return devices.empty() ? nullptr : &devices[peak]; }
};

// "GPU 0", "CPU".
std::string memory_device_name(int8_t device_type, int16_t device_id);
// Capacity less what the allocator held at the peak (reserved when recorded, else allocated);
// -1 when the capacity is unknown.
int64_t memory_headroom(const DeviceMemory& d, bool reserved_recorded);
// What is alive, in words: the categories, then what came before the trace, then the layers.
std::vector<std::string> live_memory_lines(const LiveMemory& l);
// The summary's memory findings: text lines, and the fields of its `memory` JSON object.
std::string memory_text(const MemoryUse& mu);
void write_memory_fields(JsonWriter& w, const MemoryUse& mu);
// What is alive at one moment (`strata summary --memory-at`, the viewer's memory details):
// text, and the fields of a JSON object (the largest allocations with their ops).
std::string live_memory_text(const TraceModel& m, const LiveMemory& l);
void write_live_memory_fields(JsonWriter& w, const TraceModel& m, const LiveMemory& l);

// FLOPs of range-profiler ranges grouped by a name (a kernel, a layer path). Achieved FLOP/s
// only from ranges with a measured duration counter, never from the made-up event duration.
struct FlopStat {
  std::string name;
  uint64_t ranges = 0;
  double flops = 0;
  uint64_t timed = 0;      // ranges with gpu__time_duration.sum
  double timed_flops = 0;  // their FLOPs
  Ns measured = 0;         // their summed gpu__time_duration.sum
  void add(const ProfilerRangeCounters& r);
  double flop_per_s() const { return measured > 0 ? timed_flops * 1e9 / double(measured) : 0.0; }
};

// "18.28 GFLOP in 77 ranges[, 9.1 TFLOP/s over 2.0 ms measured in 77]"; its JSON fields
// (docs/summary-json.md).
std::string flops_text(const FlopStat& s);
void write_flop_fields(JsonWriter& j, const FlopStat& s);

struct FlopFigures {
  FlopStat total;                // over every range
  uint64_t with_counters = 0;    // ranges holding FLOP counters
  uint64_t attributed = 0;       // ranges placed in a layer (through their launch)
  std::vector<FlopStat> kernels; // by FLOPs, descending
  std::vector<FlopStat> layers;  // leaf layer paths without the iteration, by FLOPs, descending
};

struct Analyses {
  Ns window_begin = 0, window_end = 0;  // the iterations' span (else the trace's)
  std::vector<DeviceUtil> utilization;  // per device (stream -1) then per stream
  IdleGaps idle;
  std::vector<NameStat> kernels;        // GPU ops over the whole trace, by total time, descending
  std::vector<NameStat> cpu_ops;        // outermost CPU ops starting in the window, by total time
  std::vector<Ns> iteration_gpu_busy;   // per iteration: GPU busy (any device) within its time
  Ns compute = 0, communication = 0, memory_ops = 0;  // busy (union) per class, all devices
  Ns compute_comm_overlap = 0;
  // Communication no compute kernel overlaps (the trace's whole span), merged, by start: the
  // part of communication that costs time, drawn on the timeline.
  std::vector<std::pair<Ns, Ns>> exposed_communication;
  Ns tensor_core = 0, kernel_total = 0;  // summed kernel time
  Ns gpu_op_total = 0;                   // summed time of every GPU op (kernels, copies, sets)
  Ns iter_mean = 0, iter_median = 0, iter_p95 = 0, iter_min = 0, iter_max = 0;
  int64_t batch_size = -1;
  double samples_per_s = 0;
  MemoryUse memory;
  FlopFigures flops;  // CUPTI range-profiler counters (empty without cuda_profiler_range events)
  Efficiency efficiency;  // each kernel's work against its device's roofline (core/efficiency)
};

// What bounds a phase (by name, as the summary lists them), from the what-if replays of its
// iterations (core/whatif/verdict.h): the one verdict the summary, the viewer and the replay share.
struct PhaseVerdict {
  std::string phase;
  PhaseKind kind = PhaseKind::Other;
  Bound bound = Bound::Unknown;
  std::string detail;      // the call, op or kernel that holds the time, in words
  Ns measured = 0;         // per iteration, as replayed unchanged
  double kernels_2x = 0, no_launch_overhead = 0, comm_2x = 0;  // share of it each scenario saves
  double host_blocked = 0; // share of it the host spends in calls that wait for the GPU
};

struct Annotation {
  AnnotationTree tree;     // unreduced
  AnnotationTree reduced;  // noise-reduced (group nodes, hoisting, collapsed runs)
  std::vector<NodeId> node_of_event;  // per event: the deepest node it belongs to, else kNoNode
  std::vector<Iteration> iterations;
  Analyses analyses;
  std::vector<PhaseVerdict> verdicts;  // per phase name, in the summary's order
  IterationSource iteration_source = IterationSource::None;
  LayerSource layer_source = LayerSource::None;
  uint32_t ranges_with_inferred_layers = 0;  // the program's ranges whose direct ops were grouped by inference
  std::string inferred_inside;               // the first one's name
  uint32_t main_track = kNoTrack;
  std::vector<uint32_t> backward_tracks;
  // Backward op roots; of them, mapped to a forward layer (or the loss) through fwdbwd flows or
  // sequence numbers, and by op order: reverse op-order matching where a segment has no link,
  // plus ops with no forward op (AccumulateGrad, the engine's own) placed with the backward op
  // before them on their thread, `backward_no_forward` of them. The rest are unmapped.
  uint64_t backward_ops = 0, backward_mapped_links = 0, backward_mapped_order = 0, backward_no_forward = 0;
  uint64_t backward_recompute = 0;  // backward ops that recompute their forward (activation checkpointing)
  uint64_t gpu_ops = 0, gpu_ops_annotated = 0;
  std::vector<std::string> notes;  // what could not be determined, in words
  ReduceOptions reduce_options;    // what the reduction used (the levels view reduces alike)
  double seconds = 0;
  double pass_seconds[kAnnotationPasses] = {};  // per pass, Stage::Structure to Stage::Analyses
  Status status;  // Cancelled when the passes were: the annotation is then partial
};

// Runs every pass (Stage::Structure to Stage::Analyses; `done`/`total` count passes). Checks
// cancel between passes and inside the long ones: a cancelled result's `status` is Cancelled
// and the result is partial.
Annotation annotate(const TraceModel& m, const AnnotateOptions& options = {}, Progress* progress = nullptr);

// The GPU work of one item and what bounds it, as the details panel shows it: an annotation
// node (from the tree's metrics), or a trace event (a CPU event: the GPU ops launched inside
// it, or for a range that marks time, such as a ProfilerStep or a user annotation, on every
// thread within it; a GPU op: itself).
struct WorkFigures {
  Ns begin = 0, end = 0;         // the item's own span
  std::vector<EventId> gpu_ops;  // kernels, copies and sets, by start
  Ns gpu_time = 0;               // their summed durations
  Ns gpu_busy = 0;               // the union of their intervals
  Ns gpu_begin = 0, gpu_end = 0;
  Ns sync = 0;                   // time in synchronizing calls inside it
  Ns communication = 0;          // the union of its collectives' kernels
  Ns comm_exposed = 0;           // the part of that no compute kernel (anywhere) hides
  Bound bound = Bound::Unknown;
  std::string bound_detail;      // phases: what holds the time (PhaseVerdict::detail)
  float share = 0;               // of its parent of the same clock (tree parent, enclosing event); 0: none
  std::string parent;            // that parent's name
  FlopStat flops;                // range-profiler ranges in it (their time is not measured)
};
WorkFigures node_work(const TraceModel& m, const Annotation& a, NodeId n);
WorkFigures event_work(const TraceModel& m, const Annotation& a, EventId e);
// Why the item is bound as it is, in words ("GPU: busy 93.1% of its 9.6 ms").
std::string bound_reason(const WorkFigures& w);
// An item's figures as text, as a JSON object, and as fields of an open object (the
// viewer's layout dump writes `panels.details` with them).
std::string work_text(std::string_view name, const WorkFigures& w);
std::string work_json(std::string_view name, const WorkFigures& w);
void write_work_fields(JsonWriter& j, std::string_view name, const WorkFigures& w);
// The node at a '/'-separated path of names from the root down ("Iteration 3/Backward/layer1");
// each part matches a child's name exactly, else as its prefix. kNoNode when a part matches none.
NodeId find_node(const AnnotationTree& t, std::string_view path);
// What falls inside a stretch of time a person measures: its length, GPU busy per device,
// and per name the GPU ops, outermost CPU ops and leaf layers inside it (time clipped to it).
struct RangeFigures {
  Ns begin = 0, end = 0;
  std::vector<DeviceUtil> utilization;  // stream -1: per device
  std::vector<NameStat> kernels, ops, layers;  // longest total first, at most 50 each
};
RangeFigures range_figures(const TraceModel& m, const Annotation& a, Ns t0, Ns t1);
std::string range_text(const RangeFigures& r);
std::string range_json(const RangeFigures& r);
void write_range_fields(JsonWriter& w, const RangeFigures& r);  // into an open object

// A range that marks time on the training loop's thread (a ProfilerStep, a user annotation):
// its work may run on other threads (autograd's), so it owns what runs in its time anywhere.
bool is_time_range(const TraceModel& m, EventId e);

// The noise-reduced copy of a tree (also run by annotate()).
AnnotationTree reduce_tree(const AnnotationTree& t, const ReduceOptions& options);

// Summary as readable text or JSON (schema: docs/summary-json.md).
std::string summary_text(const TraceModel& m, const Annotation& a);
std::string summary_json(const TraceModel& m, const Annotation& a);
void write_summary_fields(JsonWriter& w, const TraceModel& m, const Annotation& a);  // into an open object
// The summary's fields that the viewer's Summary tab shows (`iterations`, `utilization`,
// `idle`, `kernels`, `cpu_ops`, `memory`, `work`), into an open JSON object: the same
// writer for `strata summary --json` and the viewer's layout dump.
void write_summary_panel_fields(JsonWriter& w, const Annotation& a);

// Writes the original trace plus the annotation tiers (`strata annotate`). Gzips when the
// name ends in .gz.
Status write_annotated_trace(const TraceModel& m, const Annotation& a, const std::string& out_path);
// The same, into a string (uncompressed).
Result<std::string> annotated_trace_json(const TraceModel& m, const Annotation& a);

}  // namespace strata
