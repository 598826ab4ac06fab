// File ▸ Attach (Ctrl+R): lists the jobs running with Strata's agent, each with its ranks
// (asked on a worker thread, again every 2 s while the dialog shows), records N seconds or N
// iterations from one process or from every rank of a job together (on a worker thread), and
// follows the recording live: about once a second, when the file (a job: the ranks' files)
// grew, it is read again on a worker thread and installed keeping the view. When the
// recording ends the complete file (or job) opens. The state machine itself
// (collector::AttachSession) is tested without a window.
#include "app/viewer/viewer.h"

#include "client/attach_session.h"
#include "client/jobs.h"
#include "client/options.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace strata::viewer {

namespace sc = strata::collector;
using Clock = std::chrono::steady_clock;

struct AttachState {
  bool open = false;   // the dialog shows
  bool focus = false;  // bring it to the front on the next frame
  sc::AgentScan scan;
  std::vector<sc::JobInfo> jobs;  // every agent, grouped by its launcher
  std::string scan_error;
  bool scanned = false;
  int chosen = 0;        // pid of one process to record, or
  int chosen_job = 0;    // launcher pid of a job whose ranks are recorded together
  int by = 0;      // 0: seconds, 1: iterations
  float seconds = 2.0f;
  int iterations = 5;
  char output[1024] = {};  // empty: ./strata-PID-TIME.pt.trace.json
  std::string start_error;
  std::unique_ptr<sc::AttachSession> session;
  std::unique_ptr<LoadJob> live;      // a read of the growing file
  const TraceModel* shown = nullptr;  // what the last live read installed
  bool following = false;             // off once the user opens or closes a trace meanwhile
  bool was_recording = false;         // to list the agents again when a recording ends

  ~AttachState() { drop_live(); }  // the session's own destructor then stops the recording
  void drop_live() {
    if (!live) return;
    live->progress.cancel = true;
    if (live->worker.joinable()) live->worker.join();
    live.reset();
  }
};

void AttachStateDelete::operator()(AttachState* a) const { delete a; }

namespace {

const ImVec4 kRed(1.0f, 0.36f, 0.32f, 1);
const ImVec4 kErrorText(1.0f, 0.55f, 0.45f, 1);

AttachState& state(Viewer& v) {
  if (!v.attach) v.attach.reset(new AttachState);
  return *v.attach;
}

const sc::JobInfo* chosen_job(const AttachState& a) {
  for (const sc::JobInfo& j : a.jobs)
    if (j.launcher == a.chosen_job) return &j;
  return nullptr;
}

void start_recording(AttachState& a) {
  sc::RecordOptions opt;
  if (a.by == 0) opt.duration_ms = uint64_t(std::lround(double(std::max(a.seconds, 0.1f)) * 1000));
  else opt.iterations = uint32_t(std::max(a.iterations, 1));
  a.drop_live();
  a.session = std::make_unique<sc::AttachSession>();
  a.shown = nullptr;
  Status started;
  if (const sc::JobInfo* job = chosen_job(a)) {
    opt.output_dir = a.output;  // empty: the client's own name
    started = a.session->start_job(*job, opt);
  } else {
    opt.output = a.output;
    started = a.session->start(pid_t(a.chosen), opt);
  }
  a.following = started.is_ok();
  a.start_error = started.message();
}

// A live read of what the recording wrote so far: the file, or the job's directory.
std::unique_ptr<LoadJob> live_read(const sc::AttachSession& s) {
  return s.is_job() ? launch_job_load({s.output()}) : launch_load(s.output());
}

// Every frame while a recording exists: install a finished live read, start the next one,
// and open the complete file at the end.
void follow(Viewer& v, AttachState& a) {
  if (!a.session) return;
  sc::AttachSession& s = *a.session;
  if (a.was_recording && !s.active()) a.scan.refresh();  // its state changed back
  a.was_recording = s.active();
  if (a.live && a.live->done) {
    a.live->worker.join();
    if (a.live->result && a.following) {
      if (a.live->job) {
        a.live->keep_view = a.shown != nullptr;
        adopt_job(v, *a.live);
      } else {
        reinstall(v, std::move(a.live->result));
      }
      a.shown = v.trace->model.get();
      s.shown(v.trace->model->ev.size());
    }
    a.live.reset();
  }
  const bool user_load = v.loading && !v.loading->keep_view;
  const bool replaced = a.shown && (!v.trace || v.trace->model.get() != a.shown);
  if (a.following && !s.done() && (user_load || replaced)) {
    a.following = false;  // the recording goes on; its file stays for later
    a.drop_live();
  }
  switch (s.next(Clock::now(), a.live != nullptr || v.loading != nullptr)) {
    case sc::AttachSession::Action::Reload:
      if (a.following) a.live = live_read(s);
      break;
    case sc::AttachSession::Action::FinalLoad:
      if (a.following && s.is_job()) start_job_load(v, {s.output()}, a.shown != nullptr);
      else if (a.following) start_load(v, s.output(), a.shown != nullptr);
      break;
    case sc::AttachSession::Action::None: break;
  }
}

std::string status_text(const sc::AttachSession& s) {
  char buf[160];
  const auto events = static_cast<unsigned long long>(s.events_shown());
  if (s.active()) {
    const char* what = s.state() == sc::AttachSession::State::Stopping ? "Stopping" : "Recording";
    if (events > 0) std::snprintf(buf, sizeof buf, "\xE2\x97\x8F %s \xE2\x80\x94 %llu events, %.1f s", what, events, s.seconds());
    else std::snprintf(buf, sizeof buf, "\xE2\x97\x8F %s \xE2\x80\x94 waiting for the first events, %.1f s", what, s.seconds());
  } else if (s.state() == sc::AttachSession::State::Finished) {
    std::snprintf(buf, sizeof buf, "Recorded %.1f s: the agent wrote %llu events", s.seconds(),
                  static_cast<unsigned long long>(s.result().events));
  } else {
    std::snprintf(buf, sizeof buf, "The recording failed after %.1f s", s.seconds());
  }
  return buf;
}

void draw_agents(Viewer& v, AttachState& a) {
  const float s = v.scale;
  ImGui::TextUnformatted("Jobs running with the Strata agent");
  ImGui::SameLine();
  if (ImGui::SmallButton("Refresh")) a.scan.refresh();
  if (a.scan.running()) {
    ImGui::SameLine();
    ImGui::TextDisabled("looking...");
  }
  if (!a.scan_error.empty()) ImGui::TextColored(kErrorText, "%s", a.scan_error.c_str());
  if (a.scanned && a.jobs.empty() && a.scan_error.empty()) {  // an agent that did not answer is not "none"
    ImGui::Spacing();
    ImGui::TextWrapped("No running jobs with the Strata agent were found for this user.");
    ImGui::TextWrapped("Start one with  strata record --dormant -- CMD  (for example  strata record --dormant -- "
                       "python train.py); it sits idle at no cost and shows up here within a few seconds.");
    ImGui::Spacing();
    return;
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_BordersOuter |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  size_t rows = 0;
  for (const sc::JobInfo& j : a.jobs) rows += j.agents.size() + (j.agents.size() > 1);
  const float rows_h = ImGui::GetTextLineHeightWithSpacing() * float(std::clamp<size_t>(rows, 3, 8) + 1) + 6 * s;
  if (!ImGui::BeginTable("agents", 5, flags, ImVec2(0, rows_h))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("PID", ImGuiTableColumnFlags_WidthFixed, 90 * s);
  ImGui::TableSetupColumn("Rank", ImGuiTableColumnFlags_WidthFixed, 60 * s);
  ImGui::TableSetupColumn("State", ImGuiTableColumnFlags_WidthFixed, 90 * s);
  ImGui::TableSetupColumn("GPU", ImGuiTableColumnFlags_WidthFixed, 170 * s);
  ImGui::TableSetupColumn("Command", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const sc::JobInfo& job : a.jobs) {
    // A job of several ranks: one row to record them all together, its ranks below.
    const bool several = job.agents.size() > 1;
    if (several) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      char label[48];
      std::snprintf(label, sizeof label, "job %d", int(job.launcher));
      if (ImGui::Selectable(label, a.chosen_job == job.launcher, ImGuiSelectableFlags_SpanAllColumns))
        a.chosen_job = job.launcher, a.chosen = 0;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("record every rank of this job together, one file each");
      ImGui::TableNextColumn();
      ImGui::Text("%zu ranks", job.agents.size());
      ImGui::TableNextColumn();
      ImGui::TableNextColumn();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(job.command.c_str());
    }
    for (const sc::AgentInfo& ag : job.agents) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      char label[32];
      std::snprintf(label, sizeof label, "%s%d", several ? "  " : "", int(ag.pid));
      if (ImGui::Selectable(label, a.chosen == ag.pid, ImGuiSelectableFlags_SpanAllColumns)) a.chosen = ag.pid, a.chosen_job = 0;
      ImGui::TableNextColumn();
      if (ag.rank >= 0) ImGui::Text("%lld/%lld", (long long)ag.rank, (long long)ag.world_size);
      else ImGui::TextDisabled("-");
      ImGui::TableNextColumn();
      // The scan is up to 2 s old: the process this dialog records from shows the session's state.
      const bool ours = a.session && a.session->active() && (a.session->is_job() ? a.chosen_job == job.launcher : a.session->pid() == ag.pid);
      const bool stopping = ours && a.session->state() == sc::AttachSession::State::Stopping;
      ImGui::TextUnformatted(!ours ? ag.state.c_str() : stopping ? "stopping" : "recording");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ag.gpu.empty() ? "-" : ag.gpu.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(ag.command.c_str());
    }
  }
  ImGui::EndTable();
}

void draw_options(Viewer& v, AttachState& a, bool busy) {
  const float s = v.scale;
  ImGui::BeginDisabled(busy);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Record");
  ImGui::SameLine();
  ImGui::RadioButton("seconds", &a.by, 0);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90 * s);
  ImGui::InputFloat("##seconds", &a.seconds, 0.5f, 5.0f, "%.1f");
  ImGui::SameLine(0, 24 * s);
  ImGui::RadioButton("iterations", &a.by, 1);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90 * s);
  ImGui::InputInt("##iterations", &a.iterations);
  a.seconds = std::clamp(a.seconds, 0.1f, 3600.0f);
  a.iterations = std::clamp(a.iterations, 1, 1000000);
  if (a.by == 1) ImGui::TextDisabled("Iterations are counted from NVTX ranges named *iteration* (the job needs NVTX).");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Output");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  const std::string hint = busy             ? a.session->output()
                           : a.chosen_job > 0 ? "./strata-job-LAUNCHER-TIME/ (a directory: one file per rank)"
                           : a.chosen > 0     ? sc::attach_output_name(pid_t(a.chosen))
                                              : "./strata-PID-TIME.pt.trace.json";
  ImGui::InputTextWithHint("##output", hint.c_str(), a.output, sizeof a.output);
  ImGui::EndDisabled();
}

void draw_session(Viewer& v, AttachState& a) {
  sc::AttachSession& s = *a.session;
  const bool active = s.active();
  ImGui::PushStyleColor(ImGuiCol_Text, active ? kRed : ImGui::GetStyleColorVec4(ImGuiCol_Text));
  ImGui::TextUnformatted(status_text(s).c_str());
  ImGui::PopStyleColor();
  if (s.is_job()) {
    ImGui::TextDisabled("%zu ranks  \xE2\x86\x92  %s", s.agents().size(), s.output().c_str());
    for (const sc::AgentRecording& r : s.agents())
      ImGui::TextDisabled("  %s: %s, %llu records%s%s", sc::agent_name(r).c_str(), r.state.empty() ? "starting" : r.state.c_str(),
                          (unsigned long long)r.records, r.status.is_ok() ? "" : " - ", r.status.message().c_str());
  } else {
    ImGui::TextDisabled("pid %d  \xE2\x86\x92  %s", int(s.pid()), s.output().c_str());
  }
  if (!a.following && !s.done()) ImGui::TextDisabled("Another trace is open: the recording goes on without the live view.");
  const std::string err = s.status().message();
  if (!err.empty()) ImGui::TextColored(kErrorText, "%s", err.c_str());
  if (s.state() == sc::AttachSession::State::Finished && !a.following) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Open")) {
      if (s.is_job()) start_job_load(v, {s.output()});
      else start_load(v, s.output());
    }
  }
  ImGui::BeginChild("lines", ImVec2(0, 0), true);
  for (const std::string& line : s.lines()) ImGui::TextUnformatted(line.c_str());
  if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY()) ImGui::SetScrollHereY(1.0f);
  ImGui::EndChild();
}

}  // namespace

void open_attach(Viewer& v) {
  AttachState& a = state(v);
  a.open = true;
  a.focus = true;
  a.scan.refresh();
}

bool close_attach(Viewer& v) {
  if (!v.attach || !v.attach->open) return false;
  v.attach->open = false;  // as its close button: a recording goes on, and the live view with it
  return true;
}

void draw_attach(Viewer& v) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_R, false)) open_attach(v);
  if (!v.attach) return;
  AttachState& a = *v.attach;
  follow(v, a);
  if (!a.open) return;
  a.scan.refresh_if_due(Clock::now());
  if (Status scanned; a.scan.take(a.jobs, scanned)) {
    a.scan_error = scanned.message();
    a.scanned = true;
    bool listed = chosen_job(a) != nullptr;
    for (const sc::JobInfo& j : a.jobs)
      for (const sc::AgentInfo& x : j.agents) listed |= x.pid == a.chosen;
    const bool recording = a.session && a.session->active();
    if (!listed && !recording && !a.jobs.empty()) {
      // A job of several ranks is recorded whole unless one of its processes is picked.
      const sc::JobInfo& first = a.jobs.front();
      if (first.agents.size() > 1) a.chosen_job = first.launcher, a.chosen = 0;
      else a.chosen = first.agents.front().pid, a.chosen_job = 0;
    }
  }
  const float s = v.scale;
  place_dialog(780 * s, 470 * s, io.DisplaySize.x - 790 * s, 40 * s, false);
  if (a.focus) ImGui::SetNextWindowFocus(), a.focus = false;
  if (!begin_dialog(v, "Attach to a running job", &a.open, ImGuiWindowFlags_NoCollapse)) return;
  const bool busy = a.session && a.session->active();
  if (!a.scanned) ImGui::TextDisabled("Looking for jobs running with the Strata agent...");
  else draw_agents(v, a);
  ImGui::Separator();
  draw_options(v, a, busy);
  ImGui::BeginDisabled(busy || (a.chosen <= 0 && a.chosen_job <= 0));
  if (ImGui::Button("Start", ImVec2(110 * s, 0))) start_recording(a);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!busy || a.session->state() == sc::AttachSession::State::Stopping);
  if (ImGui::Button("Stop", ImVec2(110 * s, 0))) a.session->stop();
  ImGui::EndDisabled();
  if (!a.start_error.empty()) ImGui::TextColored(kErrorText, "%s", a.start_error.c_str());
  if (a.session && a.session->state() != sc::AttachSession::State::Idle) {
    ImGui::Separator();
    draw_session(v, a);
  }
  ImGui::End();
}

void draw_recording_indicator(Viewer& v) {
  if (!v.attach || !v.attach->session || !v.attach->session->active()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, kRed);
  if (ImGui::MenuItem(status_text(*v.attach->session).c_str())) open_attach(v);
  ImGui::PopStyleColor();
}

bool parse_attach_option(int argc, char** argv, int& i, AttachRequest& r, std::string& error) {
  const std::string a = argv[i];
  if (a == "--attach-dialog") {
    r.dialog = true;
    return true;
  }
  if (a == "--attach" || a == "--attach-job" || a == "--live-screenshot") {
    if (i + 1 >= argc) return error = a + " needs a value", true;
    const char* value = argv[++i];
    if (a == "--live-screenshot") r.live_shot = value;
    else if ((r.pid = std::atoi(value)) <= 0) error = a + " takes a PID";
    r.job = a == "--attach-job";
    return true;
  }
  if (a != "--duration" && a != "--iterations" && a != "-o") return false;
  sc::RecordOptions opt;
  const Result<bool> parsed = sc::parse_record_option(argc, argv, i, opt);
  if (!parsed.is_ok()) error = parsed.status().message();
  else if (!parsed.value()) return false;
  if (opt.duration_ms) r.duration_ms = opt.duration_ms;
  if (opt.iterations) r.iterations = opt.iterations;
  if (!opt.output.empty()) r.output = opt.output;
  return true;
}

void start_attach(Viewer& v, const AttachRequest& r) {
  open_attach(v);
  if (r.pid <= 0) return;
  AttachState& a = state(v);
  a.chosen = r.job ? 0 : r.pid;
  if (r.job) {  // the job as it is now: every agent under the launcher
    std::vector<sc::JobInfo> jobs;
    sc::list_jobs(jobs);  // the agents that answer: the others could not be recorded anyway
    std::vector<sc::AgentInfo> agents;
    for (const sc::JobInfo& j : jobs) agents.insert(agents.end(), j.agents.begin(), j.agents.end());
    a.jobs = {sc::job_under(pid_t(r.pid), agents)};
    a.chosen_job = r.pid;
  }
  a.by = r.iterations > 0 ? 1 : 0;
  if (r.duration_ms > 0) a.seconds = float(double(r.duration_ms) / 1000.0);
  if (r.iterations > 0) a.iterations = int(r.iterations);
  std::snprintf(a.output, sizeof a.output, "%s", r.output.c_str());
  start_recording(a);
}

int run_attach_headless(Viewer& v, const AttachRequest& r, const HeadlessRun& out) {
  AttachState& a = state(v);
  // The recording's own length, plus time for the agent to close the file and the loads.
  const double limit_s = (r.duration_ms > 0 ? double(r.duration_ms) / 1000.0 : 30.0) + 60.0;
  const auto t0 = Clock::now();
  bool live_taken = r.live_shot.empty(), ok = true, focused = out.focus.empty();
  int settled_frames = 0;
  while (settled_frames < 3) {
    glfwPollEvents();
    poll_load(v);
    frame(v);
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) {
      std::fprintf(stderr, "strata view: the recording did not finish within %.0f s\n", limit_s);
      return 1;
    }
    const bool settled = r.pid > 0 ? a.session && a.session->done() && !a.live && !v.loading : a.scanned;
    settled_frames = settled ? settled_frames + 1 : 0;
    // --focus on the first live view: later reads must keep the selection and the range.
    if (!focused && a.shown) {
      const render::ItemRef item = render::resolve_focus(v.trace->timeline, out.focus);
      if (item.valid()) focus_on(v, item);
      else std::fprintf(stderr, "strata view: --focus '%s' matched nothing: no item on the timeline has that name or path\n",
                        out.focus.c_str()), ok = false;
      focused = true;
    }
    // Mid-recording: once a live read is shown and half the time has passed.
    if (!live_taken && a.session && a.session->active() && a.shown &&
        a.session->seconds() * 2000.0 >= double(std::max<uint64_t>(r.duration_ms, 1000))) {
      HeadlessRun live;
      live.shot = r.live_shot;
      ok = save_outputs(v, live) && ok;
      live_taken = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  if (a.session) {
    for (const std::string& line : a.session->lines()) std::fprintf(stderr, "strata view: %s\n", line.c_str());
    if (const Status st = a.session->status(); !st.is_ok()) std::fprintf(stderr, "strata view: attach: %s\n", st.message().c_str());
  }
  if (!a.start_error.empty()) std::fprintf(stderr, "strata view: attach: %s\n", a.start_error.c_str());
  if (!live_taken) std::fprintf(stderr, "strata view: the recording ended before a live view could be captured\n");
  ok = save_outputs(v, out) && ok;
  if (v.trace)
    std::fprintf(stderr, "strata view: %zu events shown, view %s .. %s, selected: %s\n", v.trace->model->ev.size(),
                 fmt_time(v, v.timeline.view.t0).c_str(), fmt_time(v, v.timeline.view.t1()).c_str(),
                 v.sel.hl.selected.valid() ? std::string(v.trace->timeline.name_of(v.sel.hl.selected)).c_str() : "nothing");
  const bool recorded = r.pid <= 0 || (a.session && a.session->state() == sc::AttachSession::State::Finished);
  return ok && recorded && v.error.empty() ? 0 : 1;
}

}  // namespace strata::viewer
