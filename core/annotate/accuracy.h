// Scoring the annotation against ground truth the recording itself wrote: the `hid=N Name`
// ranges of Hotline's traces and the `hid=N path (Class)` ranges of Strata's corpus (a range
// per module call, opened and closed by forward hooks; the phases as Hotline's Load Data,
// Forward, Calc Loss, Zero Grad, Backward, Optimizer or as plain forward, loss, zero_grad,
// backward, optimizer ranges), else the nn.Module frames of a trace recorded with_modules
// (layers only: no phase truth). Truth ranges are recognised by name on user annotations and
// on uncategorised events (the legacy autograd profiler writes no categories).
//
// The truth is a tree per forward: the module calls (a module called twice is two calls),
// nested as they ran, and the forward's leaf ops, its outermost CPU ops, each in its innermost
// enclosing call. The scores (see AccuracyScore):
//   leaf F1        pairwise over the leaf ops: together in the truth when their innermost call
//                  is the same, in the annotation when their innermost layer is (ops directly
//                  under a phase are alone);
//   block recall   blocks are the non-leaf calls whose signature (class, and the classes of
//                  its child calls in order) occurs at least twice in one forward; found when
//                  some layer holds exactly the block's leaf ops;
//   node precision layers holding two or more leaf ops, correct when their leaf ops are
//                  exactly one call's, or those of a run of consecutive sibling calls;
//   phase agreement, and the kernels' figures (forward kernels grouped by innermost layer).
#pragma once

#include "core/annotate/annotation.h"

#include <string>
#include <string_view>

namespace strata {

// A module of the model as a corpus manifest lists it (its `modules`: hid, path, class).
struct TruthModule {
  int32_t hid = -1;
  std::string path, cls;
};

struct GroundTruth {
  enum class Source : uint8_t { None, Ranges, Modules };
  struct TimeRange { Ns begin, end; int32_t id; PhaseKind phase; bool is_phase; std::string name; };
  std::vector<TimeRange> ranges;  // phase ranges have is_phase; layers the rest
  Source source = Source::None;

  // One call of a module in one forward.
  struct Call {
    int32_t hid = -1;        // the range's hid; module frames: the module's number (Linear_3: 3)
    std::string path, cls;   // "layer1.0.conv1", "Conv2d" (Hotline: no path, the range's name)
    int32_t parent = -1;     // index into calls; -1: directly under its forward
    uint32_t forward = 0;    // index into forwards
    Ns begin = 0, end = 0;
    uint32_t op_begin = 0, op_end = 0;  // its leaf ops, its descendants' included: [op_begin, op_end) of ops
    std::vector<uint32_t> children;     // its child calls, in order
    bool block = false;      // non-leaf, its signature seen at least twice in its forward
    std::string signature;   // its class and its child calls' classes: "BasicBlock(Conv2d,BatchNorm2d,ReLU,…)"
  };
  // An outermost CPU op of a forward.
  struct LeafOp {
    Ns begin = 0, end = 0;
    uint64_t name_hash = 0;  // of the op's name: the op is found again in a stripped trace by time and name
    int32_t call = -1;       // innermost enclosing call, -1: none
    uint32_t forward = 0;
  };
  struct Forward {
    Ns begin = 0, end = 0;
    uint32_t call_begin = 0, call_end = 0;  // its calls, in start order
    uint32_t op_begin = 0, op_end = 0;      // its leaf ops, in start order
    std::vector<uint32_t> top;              // calls directly under it, in order
  };
  std::vector<Forward> forwards;
  std::vector<Call> calls;
  std::vector<LeafOp> ops;
  // Ops the truth's instrumentation ran in the forwards (torch < 1.14's record_function
  // allocates around each range): neither leaf ops nor the annotation's to place.
  std::vector<LeafOp> ignored;

  bool present() const { return !ranges.empty(); }
  bool has_phases() const { return source == Source::Ranges; }
  size_t blocks() const;
};

// The trace's ground truth: its hid= and phase ranges when it has them, else its nn.Module
// frames. `modules` (a manifest's, by hid) gives the calls' paths and classes where given.
GroundTruth ground_truth(const TraceModel& m, const std::vector<TruthModule>* modules = nullptr);

// What to strip before annotating, so that the annotation sees none of it.
enum StripFlags : unsigned {
  kStripTruthRanges = 1,  // hid= ranges and the truth's phase ranges
  kStripModules = 2,      // nn.Module python frames
  kStripStacks = 4,       // every python_function frame (the modules' included)
  kStripLinks = 8,        // forward ↔ backward links: sequence numbers and fwdbwd flows
};
// The trace's JSON bytes without those events (links: their keys and categories renamed in
// place, so that every event keeps its offset and its id in the stripped trace).
std::string strip_events(const TraceModel& m, unsigned flags);

// How well backward ops are placed without links: of the backward ops that an annotation with
// the trace's links puts under a forward layer by them, how many an annotation of the same
// trace without them (kStripLinks, same events) puts under the same forward layer.
struct BackwardAgreement {
  uint64_t compared = 0, agreed = 0;
  double share() const { return compared ? double(agreed) / double(compared) : -1.0; }
};
BackwardAgreement backward_agreement(const TraceModel& linked_trace, const Annotation& linked, const Annotation& unlinked);

struct AccuracyScore {
  double phase_agreement = 0;         // share of the annotated time whose phase equals the truth
  double kernel_phase_agreement = 0;  // share of kernel time (by launch) whose phase equals the truth
  double layer_f1 = 0, layer_precision = 0, layer_recall = 0;  // pairwise, forward kernels
  double baseline_f1 = 0;  // the trivial grouping "every top-level op is its own layer", over
                           // forward kernels when the trace has them, else over leaf ops
  bool baseline_over_kernels = false;  // which
  uint64_t forward_kernels = 0;

  // The truth tree's figures (-1 where the truth has no tree, or nothing to count).
  double leaf_f1 = -1, leaf_precision = -1, leaf_recall = -1;  // pairwise, leaf ops
  double block_recall = -1;    // truth blocks some layer holds exactly
  double node_precision = -1;  // layers of ≥ 2 leaf ops that are a call or a run of sibling calls
  uint64_t leaf_ops = 0;       // of the scored forwards
  uint64_t leaf_ops_unmatched = 0;  // not found in the scored trace (by time and name)
  uint64_t blocks = 0, blocks_found = 0;
  uint64_t nodes = 0, nodes_correct = 0;
  uint64_t forwards = 0, calls = 0;
  // The figure the trivial baseline is compared with: leaf F1, or the kernels' F1.
  double compared_f1() const { return baseline_over_kernels ? layer_f1 : leaf_f1; }
  bool below_trivial() const { return compared_f1() + 1e-9 < baseline_f1; }
};

// Scores an annotation of `m` (which may be the stripped trace) against `truth`.
AccuracyScore score_against(const TraceModel& m, const Annotation& a, const GroundTruth& truth);

// One forward's leaf ops, a line each: its number, the op, its innermost call (path and
// class, "[block]" when the call is a block), its innermost layer in the annotation (its
// path) or, when it has none, its parent node in parentheses. Then the forward's blocks no
// layer holds exactly and its layers that are no module call nor run of sibling calls, with
// their ops' numbers. Then each truth phase the
// annotation's phases do not cover whole: its phase spans over it, and the outermost ops in
// the spans that disagree. For reading the scores.
std::string truth_dump(const TraceModel& m, const Annotation& a, const GroundTruth& truth, uint32_t forward);

}  // namespace strata
