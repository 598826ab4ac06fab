// The agent's one thread: it sleeps in poll() while dormant, serves control requests (many
// clients at once, none able to hold it up), and while recording turns completed CUPTI
// buffers into trace lines. All session state belongs to this thread: CUPTI callbacks reach it
// through atomics and an eventfd, the job's exit handler through a flag it waits on for a
// bounded time, so no thread of the job ever waits on a lock held across file or socket I/O.
// The thread blocks every signal: nothing it writes (a file past RLIMIT_FSIZE, a closed pipe)
// can signal the job.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "../protocol/control_socket.h"
#include "../protocol/job_rank.h"
#include "../protocol/metrics.h"
#include "../trace/chrome_writer.h"
#include "agent.h"
#include "range_profiler.h"

namespace strata::agent {

namespace {

using collector::Message;
using collector::error_reply;

constexpr int64_t kTickMs = 100;           // timers and buffer draining while a session exists
constexpr auto kExitWait = std::chrono::seconds(10);  // the longest the job's exit waits for the file
constexpr size_t kMaxPatternBytes = 255;
constexpr size_t kMaxPatterns = 64;        // distinct patterns kept for the process's life

struct Session {
  std::string output;
  uint64_t duration_ms = 0;
  Trigger trigger = Trigger::None;
  int64_t start_at_ms = 0;  // > now: waiting for --delay
  int64_t stop_at_ms = 0;   // 0: no time limit
  collector::FileSink sink;
  std::unique_ptr<collector::ChromeTraceWriter> writer;
  collector::TraceStats stats;
  uint64_t dropped_base = 0;
  bool begun = false;
  std::vector<std::string> metrics;  // collected per profiled launch (empty: none)
  std::string kernels;               // the glob choosing the launches
  bool metrics_failure_noted = false;
};

struct LastResult {
  std::string output;
  Status status;  // why the file is incomplete
  uint64_t events = 0;  // events that reached the file
  uint64_t dropped = 0;
};

struct Control {
  collector::ControlServer server;
  std::unique_ptr<Session> session;
  LastResult last;
  uint64_t finished = 0;
  std::string command;
  std::string gpus;
  bool nvtx_injected = false;     // read once: getenv is not safe against the job's setenv
  collector::JobRank rank;        // the same: read once, at CUDA's initialization
  std::deque<std::string> patterns;  // see publish_pattern
  bool forked_child = false;
  bool exiting = false;
  // The job's exit handler sets exit_requested and waits (bounded) for thread_done.
  std::atomic<bool> exit_requested{false};
  std::atomic<bool> thread_started{false};
  std::mutex exit_mu;
  std::condition_variable exit_cv;
  bool thread_done = false;  // guarded by exit_mu
};
Control& control() {
  static Control* c = new Control;  // never destroyed: the thread outlives static destructors
  return *c;
}

// STRATA_TEARDOWN=0 keeps CUPTI subscribed between recordings (see cupti_release).
bool release_between_recordings() {
  static const bool release = [] {
    const char* e = std::getenv("STRATA_TEARDOWN");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return release;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string read_cmdline() {
  std::string out;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    for (size_t i = 0; i < n; ++i) out += buf[i] == '\0' ? ' ' : buf[i];
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  return out;
}

std::string device_names(const std::vector<collector::DeviceRecord>& devices) {
  std::string s;
  for (const auto& d : devices) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

// The NVTX and launch callbacks read their globs on job threads, maybe while a later recording is
// being set up, so a published glob is never changed or freed: each distinct one is kept.
bool publish_pattern(Control& c, const std::string& pattern, std::atomic<const char*>& to) {
  const std::string* kept = nullptr;
  for (const std::string& p : c.patterns)
    if (p == pattern) kept = &p;
  if (kept == nullptr) {
    if (c.patterns.size() >= kMaxPatterns) return false;
    c.patterns.push_back(pattern);  // a deque: earlier strings never move
    kept = &c.patterns.back();
  }
  to.store(kept->c_str(), std::memory_order_release);
  return true;
}

// Writes the header on first use: device properties are read only after cuInit is done.
void begin_trace(Control& c, Session& s) {
  if (s.begun) return;
  collector::TraceHeader h;
  h.devices = query_devices();
  if (!h.devices.empty()) c.gpus = device_names(h.devices);
  h.base_ns = (cupti_timestamp() / 1000000000 - 1) * 1000000000;  // whole second before the start
  h.pid = static_cast<uint32_t>(getpid());
  h.command = c.command;
  h.trace_name = "strata " + std::to_string(h.pid);
  h.rank = c.rank.rank;
  h.world_size = c.rank.world_size;
  h.metrics = s.metrics;
  s.writer->begin(h);
  s.begun = true;
}

// Metrics stop for the rest of the recording, not the recording: the trace and stderr say why.
// Only stored: the header waits for begin_trace (not inside cuInit).
void note_metrics_off(Session& s, const std::string& why) {
  const std::string note = "hardware metrics stopped: " + why + "; the recording went on without them";
  s.writer->add_note(note);
  agent_log(note);
  s.metrics_failure_noted = true;
}

// Counters before activity records: a kernel's record usually comes after its counters.
void drain_counters(Control& c, Session& s) {
  metrics_drain([&](const collector::KernelCounters& k) {
    begin_trace(c, s);
    s.writer->add_counters(k);
  });
  if (s.metrics_failure_noted) return;
  if (const std::string why = metrics_failure(); !why.empty()) {
    set_launch_callbacks(false);  // the failed profiler costs the job nothing more
    note_metrics_off(s, why);
  }
}

void drain(Control& c) {
  Session* s = c.session.get();
  if (s == nullptr) {
    discard_records();  // a buffer completed after its session ended
    return;
  }
  if (shared().trigger_range_ready.exchange(false, std::memory_order_acquire)) {
    begin_trace(c, *s);
    s->writer->add_open_range(shared().trigger_range_ts, static_cast<uint32_t>(getpid()),
                              shared().trigger_range_tid, shared().trigger_range_name);
  }
  if (!s->metrics.empty()) drain_counters(c, *s);
  drain_records([&](const collector::Record& r) {
    begin_trace(c, *s);
    s->writer->add(r);
    ++s->stats.records;
  });
}

void start_recording(Session& s) {
  Shared& sh = shared();
  if (s.trigger != Trigger::None) {
    sh.iterations_done.store(0);
    sh.trigger_range_ready.store(false);
    sh.trigger.store(s.trigger);
    sh.state.store(State::Armed);
    if (!s.metrics.empty()) set_launch_callbacks(true);  // they profile only while Recording
    set_trigger_callbacks(s.trigger, true);
    return;
  }
  if (!s.metrics.empty()) set_launch_callbacks(true);
  sh.state.store(State::Starting);
  wait_for_launches();
  activities_enable();
  sh.state.store(State::Recording);
  if (s.duration_ms > 0) s.stop_at_ms = now_ms() + static_cast<int64_t>(s.duration_ms);
}

// Ends whatever phase the recording is in; afterwards the state is Stopping or Dormant.
void stop_recording() {
  Shared& sh = shared();
  for (;;) {
    State st = sh.state.load();
    if (st == State::Starting || st == State::Disabling) {  // a job thread is mid-switch: brief
      std::this_thread::yield();
      continue;
    }
    if (st == State::Armed && !sh.state.compare_exchange_strong(st, State::Dormant)) continue;
    if (st == State::Recording) {
      if (!sh.state.compare_exchange_strong(st, State::Disabling)) continue;
      wait_for_launches();
      activities_disable();
      sh.state.store(State::Stopping);
    }
    return;
  }
}

void finish(Control& c) {
  Session& s = *c.session;
  stop_recording();
  set_trigger_callbacks(s.trigger, false);
  shared().trigger.store(Trigger::None);
  if (!s.metrics.empty()) {
    set_launch_callbacks(false);
    drain_counters(c, s);  // the failure, if any, before release forgets it
    metrics_release();     // waits for a launch being profiled
  }
  activities_flush();
  drain(c);
  collect_dropped();
  begin_trace(c, s);
  s.stats.dropped = shared().cupti_dropped.load() - s.dropped_base;
  s.writer->finish(s.stats);
  const bool closed = s.sink.close();
  c.last = LastResult{s.output, closed ? Status::ok() : s.sink.status(), s.writer->events_written(), s.stats.dropped};
  if (!c.last.status.is_ok()) agent_log(c.last.status.message());
  c.session.reset();
  ++c.finished;
  shared().state.store(State::Dormant);
  if (!c.exiting && release_between_recordings()) cupti_release();
}

std::string alternative_name(const std::string& path) {
  const std::string pid = std::to_string(getpid());
  for (const char* ext : {".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"}) {
    const size_t n = std::strlen(ext);
    if (path.size() > n && path.compare(path.size() - n, n, ext) == 0)
      return path.substr(0, path.size() - n) + "." + pid + ext;
  }
  return path + "." + pid;
}

// Reads `key` as a whole number in [lo, hi]; Invalid when it is there but is not one.
Status read_bounded(const Message& req, const char* key, uint64_t lo, uint64_t hi, std::optional<uint64_t>& out) {
  bool bad = false;
  out = collector::get_uint(req, key, &bad);
  if (!bad && (!out || (*out >= lo && *out <= hi))) return Status::ok();
  return Status::invalid(std::string(key) + " takes a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
}

// What a start request asks for, every value checked before anything is opened or subscribed.
struct StartPlan {
  std::string output;
  bool exclusive = false;
  std::optional<uint64_t> duration, iterations, delay;
  Trigger trigger = Trigger::None;
  std::string pattern;
  uint32_t kinds = collector::kDefaultKinds;
  std::vector<std::string> metrics;
  std::string kernels;
};

// The file a start writes: `output`, or in `output_dir` the name this process's rank gives it
// (rank-R.pt.trace.json, pid-P without a rank; .gz with gzip=1), so every process of a job that
// was handed the same request writes its own file.
Result<std::string> plan_output(const Control& c, const Message& req) {
  const auto refuse = [](std::string text) { return Status::invalid(std::move(text)); };
  const std::string* output = req.get("output");
  const std::string* dir = req.get("output_dir");
  const std::string* gzip = req.get("gzip");
  if ((output != nullptr) == (dir != nullptr)) return refuse("give output or output_dir (an absolute path), not both");
  if (gzip != nullptr && (dir == nullptr || (*gzip != "0" && *gzip != "1"))) return refuse("gzip takes 0 or 1, with output_dir");
  if ((output != nullptr ? *output : *dir)[0] != '/')
    return refuse(std::string(output != nullptr ? "output" : "output_dir") + " must be an absolute path");
  if (output != nullptr) return *output;
  return collector::rank_file_path(*dir, c.rank.rank, getpid(), gzip != nullptr && *gzip == "1");
}

Result<StartPlan> plan_start(const Control& c, const Message& req) {
  const auto refuse = [](std::string text) { return Status::invalid(std::move(text)); };
  if (Status st = collector::check_keys(req, {"output", "output_dir", "gzip", "duration_ms", "iterations", "delay_ms",
                                              "pattern", "source", "kinds", "exclusive", "metrics", "kernels"});
      !st.is_ok())
    return st;
  for (const auto& [key, value] : req.fields)
    if (value.empty()) return refuse(key + " has no value");
  StartPlan p;
  if (Status st = read_bounded(req, "duration_ms", 1, collector::kMaxDurationMs, p.duration); !st.is_ok()) return st;
  if (Status st = read_bounded(req, "iterations", 1, collector::kMaxIterations, p.iterations); !st.is_ok()) return st;
  if (Status st = read_bounded(req, "delay_ms", 0, collector::kMaxDelayMs, p.delay); !st.is_ok()) return st;
  if (p.duration && p.iterations) return refuse("give duration_ms or iterations, not both");
  const std::string* source = req.get("source");
  const std::string* pattern = req.get("pattern");
  if (!p.iterations && (source != nullptr || pattern != nullptr)) return refuse("source and pattern go with iterations");
  if (const std::string* e = req.get("exclusive")) {
    if (*e != "0" && *e != "1") return refuse("exclusive takes 0 or 1");
    p.exclusive = *e == "1";
  }
  const Result<std::string> output = plan_output(c, req);
  if (!output.is_ok()) return output.status();
  // Room for the ".PID" another process of the job may add: any status reply fits one line.
  if (collector::encoded_size(output.value()) + 16 > collector::kMaxOutputBytes)
    return refuse("output path too long (at most " + std::to_string(collector::kMaxOutputBytes - 16) +
                  " bytes, %-escaped)");
  p.output = output.value();
  if (p.iterations) {
    if (source == nullptr || *source == "nvtx") {
      if (!c.nvtx_injected)
        return refuse("NVTX ranges do not reach the agent: start the job with NVTX_INJECTION64_PATH set (strata record does)");
      p.trigger = Trigger::Nvtx;
    } else if (*source == "profiler") {
      p.trigger = Trigger::ProfilerApi;
    } else {
      return refuse("source must be nvtx or profiler");
    }
    p.pattern = pattern != nullptr ? *pattern : "*iteration*";
    if (p.pattern.size() > kMaxPatternBytes) return refuse("pattern longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  }
  if (const std::string* k = req.get("kinds")) {
    const Result<uint32_t> mask = collector::parse_kinds(*k);
    if (!mask.is_ok()) return mask.status();
    p.kinds = mask.value();
  }
  const std::string* kernels = req.get("kernels");
  if (const std::string* m = req.get("metrics")) {
    Result<std::vector<std::string>> names = collector::parse_metrics(*m);
    if (!names.is_ok()) return names.status();
    p.metrics = std::move(names.value());
    p.kernels = kernels != nullptr ? *kernels : "*";
    if (Status st = collector::check_kernel_glob(p.kernels); !st.is_ok()) return st;
  } else if (kernels != nullptr) {
    return refuse("kernels goes with metrics");
  }
  return p;
}

Message handle_start(Control& c, const Message& req) {
  if (c.session) return error_reply("already recording (state " + std::string(state_name(shared().state.load())) + ")");
  const Result<StartPlan> plan = plan_start(c, req);
  if (!plan.is_ok()) return error_reply(plan.status().message());
  // The file first, CUPTI last: a refused start leaves CUPTI as it was (released stays released).
  auto s = std::make_unique<Session>();
  s->output = plan->output;
  struct stat st {};
  const bool existed = ::lstat(s->output.c_str(), &st) == 0;  // a refused start removes only its own file
  if (!s->sink.open(s->output, plan->exclusive)) {
    if (!plan->exclusive || s->sink.error_number() != EEXIST) return error_reply(s->sink.status().message());
    s->output = alternative_name(plan->output);  // another process of the job took the name
    if (!s->sink.open(s->output, true)) return error_reply(s->sink.status().message());
  }
  std::string refused, metrics_off;
  const bool was_released = std::strcmp(cupti_attachment(), "attached") != 0;
  if ((plan->trigger != Trigger::None && !publish_pattern(c, plan->pattern, shared().pattern)) ||
      (!plan->metrics.empty() && !publish_pattern(c, plan->kernels, shared().kernel_glob)))
    refused = "too many distinct patterns in one job (" + std::to_string(kMaxPatterns) + ")";
  else if (const Status acquired = cupti_acquire(); !acquired.is_ok())
    refused = acquired.message();
  if (refused.empty() && !plan->metrics.empty()) {
    // Inside cuInit (STRATA_RECORD) the driver cannot name its chip yet: the config image waits
    // for the first profiled launch.
    const bool in_cuinit = !c.thread_started.load();
    switch (metrics_prepare(plan->metrics, in_cuinit, metrics_off)) {
      case MetricsSetup::Ready: s->metrics = plan->metrics; break;
      case MetricsSetup::BadRequest:
        refused = metrics_off;
        if (was_released) cupti_release();  // as it was before this start
        break;
      case MetricsSetup::Unavailable: break;  // recorded without metrics, noted below
    }
    s->kernels = plan->kernels;
  }
  if (!refused.empty()) {
    s->sink.close();
    if (!existed || s->output != plan->output) ::unlink(s->output.c_str());
    return error_reply(refused);
  }
  if (plan->iterations) shared().iterations_target.store(static_cast<uint32_t>(*plan->iterations));
  shared().kinds.store(plan->kinds);  // safe: nothing is recording or armed now
  s->duration_ms = plan->duration.value_or(0);
  s->trigger = plan->trigger;
  s->writer = std::make_unique<collector::ChromeTraceWriter>(s->sink);
  s->dropped_base = shared().cupti_dropped.load();
  s->start_at_ms = now_ms() + static_cast<int64_t>(plan->delay.value_or(0));
  Session& ref = *s;
  c.session = std::move(s);
  if (!plan->metrics.empty() && ref.metrics.empty()) note_metrics_off(ref, metrics_off);
  if (plan->delay.value_or(0) == 0) start_recording(ref);
  Message ok;
  ok.verb = "ok";
  ok.set("output", ref.output);
  return ok;
}

// Every value is bounded (collector::kMaxOutputBytes, kMaxTextBytes): the reply always fits
// the line a client reads.
Message status_reply(Control& c) {
  Message m;
  m.verb = "ok";
  const State st = shared().state.load();
  const bool waiting = c.session && st == State::Dormant;
  m.set("pid", std::to_string(getpid()));
  m.set("command", collector::fit_value(c.command));
  if (c.gpus.empty()) c.gpus = device_names(query_devices());
  m.set("gpu", collector::fit_value(c.gpus));
  if (c.rank.rank >= 0) m.set("rank", std::to_string(c.rank.rank));
  if (c.rank.world_size >= 0) m.set("world_size", std::to_string(c.rank.world_size));
  m.set("state", waiting ? "waiting" : state_name(st));
  m.set("nvtx", c.nvtx_injected ? "on" : "off");
  m.set("cupti", cupti_attachment());
  m.set("recordings", std::to_string(c.finished));
  m.set("buffers_refused", std::to_string(pool_exhausted()));  // pool empty: CUPTI dropped records
  if (c.session) {
    m.set("kinds", collector::kinds_text(shared().kinds.load()));
    m.set("output", c.session->output);
    m.set("records", std::to_string(c.session->stats.records));
    m.set("iterations_done", std::to_string(shared().iterations_done.load()));
    if (!c.session->kernels.empty()) {  // metrics were asked for
      m.set("metrics", c.session->metrics.empty() ? "failed" : metrics_state());
      m.set("metric_count", std::to_string(c.session->metrics.size()));
      m.set("kernels", c.session->kernels);
      m.set("profiled_kernels", std::to_string(metrics_profiled()));
      m.set("skipped_kernels", std::to_string(metrics_skipped()));
    }
  } else if (!c.last.output.empty()) {
    m.set("output", c.last.output);
    m.set("events", std::to_string(c.last.events));
    m.set("dropped", std::to_string(c.last.dropped));
    if (!c.last.status.is_ok()) m.set("error", collector::fit_value(c.last.status.message()));
  }
  return m;
}

Message dispatch(Control& c, const Message& req) {
  if (req.verb == "start") return handle_start(c, req);
  if (req.verb != "status" && req.verb != "stop" && req.verb != "detach")
    return error_reply("unknown command '" + req.verb + "' (status, start, stop, detach)");
  if (Status st = collector::check_keys(req, {}); !st.is_ok()) return error_reply(st.message());
  if (req.verb == "status") return status_reply(c);
  if (req.verb == "stop") {
    if (!c.session) return error_reply("not recording");
    finish(c);
    if (!c.last.status.is_ok()) return error_reply(c.last.status.message());
    return status_reply(c);
  }
  if (c.session) finish(c);  // detach
  cupti_detach(release_between_recordings());
  shared().state.store(State::Detached);
  Message m;
  m.verb = "ok";
  return m;
}

void tick(Control& c) {
  Session* s = c.session.get();
  if (s == nullptr) {
    drain(c);  // hand back stray buffers
    return;
  }
  const State st = shared().state.load();
  if (st == State::Dormant && now_ms() >= s->start_at_ms) start_recording(*s);
  // A file that can take no more (disk full, RLIMIT_FSIZE) ends the recording: the job stops
  // paying for records that would go nowhere.
  const bool stuck = !s->sink.status().is_ok();
  if (st == State::Recording && (stuck || (s->stop_at_ms != 0 && now_ms() >= s->stop_at_ms))) stop_recording();
  drain(c);
  if (shared().state.load() == State::Stopping) finish(c);
}

// How long the thread may sleep: until the next tick or timer while a session exists.
int wait_ms(const Control& c) {
  if (!c.session) return -1;
  const int64_t now = now_ms();
  int64_t wait = kTickMs;
  for (const int64_t at : {c.session->start_at_ms, c.session->stop_at_ms})
    if (at > now) wait = std::min(wait, at - now);
  return static_cast<int>(wait);
}

void run(Control& c) {
  const auto handle = [&c](const Message& req) { return dispatch(c, req); };
  while (!c.exit_requested.load() && shared().state.load() != State::Detached) {
    if (c.server.serve(shared().wake_fd, wait_ms(c), handle)) {
      uint64_t v = 0;
      [[maybe_unused]] ssize_t n = ::read(shared().wake_fd, &v, sizeof v);
    }
    if (c.exit_requested.load()) break;
    tick(c);
  }
  if (c.exit_requested.load()) {
    c.exiting = true;
    if (c.session) finish(c);
  }
  c.server.close();
  {
    std::lock_guard<std::mutex> lock(c.exit_mu);
    c.thread_done = true;
  }
  c.exit_cv.notify_all();
}

}  // namespace

const char* state_name(State s) {
  switch (s) {
    case State::Dormant: return "dormant";
    case State::Armed: return "armed";
    case State::Starting:
    case State::Recording: return "recording";
    case State::Disabling:
    case State::Stopping: return "stopping";
    case State::Detached: return "detached";
  }
  return "unknown";
}

Shared& shared() {
  static Shared* s = new Shared;
  return *s;
}

void wake_control() {
  const uint64_t one = 1;
  if (shared().wake_fd >= 0) [[maybe_unused]] ssize_t n = ::write(shared().wake_fd, &one, sizeof one);
}

void agent_log(const std::string& text) {
  const std::string line = "strata agent: " + text + "\n";
  // stderr may be a pipe nobody reads any more: keep its SIGPIPE from reaching the job.
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  bool broken = false;
  for (size_t at = 0; at < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + at, line.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken = n < 0 && errno == EPIPE;
      break;
    }
    at += static_cast<size_t>(n);
  }
  if (broken && !was_pending) {
    const timespec zero{};
    sigtimedwait(&pipe_only, nullptr, &zero);  // ours: take it back before unblocking
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

Status control_start(const char* record_request) {
  Control& c = control();
  c.command = read_cmdline();
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  c.nvtx_injected = nvtx != nullptr && *nvtx != '\0';
  c.rank = collector::job_rank(std::getenv);
  shared().wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (shared().wake_fd < 0) return Status(StatusCode::Internal, "cannot create an eventfd");
  const std::string dir = collector::socket_dir();
  Status listening = collector::ensure_private_dir(dir);
  if (listening.is_ok()) listening = c.server.listen(collector::agent_socket_path(dir, getpid()), getuid());
  if (!listening.is_ok()) agent_log("attach is unavailable: " + listening.message());
  // STRATA_RECORD: started here, on the job's thread inside cuInit, before the control thread
  // exists, so the recording covers the job's first CUDA calls.
  if (record_request != nullptr && *record_request != '\0') {
    const Result<Message> req = collector::decode_message(record_request);
    const Message reply = req.is_ok() ? handle_start(c, req.value()) : error_reply("bad STRATA_RECORD: " + req.status().message());
    if (collector::is_error(reply)) agent_log("not recording: " + collector::error_text(reply));
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread starts with every signal blocked
  Status started;
  try {
    std::thread t(run, std::ref(c));
    // Named before it runs, so that it is findable (`top -H`, /proc) from the moment it exists.
    pthread_setname_np(t.native_handle(), "strata-agent");
    t.detach();
    c.thread_started.store(true);
  } catch (const std::system_error& e) {  // never let an exception out into cuInit
    started = Status(StatusCode::Internal, std::string("cannot start the agent's thread: ") + e.what());
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!c.thread_started.load() && c.session) finish(c);  // what STRATA_RECORD started, closed now
  return started;
}

void control_at_exit() {
  Control& c = control();
  if (c.forked_child || !c.thread_started.load()) return;
  cupti_keep();
  c.exit_requested.store(true);
  wake_control();
  std::unique_lock<std::mutex> lock(c.exit_mu);
  if (!c.exit_cv.wait_for(lock, kExitWait, [&] { return c.thread_done; }))
    agent_log("the recording was not finished within " + std::to_string(kExitWait.count()) +
              " s of the job's exit; its file may be incomplete");
}

void control_after_fork_child() {
  Control& c = control();
  c.forked_child = true;  // no control thread here; leave the parent's socket alone
  c.server.forget();
}

}  // namespace strata::agent
