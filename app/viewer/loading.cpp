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

std::unique_ptr<LoadJob> launch_load(const std::string& path) {
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
  return job;
}

void start_load(Viewer& v, const std::string& path, bool keep_view) {
  if (v.job) cancel_load(v);
  v.job = launch_load(path);
  v.job->keep_view = keep_view;
  v.error.clear();
}

void cancel_load(Viewer& v) {
  if (!v.job) return;
  v.job->progress.cancel = true;
  if (v.job->worker.joinable()) v.job->worker.join();
  v.job.reset();
}

void install(Viewer& v, std::unique_ptr<Prepared> p) {
  reset_search(v);
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
  v.hovered = {};
  update_metrics(v);
}

void reinstall(Viewer& v, std::unique_ptr<Prepared> p) {
  if (!v.trace) return install(v, std::move(p));
  const render::Timeline& old = v.trace->timeline;
  const render::ItemRef sel = v.hl.selected;
  render::ItemRef again = sel.valid() ? render::find_again(old, sel, p->timeline) : render::ItemRef{};
  const render::TimeView view = v.view;
  const render::ViewHistory history = v.history;
  const float scroll = v.scroll_y;
  install(v, std::move(p));
  const TraceModel& m = *v.trace->model;
  v.view = view;
  v.view.follow_extent(double(m.time_begin), double(m.time_end));
  v.history = history;
  v.scroll_y = scroll;
  if (again.valid()) select(v, again, false);
}

void poll_load(Viewer& v) {
  if (!v.job || !v.job->done) return;
  v.job->worker.join();
  if (v.job->result) {
    add_recent(v, v.job->path);
    if (v.job->keep_view) reinstall(v, std::move(v.job->result));
    else install(v, std::move(v.job->result));
  } else {
    v.error = v.job->error;
    std::fprintf(stderr, "strata: %s\n", v.error.c_str());
  }
  v.job.reset();
}

}  // namespace strata::viewer
