// Loading on a worker thread: the loader, the annotation, then the view's rows and tiers. The
// job's one Progress reaches every stage, so a cancel stops whichever is running. The UI
// thread only polls and swaps the result in.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <cstdio>
#include <utility>

namespace strata::viewer {

namespace {

// The annotation, the batch estimate and the view of `m` (which `p` owns, or will).
bool prepare_view(Prepared& p, const TraceModel& m, Progress* progress, const AnnotateOptions& options) {
  p.annotation = std::make_unique<Annotation>(annotate(m, options, progress));
  if (!p.annotation->status.is_ok() || (progress && progress->cancelled())) return false;
  Result<BatchPoint> point = batch_point(m, *p.annotation, -1);
  if (point.is_ok()) p.batch = predict_batch({std::move(point.value())});
  else p.batch_error = point.status().message();
  if (progress) progress->enter(Stage::View);
  p.timeline.build(m);
  p.timeline.set_annotation(p.annotation.get());
  return !(progress && progress->cancelled());
}

}  // namespace

std::unique_ptr<Prepared> prepare(std::unique_ptr<TraceModel> model, Progress* progress, const AnnotateOptions& options) {
  auto p = std::make_unique<Prepared>();
  p->model = std::move(model);
  if (!prepare_view(*p, *p->model, progress, options)) return nullptr;
  return p;
}

std::unique_ptr<LoadJob> launch_load(const std::string& path, const AnnotateOptions& options) {
  auto job = std::make_unique<LoadJob>();
  job->path = path;
  job->options = options;
  job->started = std::chrono::steady_clock::now();
  LoadJob* j = job.get();
  j->worker = std::thread([j] {
    LoadResult r = load_trace(j->path, &j->progress);
    if (r.model && !j->progress.cancelled()) {
      j->result = prepare(std::move(r.model), &j->progress, j->options);
      if (!j->result) j->error = "Loading " + j->path + " was cancelled";
      else j->result->model_file = j->model_file;
    } else {
      j->error = j->progress.cancelled() ? "Loading " + j->path + " was cancelled" : r.error();
    }
    j->done = true;
  });
  return job;
}

AnnotateOptions options_for(Viewer& v, const std::string& path, std::string& model_file) {
  AnnotateOptions o = v.annotate;
  model_file = v.annotate_model_file;
  auto it = v.models.find(absolute_path(path));
  if (it == v.models.end()) return o;
  Viewer::ModelChoice& c = it->second;
  if (!c.parsed) {  // chosen in an earlier session: read now
    std::string error;
    if (!read_model_structure(c.file, c.tree, error)) {
      v.error = "The model structure chosen for this trace was not used: " + error;
      return o;
    }
    c.parsed = true;
  }
  o.model = model_leaves(c.tree);
  o.model_tree = c.tree;
  model_file = c.file;
  return o;
}

void start_load(Viewer& v, const std::string& path, bool keep_view) {
  if (v.loading) cancel_load(v);
  v.error.clear();
  std::string model_file;
  AnnotateOptions options = options_for(v, path, model_file);
  v.loading = launch_load(path, options);
  v.loading->model_file = model_file;
  v.loading->keep_view = keep_view;
}

void start_reannotate(Viewer& v, const std::string& model_file, std::vector<ModelModule> tree, bool choose) {
  if (!v.trace || v.job_view.job) return;
  if (v.loading) cancel_load(v);
  v.error.clear();
  auto job = std::make_unique<LoadJob>();
  job->path = v.trace->model->path;
  job->options = v.annotate;
  job->options.model = model_leaves(tree);
  job->options.model_tree = std::move(tree);
  job->model_file = model_file;
  job->reannotate = v.trace->model.get();
  job->choose = choose;
  job->keep_view = true;
  job->started = std::chrono::steady_clock::now();
  LoadJob* j = job.get();
  // The open trace's model is only read (the UI thread reads it too, and keeps it until the
  // result takes it over): no copy of a trace that may be gigabytes.
  j->worker = std::thread([j] {
    auto p = std::make_unique<Prepared>();
    if (prepare_view(*p, *j->reannotate, &j->progress, j->options)) {
      p->model_file = j->model_file;
      j->result = std::move(p);
    } else {
      j->error = "Annotating " + j->path + " again was cancelled";
    }
    j->done = true;
  });
  v.loading = std::move(job);
}

void cancel_load(Viewer& v) {
  if (!v.loading) return;
  v.loading->progress.cancel = true;
  if (v.loading->worker.joinable()) v.loading->worker.join();
  v.loading.reset();
}

void install(Viewer& v, std::unique_ptr<Prepared> p) {
  show(v, std::move(p));
  // A new trace's rows: the tiers pinned, the GPU streams in view.
  // Before the first frame of a trace the timeline's rows height is not known: the window's,
  // less the menus, the bottom panel (about 28%) and the ruler.
  const float visible = v.timeline.height > 0 ? v.timeline.height : (ImGui::GetIO().DisplaySize.y - 60 * v.scale) * 0.72f - 26 * v.scale;
  v.timeline.rows.defaults(v.trace->timeline, visible > 0 ? visible : 600 * v.scale);
}

void show(Viewer& v, std::unique_ptr<Prepared> p) {
  if (v.loading && v.trace &&
      ((v.loading->reannotate && v.loading->reannotate == v.trace->model.get()) || v.loading->compare_with == v.trace.get()))
    cancel_load(v);  // it reads the trace going away
  reset_search(v);
  v.trace = std::move(p);
  v.timeline.rows.resolve(v.trace->timeline);
  const TraceModel& m = *v.trace->model;
  v.timeline.view.set_extent(double(m.time_begin), double(m.time_end));
  v.timeline.view.fit(double(m.time_begin), double(m.time_end));
  v.timeline.history.clear();
  v.timeline.scroll_y = 0;
  v.sel = {};
  v.timeline.hovered = {};
  update_metrics(v);
  measure_titles(v);
}

void reinstall(Viewer& v, std::unique_ptr<Prepared> p) {
  if (!v.trace) return install(v, std::move(p));
  const render::Timeline& old = v.trace->timeline;
  const render::ItemRef sel = v.sel.hl.selected;
  render::ItemRef again = sel.valid() ? render::find_again(old, sel, p->timeline) : render::ItemRef{};
  const render::TimeView view = v.timeline.view;
  std::vector<Place> history = v.timeline.history;
  for (Place& h : history)  // the places' selections, found again in the new read
    if (h.selected.valid()) h.selected = render::find_again(old, h.selected, p->timeline);
  const float scroll = v.timeline.scroll_y;
  show(v, std::move(p));
  const TraceModel& m = *v.trace->model;
  v.timeline.view = view;
  v.timeline.view.follow_extent(double(m.time_begin), double(m.time_end));
  v.timeline.history = std::move(history);
  v.timeline.scroll_y = scroll;
  if (again.valid()) select(v, again, false);
}

void poll_load(Viewer& v) {
  if (!v.loading || !v.loading->done) return;
  v.loading->worker.join();
  if (v.loading->comparison) {
    adopt_comparison(v, *v.loading);
  } else if (v.loading->result && v.loading->reannotate) {
    LoadJob& j = *v.loading;
    if (v.trace && v.trace->model.get() == j.reannotate) {
      if (j.choose) set_model_choice(v, j.path, j.model_file, j.options.model_tree);
      v.trace->whatif.reset();  // its worker reads the model: stopped before the model moves
      j.result->model = std::move(v.trace->model);
      reinstall(v, std::move(j.result));
    }
  } else if (v.loading->result && (v.loading->job || v.loading->rank_switch)) {
    adopt_job(v, *v.loading);
  } else if (v.loading->result) {
    if (!v.loading->keep_view) close_job(v);
    add_recent(v, v.loading->path);
    if (v.loading->keep_view) reinstall(v, std::move(v.loading->result));
    else install(v, std::move(v.loading->result));
  } else {
    v.error = v.loading->error;
    std::fprintf(stderr, "strata: %s\n", v.error.c_str());
  }
  v.loading.reset();
  if (!v.compare_next.empty()) {  // --compare, once the trace it compares with is open
    const std::string b = std::exchange(v.compare_next, {});
    if (v.trace) start_compare(v, b);
  }
}

}  // namespace strata::viewer
