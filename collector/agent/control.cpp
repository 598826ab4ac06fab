// The agent's one thread: it sleeps in poll() while dormant, serves control requests,
// and while recording turns completed CUPTI buffers into trace lines. All session
// state is guarded by one mutex that only this thread and the exit handler take;
// CUPTI callbacks reach this thread through atomics and an eventfd, never the mutex.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "../protocol/control_socket.h"
#include "../trace/chrome_writer.h"
#include "agent.h"

namespace strata::agent {

namespace {

using collector::Message;

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
};

struct LastResult {
  std::string output;
  std::string error;
  uint64_t events = 0;
  uint64_t dropped = 0;
};

struct Control {
  std::mutex mu;
  collector::ControlListener listener;
  std::unique_ptr<Session> session;
  LastResult last;
  uint64_t finished = 0;
  std::string command;
  std::string gpus;
  std::atomic<bool> active{false};  // a session exists; lets poll() sleep without the lock
  bool forked_child = false;
  bool exiting = false;
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
  s.writer->begin(h);
  s.begun = true;
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
    set_trigger_callbacks(s.trigger, true);
    return;
  }
  sh.state.store(State::Starting);
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
  activities_flush();
  drain(c);
  collect_dropped();
  begin_trace(c, s);
  s.stats.dropped = shared().cupti_dropped.load() - s.dropped_base;
  s.writer->finish(s.stats);
  c.last = LastResult{s.output, "", s.writer->events_written(), s.stats.dropped};
  if (!s.sink.close()) c.last.error = s.sink.error();
  if (!c.last.error.empty()) std::fprintf(stderr, "strata agent: %s\n", c.last.error.c_str());
  c.session.reset();
  c.active.store(false);
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

Message handle_start(Control& c, const Message& req) {
  if (c.session) return collector::error_reply("already recording (state " + std::string(state_name(shared().state.load())) + ")");
  bool bad = false;
  const auto duration = collector::get_uint(req, "duration_ms", &bad);
  const auto iterations = collector::get_uint(req, "iterations", &bad);
  const auto delay = collector::get_uint(req, "delay_ms", &bad);
  if (bad) return collector::error_reply("duration_ms, iterations and delay_ms take whole numbers");
  if (duration && iterations) return collector::error_reply("give duration_ms or iterations, not both");
  const std::string* output = req.get("output");
  if (output == nullptr || output->empty() || (*output)[0] != '/') return collector::error_reply("output must be an absolute path");
  auto s = std::make_unique<Session>();
  s->duration_ms = duration.value_or(0);
  if (iterations) {
    if (*iterations == 0 || *iterations > 1000000) return collector::error_reply("iterations must be 1..1000000");
    const std::string* source = req.get("source");
    if (source == nullptr || *source == "nvtx") {
      const char* inj = std::getenv("NVTX_INJECTION64_PATH");
      if (inj == nullptr || *inj == '\0')
        return collector::error_reply("NVTX ranges do not reach the agent: start the job with NVTX_INJECTION64_PATH set (strata record does)");
      s->trigger = Trigger::Nvtx;
    } else if (*source == "profiler") {
      s->trigger = Trigger::ProfilerApi;
    } else {
      return collector::error_reply("source must be nvtx or profiler");
    }
    const std::string* pattern = req.get("pattern");
    const std::string pat = pattern != nullptr && !pattern->empty() ? *pattern : "*iteration*";
    if (pat.size() >= sizeof shared().pattern) return collector::error_reply("pattern too long");
    std::memcpy(shared().pattern, pat.c_str(), pat.size() + 1);  // safe: no trigger is armed now
    shared().iterations_target.store(static_cast<uint32_t>(*iterations));
  }
  uint32_t kinds = collector::kDefaultKinds;
  if (const std::string* k = req.get("kinds"); k != nullptr && !k->empty()) {
    std::string why;
    const auto mask = collector::parse_kinds(*k, &why);
    if (!mask) return collector::error_reply(why);
    kinds = *mask;
  }
  if (std::string why; !cupti_acquire(&why)) return collector::error_reply(why);
  shared().kinds.store(kinds);  // safe: nothing is recording or armed now
  const bool exclusive = req.get("exclusive") != nullptr && *req.get("exclusive") == "1";
  s->output = *output;
  if (!s->sink.open(s->output, exclusive)) {
    if (!exclusive || s->sink.error_number() != EEXIST) return collector::error_reply(s->sink.error());
    s->output = alternative_name(*output);  // another process of the job took the name
    if (!s->sink.open(s->output, true)) return collector::error_reply(s->sink.error());
  }
  s->writer = std::make_unique<collector::ChromeTraceWriter>(s->sink);
  s->dropped_base = shared().cupti_dropped.load();
  s->start_at_ms = now_ms() + static_cast<int64_t>(delay.value_or(0));
  Session& ref = *s;
  c.session = std::move(s);
  c.active.store(true);
  if (!delay || *delay == 0) start_recording(ref);
  Message ok;
  ok.verb = "ok";
  ok.set("output", ref.output);
  return ok;
}

Message status_reply(Control& c) {
  Message m;
  m.verb = "ok";
  const State st = shared().state.load();
  const bool waiting = c.session && st == State::Dormant;
  m.set("pid", std::to_string(getpid()));
  m.set("command", c.command);
  if (c.gpus.empty()) c.gpus = device_names(query_devices());
  m.set("gpu", c.gpus);
  m.set("state", waiting ? "waiting" : state_name(st));
  m.set("nvtx", std::getenv("NVTX_INJECTION64_PATH") != nullptr ? "on" : "off");
  m.set("cupti", cupti_attachment());
  m.set("recordings", std::to_string(c.finished));
  m.set("buffers_refused", std::to_string(pool_exhausted()));  // pool empty: CUPTI dropped records
  if (c.session) {
    m.set("kinds", collector::kinds_text(shared().kinds.load()));
    m.set("output", c.session->output);
    m.set("records", std::to_string(c.session->stats.records));
    m.set("iterations_done", std::to_string(shared().iterations_done.load()));
  } else if (!c.last.output.empty()) {
    m.set("output", c.last.output);
    m.set("events", std::to_string(c.last.events));
    m.set("dropped", std::to_string(c.last.dropped));
    if (!c.last.error.empty()) m.set("error", c.last.error);
  }
  return m;
}

Message dispatch(Control& c, const Message& req) {
  if (req.verb == "status") return status_reply(c);
  if (req.verb == "start") return handle_start(c, req);
  if (req.verb == "stop") {
    if (!c.session) return collector::error_reply("not recording");
    finish(c);
    Message m = status_reply(c);
    if (!c.last.error.empty()) return collector::error_reply(c.last.error);
    return m;
  }
  if (req.verb == "detach") {
    if (c.session) finish(c);
    cupti_detach(release_between_recordings());
    shared().state.store(State::Detached);
    Message m;
    m.verb = "ok";
    return m;
  }
  return collector::error_reply("unknown command '" + req.verb + "' (status, start, stop, detach)");
}

void serve_one(Control& c) {
  std::string error;
  const int fd = c.listener.accept_peer(&error);
  if (fd < 0) return;
  if (auto line = collector::read_line(fd, 1000, &error)) {
    if (auto req = collector::decode_message(*line, &error)) collector::send_reply(fd, dispatch(c, *req));
    else collector::send_reply(fd, collector::error_reply("bad request: " + error));
  } else {
    collector::send_reply(fd, collector::error_reply("bad request: " + error));
  }
  ::close(fd);
}

void tick(Control& c) {
  Session* s = c.session.get();
  if (s == nullptr) {
    drain(c);  // hand back stray buffers
    return;
  }
  const State st = shared().state.load();
  if (st == State::Dormant && now_ms() >= s->start_at_ms) start_recording(*s);
  if (st == State::Recording && s->stop_at_ms != 0 && now_ms() >= s->stop_at_ms) stop_recording();
  drain(c);
  if (shared().state.load() == State::Stopping) finish(c);
}

void run(Control& c) {
  for (;;) {
    const bool busy = c.active.load();
    pollfd fds[2] = {{c.listener.fd(), POLLIN, 0}, {shared().wake_fd, POLLIN, 0}};
    ::poll(fds, 2, busy ? 100 : -1);
    if (fds[1].revents & POLLIN) {
      uint64_t v = 0;
      [[maybe_unused]] ssize_t n = ::read(shared().wake_fd, &v, sizeof v);
    }
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.exiting || shared().state.load() == State::Detached) break;
    if (fds[0].revents & POLLIN) serve_one(c);
    tick(c);
    if (shared().state.load() == State::Detached) break;
  }
  if (!c.exiting) c.listener.close();
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

bool control_start(std::string* error) {
  Control& c = control();
  c.command = read_cmdline();
  shared().wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (shared().wake_fd < 0) {
    *error = "cannot create an eventfd";
    return false;
  }
  const std::string dir = collector::socket_dir();
  std::string listen_error;
  if (!collector::ensure_private_dir(dir, &listen_error) ||
      !c.listener.listen(collector::agent_socket_path(dir, getpid()), getuid(), &listen_error))
    std::fprintf(stderr, "strata agent: attach is unavailable: %s\n", listen_error.c_str());
  std::thread(run, std::ref(c)).detach();
  return true;
}

void control_autostart(const std::string& request_line) {
  Control& c = control();
  std::string error;
  auto req = collector::decode_message(request_line, &error);
  std::lock_guard<std::mutex> lock(c.mu);
  const Message reply = req ? handle_start(c, *req) : collector::error_reply("bad STRATA_RECORD: " + error);
  if (collector::is_error(reply))
    std::fprintf(stderr, "strata agent: not recording: %s\n", collector::error_text(reply).c_str());
}

void control_at_exit() {
  Control& c = control();
  if (c.forked_child) return;
  std::lock_guard<std::mutex> lock(c.mu);
  c.exiting = true;
  cupti_keep();
  if (c.session) finish(c);
  c.listener.close();
}

void control_after_fork_child() {
  Control& c = control();
  c.forked_child = true;  // no control thread here; leave the parent's socket alone
  c.listener.forget();
}

}  // namespace strata::agent
