// The annotation entry point: runs the passes in order with progress and cancel.
#include "core/annotate/internal.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace strata {

Annotation annotate(const TraceModel& m, const AnnotateOptions& options, Progress* progress) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  Annotation a;
  annot::Context c(m, options);
  c.threads = options.threads ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  constexpr uint64_t kPasses = 6;
  auto tp = Clock::now();
  auto stage = [&](int s) {
    auto now = Clock::now();
    if (s > 1) a.pass_seconds[s - 2] = std::chrono::duration<double>(now - tp).count();
    tp = now;
    if (!progress) return true;
    progress->stage = s;
    progress->total = kPasses;
    progress->done = uint64_t(s - 1);
    if (progress->cancelled()) {
      a.cancelled = true;
      return false;
    }
    return true;
  };
  auto finish = [&] {
    stage(7);
    a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (progress) progress->done = kPasses;
    return std::move(a);
  };

  if (!stage(1)) return finish();
  annot::build_context(c);
  a.main_track = c.main_track;
  if (!c.has_gpu) a.notes.push_back("no GPU activity in the trace: GPU time, utilization and idle gaps are empty");

  if (!stage(2)) return finish();
  std::vector<annot::IterWork> iters = annot::find_iterations(c, a);
  parallel_for(c.threads, iters.size(), [&](size_t i) {
    Annotation scratch;  // find_phases writes no shared state
    annot::find_phases(c, iters[i], scratch);
  });
  // Phases may also come from the program's own ranges ("backward"), with no autograd op.
  const auto has_backward_phase = [](const annot::IterWork& w) {
    const auto backward = [](const annot::Segment& s) { return s.phase == PhaseKind::Backward; };
    return std::any_of(w.segments.begin(), w.segments.end(), backward);
  };
  if (!c.has_backward && !iters.empty() && std::none_of(iters.begin(), iters.end(), has_backward_phase))
    a.notes.push_back("no backward pass found: treated as inference (forward only)");

  if (!stage(3)) return finish();
  annot::TreeBuilder b;
  b.reserve(3 * (c.main_items.size() + c.bwd_items.size()) + 1024);  // address space only: untouched pages cost nothing
  std::vector<NodeId> node_of(m.ev.size(), kNoNode);
  annot::build_layers(c, iters, b, a, node_of);
  annot::map_backward(c, iters, b, a, node_of);
  for (auto& w : iters) a.iterations.push_back(w.it);
  if (a.layer_source == LayerSource::None && !iters.empty())
    a.notes.push_back("no forward ops found: no layer tier");
  else if (a.layer_source == LayerSource::Heuristic)
    a.notes.push_back("no nn.Module events or user annotations: layers are grouped from the op sequence");
  if (a.backward_ops && a.backward_mapped_links == 0 && a.backward_mapped_order > 0)
    a.notes.push_back("no fwdbwd flows or sequence numbers: backward ops matched to forward layers by reverse op order");
  iters.clear();
  annot::finalize_tree(c, b, a, node_of);
  a.node_of_event = std::move(node_of);

  if (!stage(4)) return finish();
  annot::compute_metrics(c, a.tree, a.node_of_event);

  if (!stage(5)) return finish();
  a.reduced = reduce_tree(a.tree, options.reduce);

  if (!stage(6)) return finish();
  annot::run_analyses(c, a);
  return finish();
}

}  // namespace strata
