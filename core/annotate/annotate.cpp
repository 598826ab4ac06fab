// The annotation entry point: runs the passes in order with progress and cancel.
#include "core/annotate/internal.h"
#include "core/whatif/verdict.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace strata {

Annotation annotate(const TraceModel& m, const AnnotateOptions& options, Progress* progress) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  Annotation a;
  annot::Context c(m, options);
  c.progress = progress;
  a.reduce_options = options.reduce;
  c.threads = options.threads ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  auto tp = Clock::now();
  int pass = -1;  // the running pass, as an index into pass_seconds
  // Starts pass `s` (Stage::Done: none) and says whether to go on.
  auto stage = [&](Stage s) {
    auto now = Clock::now();
    if (pass >= 0) a.pass_seconds[pass] += std::chrono::duration<double>(now - tp).count();
    tp = now;
    pass = s == Stage::Done ? -1 : int(s) - int(Stage::Structure);
    if (!progress) return true;
    if (s != Stage::Done) {
      progress->enter(s);
      progress->total = kAnnotationPasses;
      progress->done = uint64_t(int(s) - int(Stage::Structure));
    }
    if (progress->cancelled()) {
      a.status = Status::cancelled();
      return false;
    }
    return true;
  };
  auto finish = [&] {
    stage(Stage::Done);
    a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (progress && a.status.is_ok()) progress->done = kAnnotationPasses;
    return std::move(a);
  };

  if (!stage(Stage::Structure)) return finish();
  annot::build_context(c);
  a.main_track = c.main_track;
  if (!c.has_gpu && !c.profiler_ranges.empty())
    a.notes.push_back("GPU ops come only from CUPTI's range profiler (cuda_profiler_range): their times are the profiled "
                      "span split evenly, not measured, so GPU time, utilization and idle gaps are empty; FLOPs come from "
                      "their counters");
  else if (!c.has_gpu)
    a.notes.push_back("no GPU activity in the trace: GPU time, utilization and idle gaps are empty");

  if (!stage(Stage::Iterations)) return finish();
  std::vector<annot::IterWork> iters = annot::find_iterations(c, a);
  parallel_for(c.threads, iters.size(), [&](size_t i) {
    if (c.cancelled()) return;
    annot::find_phases(c, iters[i]);  // writes no shared state
  });
  // Where neither a range nor a module frame says where the forward ends, the loss was placed
  // by position, from its library op: said, since a composed loss is then partly forward.
  if (std::any_of(iters.begin(), iters.end(), [](const annot::IterWork& w) { return w.loss_by_position; }))
    a.notes.push_back("no forward or loss ranges and no nn.Module events: the loss is placed from its ops (a library loss op and the "
                      "reshapes feeding it; from a target's one-hot encoding or identity mask after the model's last weight op; written "
                      "by hand, its log-likelihood or squared difference), and what a composed loss computes on the prediction "
                      "before them (normalised embeddings, similarities) counts as forward");
  annot::bound_phase_exits(c, iters);
  // Phases may also come from the program's own ranges ("backward"), with no autograd op.
  const auto has_backward_phase = [](const annot::IterWork& w) {
    const auto backward = [](const annot::Segment& s) { return s.phase == PhaseKind::Backward; };
    return std::any_of(w.segments.begin(), w.segments.end(), backward);
  };
  if (!c.has_backward && !iters.empty() && std::none_of(iters.begin(), iters.end(), has_backward_phase))
    a.notes.push_back("no backward pass found: treated as inference (forward only)");

  if (!stage(Stage::Layers)) return finish();
  annot::TreeBuilder b;
  b.reserve(3 * (c.main_items.size() + c.bwd_items.size()) + 1024);  // address space only: untouched pages cost nothing
  std::vector<NodeId> node_of(m.ev.size(), kNoNode);
  annot::build_layers(c, iters, b, a, node_of);
  if (!stage(Stage::Layers)) return finish();
  annot::map_backward(c, iters, b, a, node_of);
  if (!stage(Stage::Layers)) return finish();
  for (auto& w : iters) a.iterations.push_back(w.it);
  if (a.layer_source == LayerSource::None && !iters.empty())
    a.notes.push_back("no forward ops found: no layer tier");
  else if (a.layer_source == LayerSource::Heuristic)
    a.notes.push_back("no nn.Module events or user annotations: layers are grouped from the op sequence");
  if (a.ranges_with_inferred_layers)
    a.notes.push_back(a.inferred_inside + " (a range around the whole model" +
                      (a.ranges_with_inferred_layers > 1 ? ", " + std::to_string(a.ranges_with_inferred_layers) + " calls" : std::string()) +
                      ") holds the model's weight ops directly: the layers inside it are grouped from the op sequence");
  if (a.backward_recompute)
    a.notes.push_back(std::to_string(a.backward_recompute) +
                      " backward ops recompute their forward inside them (activation checkpointing): shown as Recompute layers");
  if (a.backward_ops && a.backward_mapped_links == 0 && a.backward_mapped_order > a.backward_no_forward)
    a.notes.push_back("no fwdbwd flows or sequence numbers: backward ops matched to forward layers by reverse op order");
  iters.clear();
  annot::finalize_tree(c, b, a, node_of);
  a.node_of_event = std::move(node_of);
  if (!options.model_tree.empty()) name_module_layers(m, options.model_tree, a);  // --model: attribute paths

  if (!stage(Stage::Metrics)) return finish();
  annot::compute_metrics(c, a.tree, a.node_of_event);

  if (!stage(Stage::Reduction)) return finish();
  a.reduced = reduce_tree(a.tree, options.reduce);

  if (!stage(Stage::Analyses)) return finish();
  annot::run_analyses(c, a);
  annot::count_flops(c, a);
  whatif::judge_phases(m, a, progress);
  a.analyses.efficiency = hardware_efficiency(m, a, options.roofline, c.parent, c.threads);  // its sentences use the verdicts
  return finish();
}

}  // namespace strata
