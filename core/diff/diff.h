// Comparing two runs (`strata diff A B`): their iterations, phases, layers, CPU ops and GPU
// work aligned, each row's time on both sides and the change, and the changes ranked in words.
//
//   iterations  the median complete iteration of each side (or a chosen one per side)
//   phases      by kind and name
//   layers      the leaf layers by the longest common subsequence of what each is (a module's
//               name, or an inferred layer's kind with its number aside) in its phase, so an
//               added, removed or repeated layer shows as such and the rest still line up; then
//               the blocks around them by the aligned leaves they hold. Ranked by the change in
//               self time, so the layer where time was added comes first
//   GPU work    by the CPU op that launched it: a cuBLAS kernel on one GPU and a hipBLASLt
//               kernel on another line up when the same aten::mm launched them
//   the rest    communication, memory at the peak, idle time by cause, data loading
// Times are per iteration; layers and GPU work in GPU time when both sides ran on a GPU, in
// wall time when either is CPU-only (`time_basis` says which).
#pragma once

#include "core/annotate/annotation.h"

#include <optional>
#include <string>
#include <vector>

namespace strata {

struct DiffOptions {
  int64_t iteration_a = -1, iteration_b = -1;  // an iteration's index per side; -1: all (per iteration)
};

struct DiffRow {
  std::string name_a, name_b;  // empty on the side that lacks it
  std::optional<Ns> a, b;      // per iteration; absent on the side that lacks it
  std::optional<Ns> self_a, self_b;  // layers: less their child layers' time
  std::string detail;          // the kernels (GPU rows), "only in A/B" (layer rows)
  Ns delta() const { return b.value_or(0) - a.value_or(0); }
  Ns self_delta() const { return self_a || self_b ? self_b.value_or(0) - self_a.value_or(0) : delta(); }
};

struct Diff {
  std::string file_a, file_b;
  std::string time_basis;  // "gpu" or "wall"
  Ns iteration_a = 0, iteration_b = 0;
  size_t iterations_a = 0, iterations_b = 0;
  int64_t shown_a = -1, shown_b = -1;  // the index of each side's median (or chosen) iteration; -1: none
  std::vector<DiffRow> phases, layers, ops, kernels, other;
  std::optional<int64_t> peak_memory_a, peak_memory_b;  // bytes allocated at the peak, when recorded
  size_t layers_a = 0, layers_b = 0, layers_aligned = 0;  // leaf and block layers per side, matched
  double aligned_share = 0;  // matched layers over the larger side's
  bool same_model = true;    // false: too little aligns to call them one model
  std::vector<std::string> explain;  // ranked by |change|
  std::vector<std::string> notes;    // what differs in kind (ranks, devices, counts)
};

// A layer node's path below its iteration ("Forward/Model/Conv 3"), as the layer rows name it.
std::string path_in_iteration(const AnnotationTree& t, NodeId n);

Diff diff_runs(const TraceModel& ma, const Annotation& a, const TraceModel& mb, const Annotation& b,
               const DiffOptions& options = {});
std::string diff_text(const Diff& d);
std::string diff_json(const Diff& d);

}  // namespace strata
