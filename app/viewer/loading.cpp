// Loading on a worker thread: the loader, then the view's own preparation (rows, tiers,
// summary). The UI thread only polls and swaps the result in.
#include "app/viewer/viewer.h"

#include <cstdio>

namespace strata::viewer {

std::unique_ptr<Prepared> prepare(std::unique_ptr<TraceModel> model, Progress* progress) {
  auto p = std::make_unique<Prepared>();
  p->model = std::move(model);
  p->timeline.build(*p->model);
  // The annotation tiers (iterations, phases, layers); the raw tracks show regardless.
  Progress annotate_progress;
  p->annotation = std::make_unique<Annotation>(annotate(*p->model, {}, &annotate_progress));
  if (progress && progress->cancelled()) return nullptr;
  if (p->annotation->cancelled) p->annotation.reset();
  p->timeline.set_tiers(p->annotation ? render::tiers_from_annotation(*p->model, *p->annotation)
                                       : render::provisional_tiers(*p->model));
  p->summary = render::summarize(p->timeline);
  return p;
}

void start_load(Viewer& v, const std::string& path) {
  if (v.job) cancel_load(v);
  auto job = std::make_unique<LoadJob>();
  job->path = path;
  job->started = std::chrono::steady_clock::now();
  LoadJob* j = job.get();
  j->worker = std::thread([j] {
    LoadResult r = load_trace(j->path, &j->progress);
    if (r.model && !j->progress.cancelled()) {
      j->progress.stage = 4;  // preparing the view
      j->result = prepare(std::move(r.model), &j->progress);
      if (!j->result) j->error = "Loading " + j->path + " was cancelled";
    } else {
      j->error = j->progress.cancelled() ? "Loading " + j->path + " was cancelled" : r.error;
    }
    j->done = true;
  });
  v.job = std::move(job);
  v.error.clear();
}

void cancel_load(Viewer& v) {
  if (!v.job) return;
  v.job->progress.cancel = true;
  if (v.job->worker.joinable()) v.job->worker.join();
  v.job.reset();
}

void install(Viewer& v, std::unique_ptr<Prepared> p) {
  v.trace = std::move(p);
  const TraceModel& m = *v.trace->model;
  v.view.set_extent(double(m.time_begin), double(m.time_end));
  v.view.fit(double(m.time_begin), double(m.time_end));
  v.history.stack.clear();
  v.scroll_y = 0;
  v.hl = {};
  v.flows.clear();
  v.path.clear();
  v.sel_kernels.clear();
  v.levels_chosen.clear();
  v.search.matches.clear();
  v.search.by_time.clear();
  v.search.ran.clear();
  v.search.current = -1;
  v.hovered = {};
  update_metrics(v);
}

void poll_load(Viewer& v) {
  if (!v.job || !v.job->done) return;
  v.job->worker.join();
  if (v.job->result) {
    add_recent(v, v.job->path);
    install(v, std::move(v.job->result));
  } else {
    v.error = v.job->error;
    std::fprintf(stderr, "strata: %s\n", v.error.c_str());
  }
  v.job.reset();
}

}  // namespace strata::viewer
