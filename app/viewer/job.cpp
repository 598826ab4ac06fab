// A distributed job in the viewer: every rank's overview row (iterations coloured by who made
// whom wait, phases, collectives) above the timeline, which shows one rank's tracks at a time
// on the job's reference clock; the Job tab (ranks, stragglers, communication) and the Ranks
// tab (one step's phases, rank under rank). Every figure is the job analysis' (core/job).
#include "app/viewer/viewer.h"
#include "core/median.h"
#include "render/legend.h"

#include <imgui.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>

namespace strata::viewer {

namespace {

// The index in job.data of a rank (an index into job.ranks), or SIZE_MAX when it failed to load.
size_t data_of(const Job& job, uint32_t rank) {
  for (size_t i = 0; i < job.data_rank.size(); ++i)
    if (job.data_rank[i] == rank) return i;
  return SIZE_MAX;
}

Ns offset_of(const Job& job, uint32_t rank) {
  size_t d = data_of(job, rank);
  return d == SIZE_MAX ? 0 : job.analysis.clock_offset[d];
}

// The rank's trace on the job's clock, annotated and laid out. Takes the model the job kept,
// else reads the file again.
std::unique_ptr<Prepared> prepare_rank(Job& job, uint32_t rank, Progress* progress, std::string& error) {
  JobRank& jr = job.ranks[rank];
  std::unique_ptr<TraceModel> m = std::move(jr.model);
  jr.annotation.reset();  // annotated again on the shifted clock
  if (!m) {
    LoadResult r = load_trace(jr.file.path, progress);
    if (!r.model) {
      error = r.error();
      return nullptr;
    }
    m = std::move(r.model);
  }
  m->shift_clock(offset_of(job, rank));
  std::unique_ptr<Prepared> p = prepare(std::move(m), progress);
  if (!p) error = "Loading rank " + std::to_string(jr.file.rank) + " was cancelled";
  return p;
}

std::unique_ptr<LoadJob> new_load(std::string what) {
  auto l = std::make_unique<LoadJob>();
  l->path = std::move(what);
  l->started = std::chrono::steady_clock::now();
  return l;
}

render::Rgba phase_colour(PhaseKind p) { return render::base_colour(render::phase_hue(p)); }

// Iteration colour: red as the rank made the others wait, blue as it waited for them; full
// colour at 2% of the iteration (a rank late by that much in every step loses a fiftieth of
// the job's time).
render::Rgba lateness_colour(const JobAnalysis::StepWait* w, Ns iteration) {
  render::Rgba base = render::rgba(120, 122, 130);
  if (!w || iteration <= 0) return base;
  const bool late = w->caused > w->waited;
  float f = std::clamp(float(double(late ? w->caused : w->waited) / double(iteration)) * 50.0f, 0.0f, 1.0f);
  if (late) return render::rgba(uint8_t(120 + 110 * f), uint8_t(122 - 80 * f), uint8_t(130 - 90 * f));
  return render::rgba(uint8_t(120 - 60 * f), uint8_t(122 + 10 * f), uint8_t(130 + 90 * f));
}

// The job's extent on the reference clock, as the view's limits. `follow`: the job grew (a
// recording read again): a view showing all of it goes on showing all of it.
void fit_job_extent(Viewer& v, bool follow = false) {
  JobView& jv = v.job_view;
  Ns b = INT64_MAX, e = INT64_MIN;
  const Job& job = *jv.job;
  for (size_t i = 0; i < job.data.size(); ++i) {
    const RankData& r = job.data[i];
    Ns off = job.analysis.clock_offset[i];
    if (!r.iterations.empty()) b = std::min(b, r.iterations.front().begin + off), e = std::max(e, r.iterations.back().end + off);
    if (!r.collectives.empty()) b = std::min(b, r.collectives.front().start + off), e = std::max(e, r.collectives.back().end + off);
  }
  if (v.trace) b = std::min(b, v.trace->model->time_begin), e = std::max(e, v.trace->model->time_end);
  if (b >= e) return;
  jv.begin = b;
  jv.end = e;
  if (follow) v.timeline.view.follow_extent(double(b), double(e));
  else v.timeline.view.set_extent(double(b), double(e));
}

}  // namespace

double time_origin(const Viewer& v) {
  if (v.job_view.job) return double(v.job_view.begin);
  return v.trace ? double(v.trace->model->time_begin) : 0;
}

float gutter_width(const Viewer& v, float w) {
  // Wide enough for the widest lane title where the window has room (a thread's name was cut
  // with half the window to spare), at most 30% of the timeline.
  const float s = v.scale, want = v.trace ? v.trace->titles_w + 24 * s : 0;
  return std::min(std::max(want, 170 * s), std::min(w * 0.3f, 420 * s));
}

void measure_titles(Viewer& v) {
  float widest = 0;
  for (const render::Lane& l : v.trace->timeline.lanes)  // with the fold mark before it and the pin after
    widest = std::max(widest, v.metrics.width("\xE2\x96\xB8 " + l.title + "  \xE2\x96\xAA"));
  v.trace->titles_w = widest;
}

void start_job_load(Viewer& v, const std::vector<std::string>& inputs, bool keep_view) {
  if (v.loading) cancel_load(v);
  v.loading = launch_job_load(inputs);
  v.loading->keep_view = keep_view;
  v.error.clear();
}

std::unique_ptr<LoadJob> launch_job_load(const std::vector<std::string>& inputs) {
  std::unique_ptr<LoadJob> job_load =
      new_load(inputs.size() == 1 ? inputs[0] : inputs[0] + " and " + std::to_string(inputs.size() - 1) + " more");
  LoadJob* l = job_load.get();
  l->worker = std::thread([l, inputs] {
    Result<std::vector<JobFile>> files = job_files(inputs);
    if (!files.is_ok()) {
      l->error = files.status().message();
    } else {
      JobOptions options;
      l->ranks_total = files->size();
      options.on_rank = [l](const RankData& d) {  // the loading box's overview, as ranks arrive
        LoadJob::RankArrived a{d.rank, d.file, 0, 0};
        std::vector<Ns> times;
        for (const RankData::IterationTime& it : d.iterations)
          if (!it.partial) times.push_back(it.end - it.begin);
        a.iterations = times.size();
        a.median = median(times);
        const std::lock_guard<std::mutex> lock(l->arrived_mutex);
        l->arrived.push_back(std::move(a));
      };
      auto job = std::make_unique<Job>(load_job(files.value(), options, &l->progress));
      if (l->progress.cancelled()) {
        l->error = "Loading " + l->path + " was cancelled";
      } else if (job->data.empty()) {
        l->error = "no rank of " + l->path + " could be loaded";
        for (const JobRank& r : job->ranks) l->error += "; " + r.status.message();
      } else {
        // First the rank that held the others up most, else the lowest.
        uint32_t rank = job->data_rank[0];
        if (!job->analysis.stragglers.empty())
          for (size_t i = 0; i < job->data.size(); ++i)
            if (job->data[i].rank == job->analysis.stragglers[0].rank) rank = job->data_rank[i];
        l->result = prepare_rank(*job, rank, &l->progress, l->error);
        l->rank = rank;
        l->job = std::move(job);
      }
    }
    l->done = true;
  });
  return job_load;
}

void draw_ranks_arrived(Viewer& v, LoadJob& l) {
  {
    const std::lock_guard<std::mutex> lock(l.arrived_mutex);
    l.arrived_shown = l.arrived;
  }
  std::vector<LoadJob::RankArrived>& arrived = l.arrived_shown;
  std::sort(arrived.begin(), arrived.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  ImGui::Text("%zu of %zu ranks loaded", arrived.size(), l.ranks_total.load());
  if (arrived.empty()) return;
  const auto slowest = std::max_element(arrived.begin(), arrived.end(), [](const auto& a, const auto& b) { return a.median < b.median; });
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  const float rows = float(std::min<size_t>(arrived.size(), 8) + 1);
  if (!ImGui::BeginTable("ranks arrived", 4, flags, ImVec2(0, rows * ImGui::GetTextLineHeightWithSpacing() + 4 * v.scale))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("rank");
  ImGui::TableSetupColumn("iterations");
  ImGui::TableSetupColumn("median iteration", ImGuiTableColumnFlags_WidthFixed, 220 * v.scale);
  ImGui::TableSetupColumn("file", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const LoadJob::RankArrived& a : arrived) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%lld", (long long)a.rank);
    ImGui::TableNextColumn();
    ImGui::Text("%zu", a.iterations);
    ImGui::TableNextColumn();
    const bool slow = arrived.size() > 1 && &a == &*slowest && a.median > 0;
    if (a.iterations && slowest->median > 0) {  // a bar as long as the median against the slowest's: the overview so far
      const ImVec2 at = ImGui::GetCursorScreenPos();
      const float bar = ImGui::GetContentRegionAvail().x * float(double(a.median) / double(slowest->median));
      ImGui::GetWindowDrawList()->AddRectFilled(at, ImVec2(at.x + bar, at.y + ImGui::GetTextLineHeight()),
                                                slow ? IM_COL32(210, 95, 40, 170) : IM_COL32(60, 110, 180, 150));
    }
    ImGui::TextUnformatted(a.iterations ? (format_duration(a.median) + (slow ? "  slowest so far" : "")).c_str() : "-");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::filesystem::path(a.file).filename().c_str());
  }
  ImGui::EndTable();
}

void show_rank(Viewer& v, uint32_t rank) {
  JobView& jv = v.job_view;
  if (!jv.job || rank == jv.shown || rank >= jv.job->ranks.size() || !jv.job->ranks[rank].status.is_ok()) return;
  if (v.loading) cancel_load(v);
  v.loading = new_load(jv.job->ranks[rank].file.path);
  LoadJob* l = v.loading.get();
  l->rank_switch = true;
  l->rank = rank;
  Job* job = jv.job.get();
  l->worker = std::thread([l, job, rank] {
    l->result = prepare_rank(*job, rank, &l->progress, l->error);
    l->done = true;
  });
}

void adopt_job(Viewer& v, LoadJob& l) {
  JobView& jv = v.job_view;
  if (l.job && l.keep_view && jv.job) {
    // The same job read again (a recording that grew): the view, the rows and the rank shown stay.
    const render::TimeView view = v.timeline.view;
    const float scroll = v.timeline.scroll_y;
    const int64_t rank_shown = jv.job->ranks[jv.shown].file.rank;
    uint32_t again = l.rank;
    for (uint32_t i = 0; i < l.job->ranks.size(); ++i)
      if (l.job->ranks[i].file.rank == rank_shown && l.job->ranks[i].status.is_ok()) again = i;
    if (again != l.rank) {
      std::string error;
      std::unique_ptr<Prepared> p = prepare_rank(*l.job, again, nullptr, error);
      if (p) l.result = std::move(p), l.rank = again;
    }
    jv.job = std::move(l.job);
    jv.shown = l.rank;
    show(v, std::move(l.result));
    v.timeline.view = view;
    v.timeline.scroll_y = scroll;
    fit_job_extent(v, true);
    return;
  }
  if (l.job) {
    close_job(v);
    jv.job = std::move(l.job);
    jv.shown = l.rank;
    install(v, std::move(l.result));
    fit_job_extent(v);
    v.timeline.view.fit(double(jv.begin), double(jv.end));
    // The worst straggler's collective, marked on every rank.
    if (!jv.job->analysis.stragglers.empty()) {
      jv.compare_step = jv.job->analysis.stragglers[0].step;
      jv.instance = int(jv.job->analysis.stragglers[0].instance);
    }
    return;
  }
  // Another rank: the shown one's model goes back to the job, on its own clock.
  if (v.trace && jv.job && jv.shown < jv.job->ranks.size()) {
    v.trace->whatif.reset();  // its worker reads the model
    v.trace->model->shift_clock(-offset_of(*jv.job, jv.shown));
    jv.job->ranks[jv.shown].model = std::move(v.trace->model);
    v.trace.reset();
  }
  const render::TimeView view = v.timeline.view;
  show(v, std::move(l.result));
  jv.shown = l.rank;
  v.timeline.view = view;
  fit_job_extent(v);
}

void close_job(Viewer& v) { v.job_view = {}; }

float draw_job_overview(Viewer& v, float x, float y, float w, float max_h) {
  JobView& jv = v.job_view;
  if (!jv.job) return 0;
  const Job& job = *jv.job;
  const JobAnalysis& an = job.analysis;
  const float s = v.scale;
  const float head = ImGui::GetTextLineHeight() + 6 * s;
  const size_t rows = job.data.size();
  // Rows shrink to a few pixels so that 64 ranks fit; labels go to every k-th row then.
  const float row_h = std::clamp((max_h - head) / float(std::max<size_t>(rows, 1)), 3.0f * s, 22.0f * s);
  const float text_h = ImGui::GetTextLineHeight();
  const size_t label_every = row_h >= text_h ? 1 : size_t(std::ceil(text_h / row_h));
  const float h = std::min(max_h, head + row_h * float(rows));
  const float gutter = gutter_width(v, w), area_x = x + gutter;
  const render::TimeView& view = v.timeline.view;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered = !v.capture.headless && ImGui::IsWindowHovered() && mouse.x >= x && mouse.x < x + w &&
                       mouse.y >= y && mouse.y < y + h;

  // Header: what the job is and what went wrong.
  char head_text[256];
  std::snprintf(head_text, sizeof head_text, "Job: %zu ranks, clocks aligned by %" PRIu64 " collectives; %zu straggler%s",
                rows, an.aligned_by, an.stragglers.size(), an.stragglers.size() == 1 ? "" : "s");
  dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, y + head), IM_COL32(52, 55, 62, 255));
  dl->AddText(ImVec2(x + 6 * s, y + 3 * s), IM_COL32(230, 230, 235, 255), head_text);
  dl->PushClipRect(ImVec2(x, y + head), ImVec2(x + w, y + h), true);
  int hover_rank = -1, hover_instance = -1;
  int64_t hover_step = INT64_MIN;
  for (size_t i = 0; i < rows; ++i) {
    const RankData& r = job.data[i];
    const Ns off = an.clock_offset[i];
    const float y0 = y + head + float(i) * row_h, y1 = y0 + row_h - 1;
    if (y0 > y + h) break;
    const bool shown = job.data_rank[i] == jv.shown;
    dl->AddRectFilled(ImVec2(x, y0), ImVec2(area_x, y1), shown ? IM_COL32(40, 70, 100, 255) : IM_COL32(38, 39, 43, 255));
    const size_t shown_at = data_of(job, jv.shown);
    const bool near_shown = !shown && shown_at != SIZE_MAX && std::max(i, shown_at) - std::min(i, shown_at) < label_every;
    if ((i % label_every == 0 && !near_shown) || shown) {
      char label[64];
      std::snprintf(label, sizeof label, "%s rank %" PRId64, shown ? "\xE2\x96\xB6" : " ", r.rank);
      dl->AddText(ImVec2(x + 6 * s, y0 + std::min(0.0f, (row_h - text_h) * 0.5f) + (row_h >= text_h ? (row_h - text_h) * 0.5f : 0)),
                  IM_COL32(220, 220, 225, 255), label);
    }
    if (hovered && mouse.y >= y0 && mouse.y < y1 && mouse.x < area_x) hover_rank = int(i);
    dl->PushClipRect(ImVec2(area_x, y0), ImVec2(x + w, y1 + 1), true);
    // Iterations, coloured by waiting; phases along the bottom; collectives as ticks.
    for (const RankData::IterationTime& it : r.iterations) {
      float a = area_x + float(view.x_of(double(it.begin + off))), b = area_x + float(view.x_of(double(it.end + off)));
      if (b < area_x || a > x + w) continue;
      render::Rgba c = lateness_colour(an.step_wait(uint32_t(i), it.step), it.end - it.begin);
      dl->AddRectFilled(ImVec2(a, y0), ImVec2(std::max(b, a + 1) - 1, y1), ImU32(c));
      if (hovered && mouse.x >= a && mouse.x < b && mouse.y >= y0 && mouse.y < y1) hover_rank = int(i), hover_step = it.step;
    }
    const float py = row_h >= 8 * s ? y0 + row_h * 0.6f : y1;  // thin rows: iterations only
    for (const RankData::PhaseSpan& p : r.phases) {
      float a = area_x + float(view.x_of(double(p.begin + off))), b = area_x + float(view.x_of(double(p.end + off)));
      if (b < area_x || a > x + w || b - a < 1) continue;
      dl->AddRectFilled(ImVec2(a, py), ImVec2(b, y1), ImU32(phase_colour(p.phase)));
    }
    for (const RankData::Collective& c : r.collectives) {
      float a = area_x + float(view.x_of(double(c.start + off)));
      if (a < area_x || a > x + w) continue;
      dl->AddLine(ImVec2(a, y0), ImVec2(a, py), IM_COL32(255, 255, 255, 110));
    }
    dl->PopClipRect();
  }
  // The selected collective on every rank: its kernel, the waiting part in red.
  if (jv.instance >= 0 && size_t(jv.instance) < an.instances.size()) {
    const JobAnalysis::Instance& inst = an.instances[size_t(jv.instance)];
    for (const auto& mb : inst.members) {
      const float y0 = y + head + float(mb.rank) * row_h, y1 = y0 + row_h - 1;
      float a = area_x + float(view.x_of(double(mb.arrival))), b = area_x + float(view.x_of(double(mb.arrival + mb.duration)));
      float wend = area_x + float(view.x_of(double(mb.arrival + mb.wait)));
      dl->AddRectFilled(ImVec2(a, y0), ImVec2(std::max(wend, a + 2), y1), IM_COL32(230, 60, 50, 230));
      if (row_h >= 8 * s) dl->AddRect(ImVec2(a - 1, y0), ImVec2(std::max(b, a + 3) + 1, y1), IM_COL32(255, 255, 255, 255), 0, 0, 1.5f * s);
    }
  }
  // Hovering a tick picks the nearest collective of that rank.
  if (hover_rank >= 0 && mouse.x >= area_x) {
    const RankData& r = job.data[size_t(hover_rank)];
    float best = 4 * s;
    for (size_t k = 0; k < an.instances.size(); ++k)
      for (const auto& mb : an.instances[k].members)
        if (mb.rank == uint32_t(hover_rank)) {
          float d = std::abs(area_x + float(view.x_of(double(mb.arrival))) - mouse.x);
          if (d < best) best = d, hover_instance = int(k);
        }
    begin_tooltip(v);
    if (hover_instance >= 0) {
      const JobAnalysis::Instance& inst = an.instances[size_t(hover_instance)];
      ImGui::Text("%s #%u of group %s, step %" PRId64, inst.kind.c_str(), inst.index, inst.group.c_str(), inst.step);
      for (const auto& mb : inst.members)
        ImGui::Text("rank %" PRId64 ": arrived %s, waited %s", job.data[mb.rank].rank,
                    fmt_time(v, double(mb.arrival)).c_str(), format_duration(mb.wait).c_str());
      ImGui::TextDisabled("click: show it on every rank");
    } else if (hover_step != INT64_MIN) {
      const JobAnalysis::StepWait* sw = an.step_wait(uint32_t(hover_rank), hover_step);
      ImGui::Text("rank %" PRId64 ", step %" PRId64, r.rank, hover_step);
      if (sw) ImGui::Text("waited %s for others; made them wait %s", format_duration(sw->waited).c_str(),
                          format_duration(sw->caused).c_str());
      ImGui::TextDisabled("click: show this rank's tracks");
    } else {
      ImGui::Text("rank %" PRId64 " (%s)", r.rank, r.file.c_str());
      ImGui::TextDisabled("click: show this rank's tracks");
    }
    end_tooltip(v);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      if (hover_instance >= 0) {
        jv.instance = hover_instance;
        jv.compare_step = an.instances[size_t(hover_instance)].step;
      } else {
        show_rank(v, job.data_rank[size_t(hover_rank)]);
      }
    }
  } else if (hover_rank >= 0 && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    show_rank(v, job.data_rank[size_t(hover_rank)]);
  }
  dl->PopClipRect();
  if (hovered && ImGui::GetIO().MouseWheel != 0 && mouse.x >= area_x)
    v.timeline.view.zoom_at(mouse.x - area_x, std::pow(1.25, double(ImGui::GetIO().MouseWheel)));
  return h;
}

void draw_job_tab(Viewer& v) {
  JobView& jv = v.job_view;
  if (!jv.job) return;
  const Job& job = *jv.job;
  const JobAnalysis& an = job.analysis;
  auto heading = [&](const char* t) {
    ImGui::PushFont(v.font_bold);
    ImGui::TextUnformatted(t);
    ImGui::PopFont();
  };
  heading("Stragglers");
  if (an.stragglers.empty()) ImGui::TextDisabled("None: no rank kept the others waiting for more than noise.");
  for (size_t k = 0; k < an.stragglers.size() && k < 12; ++k) {
    const JobAnalysis::Straggler& st = an.stragglers[k];
    char line[512];
    std::snprintf(line, sizeof line, "rank %" PRId64 ", step %" PRId64 ": the others waited %s; its time went to %s%s%s%s%s##st%zu",
                  st.rank, st.step, format_duration(st.delay).c_str(), st.cause.c_str(),
                  st.phase.empty() ? "" : " in ", st.phase.c_str(), st.layer.empty() ? "" : ", layer ", st.layer.c_str(), k);
    if (ImGui::Selectable(line)) {
      jv.instance = int(st.instance);
      jv.compare_step = st.step;
      for (size_t i = 0; i < job.data.size(); ++i)
        if (job.data[i].rank == st.rank) show_rank(v, job.data_rank[i]);
    }
    if (!st.kernel.empty() && ImGui::IsItemHovered()) tooltip(v, "kernel: %s", st.kernel.c_str());
  }
  ImGui::Spacing();
  heading("Ranks");
  if (ImGui::BeginTable("ranks", 7, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY,
                        ImVec2(0, std::min(ImGui::GetTextLineHeightWithSpacing() * float(job.data.size() + 2), 240 * v.scale)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* c : {"Rank", "Iteration (median)", "GPU busy", "Compute", "Communication", "Overlapped", "Clock offset"})
      ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < job.data.size(); ++i) {
      const RankData& r = job.data[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      char name[48];
      std::snprintf(name, sizeof name, "%" PRId64 "##rank%zu", r.rank, i);
      if (ImGui::Selectable(name, job.data_rank[i] == jv.shown, ImGuiSelectableFlags_SpanAllColumns)) show_rank(v, job.data_rank[i]);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(r.iter_median).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.1f%%", 100 * r.utilization);
      for (Ns t : {r.compute, r.communication, r.overlap, an.clock_offset[i]}) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format_duration(t).c_str());
      }
    }
    ImGui::EndTable();
  }
  ImGui::Spacing();
  heading("Communication per rank");
  for (const JobAnalysis::Comm& c : an.comm_kinds)
    ImGui::Text("%s x%llu: %s, exposed %s", c.name.c_str(), (unsigned long long)c.count, format_duration(c.time).c_str(),
                format_duration(c.exposed).c_str());
  for (size_t k = 0; k < an.comm_layers.size() && k < 8; ++k) {
    const JobAnalysis::Comm& c = an.comm_layers[k];
    ImGui::BulletText("%s: %s, exposed %s", c.name.c_str(), format_duration(c.time).c_str(),
                      format_duration(c.exposed).c_str());
  }
  for (const std::string& n : an.notes) ImGui::TextDisabled("%s", n.c_str());
}

void draw_ranks_tab(Viewer& v) {
  JobView& jv = v.job_view;
  if (!jv.job) return;
  const Job& job = *jv.job;
  // The steps every rank has.
  std::vector<int64_t> steps;
  for (const RankData::IterationTime& it : job.data.front().iterations) steps.push_back(it.step);
  if (steps.empty()) {
    ImGui::TextDisabled("No iterations to compare.");
    return;
  }
  if (std::find(steps.begin(), steps.end(), jv.compare_step) == steps.end()) jv.compare_step = steps.front();
  ImGui::SetNextItemWidth(160 * v.scale);
  if (ImGui::BeginCombo("step", std::to_string(jv.compare_step).c_str())) {
    for (int64_t st : steps)
      if (ImGui::Selectable(std::to_string(st).c_str(), st == jv.compare_step)) jv.compare_step = st;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("each rank's phases in this step, on one scale (the longest rank's iteration)");
  Ns longest = 1;
  for (const RankData& r : job.data)
    for (const RankData::IterationTime& it : r.iterations)
      if (it.step == jv.compare_step) longest = std::max(longest, it.end - it.begin);
  const float s = v.scale, row_h = 20 * s, title_w = 150 * s;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 origin = ImGui::GetCursorScreenPos();
  float width = ImGui::GetContentRegionAvail().x - title_w;
  for (size_t i = 0; i < job.data.size(); ++i) {
    const RankData& r = job.data[i];
    const float y0 = origin.y + float(i) * (row_h + 2 * s);
    const RankData::IterationTime* it = nullptr;
    for (const RankData::IterationTime& x : r.iterations)
      if (x.step == jv.compare_step) it = &x;
    const JobAnalysis::StepWait* sw = job.analysis.step_wait(uint32_t(i), jv.compare_step);
    char label[96];
    std::snprintf(label, sizeof label, "rank %" PRId64 "  %s", r.rank, it ? format_duration(it->end - it->begin).c_str() : "-");
    dl->AddText(ImVec2(origin.x, y0 + 2 * s), sw && sw->caused > 0 ? IM_COL32(240, 120, 100, 255) : IM_COL32(200, 200, 205, 255), label);
    if (!it) continue;
    for (const RankData::PhaseSpan& p : r.phases) {
      if (p.step != jv.compare_step) continue;
      float a = origin.x + title_w + float(double(p.begin - it->begin) / double(longest)) * width;
      float b = origin.x + title_w + float(double(p.end - it->begin) / double(longest)) * width;
      dl->AddRectFilled(ImVec2(a, y0), ImVec2(std::max(b - 1, a + 1), y0 + row_h), ImU32(phase_colour(p.phase)));
      if (b - a > 60 * s) dl->AddText(ImVec2(a + 3 * s, y0 + 2 * s), IM_COL32(20, 20, 24, 255), phase_name(p.phase));
    }
  }
  ImGui::Dummy(ImVec2(title_w + width, float(job.data.size()) * (row_h + 2 * s)));
}

}  // namespace strata::viewer
