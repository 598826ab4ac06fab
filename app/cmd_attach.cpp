// `strata attach`: list jobs running with the agent, record from one, or trigger
// Kineto's own on-demand trace in a PyTorch job (--kineto).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/commands.h"
#include "client/agents.h"
#include "client/kineto_ipc.h"
#include "client/options.h"

namespace {

namespace sc = strata::collector;

std::atomic<bool> g_cancel{false};
void on_interrupt(int) { g_cancel.store(true); }

void usage(FILE* out) {
  std::fputs(
      "usage: strata attach                        list jobs running with the agent\n"
      "       strata attach PID [--duration S | --iterations N] [--delay S] [--pattern GLOB]\n"
      "                         [--profiler-range] [--kinds LIST] [-o FILE] [--open]\n"
      "       strata attach PID --status | --stop | --detach\n"
      "       strata attach --kineto PID [--duration S | --iterations N] [-o FILE] [--timeout S] [--open]\n"
      "Records from a job started with `strata record --dormant` (default: 2 seconds; Ctrl-C stops early).\n"
      "--kineto asks a PyTorch job started with KINETO_USE_DAEMON=1 (and ENABLE_IPC_FABRIC=true in its Kineto\n"
      "config) to write a Kineto trace, speaking dynolog's ipcfabric protocol.\n"
      "--open opens the trace in the viewer when it is written.\n",
      out);
}

int list() {
  std::string error;
  const auto agents = sc::list_agents(&error);
  for (size_t at = 0; at < error.size();) {  // one line per agent that did not answer
    const size_t end = error.find('\n', at);
    std::fprintf(stderr, "strata attach: %s\n", error.substr(at, end - at).c_str());
    at = end == std::string::npos ? error.size() : end + 1;
  }
  if (agents.empty()) {
    if (error.empty()) std::printf("no running jobs with the Strata agent (start one with `strata record --dormant -- CMD`)\n");
    else std::printf("no agent answered (the jobs named above may still be running)\n");
    return error.empty() ? 0 : 1;
  }
  std::printf("%-8s %-10s %-24s %s\n", "PID", "STATE", "GPU", "COMMAND");
  for (const auto& a : agents)
    std::printf("%-8d %-10s %-24s %s\n", a.pid, a.state.c_str(), a.gpu.empty() ? "-" : a.gpu.c_str(), a.command.c_str());
  return 0;
}

int simple_command(pid_t pid, const char* verb) {
  sc::Message m;
  m.verb = verb;
  std::string error;
  auto reply = sc::agent_request(pid, m, 120000, &error);
  if (!reply) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, error.c_str());
    return 1;
  }
  if (sc::is_error(*reply)) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, sc::error_text(*reply).c_str());
    return 1;
  }
  for (const auto& [k, v] : reply->fields) std::printf("%s: %s\n", k.c_str(), v.c_str());  // printable (agent_request)
  return 0;
}

int open_in_viewer(const std::string& path) {
  std::fflush(nullptr);
  ::execl("/proc/self/exe", "strata", path.c_str(), static_cast<char*>(nullptr));
  std::perror("strata attach: cannot start the viewer");
  return 1;
}

int kineto(pid_t pid, sc::RecordOptions opt, int timeout_ms, bool open) {
  if (opt.output.empty()) opt.output = sc::absolute_path("kineto-" + std::to_string(pid) + ".pt.trace.json");
  if (opt.duration_ms == 0 && opt.iterations == 0) opt.duration_ms = 2000;
  sc::kineto::TraceDir dir;  // private: nobody else can plant or swap the trace there
  sc::kineto::Daemon daemon;
  std::string error;
  if (!dir.create(&error) || !daemon.bind("dynolog", &error)) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", error.c_str());
    return 1;
  }
  const std::string request = dir.path() + "/trace.pt.trace.json";
  std::fprintf(stderr, "strata attach --kineto: waiting for pid %d to poll for a config...\n", pid);
  auto log = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  const std::string config = sc::kineto::trace_config(opt.duration_ms, opt.iterations, request);
  if (!daemon.deliver(pid, config, timeout_ms, log, &error)) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "strata attach --kineto: pid %d took the config; Kineto warms CUPTI up for %u s, then traces; "
               "waiting for its trace...\n",
               pid, sc::kineto::kKinetoWarmupSecs);
  const int window_ms = static_cast<int>(opt.iterations > 0 ? 500 : opt.duration_ms);
  const std::string written = sc::kineto::wait_for_trace(
      sc::kineto::written_names(request, pid),
      timeout_ms + window_ms + static_cast<int>(sc::kineto::kKinetoWarmupSecs) * 1000, &error);
  if (written.empty() || !sc::kineto::move_trace(written, opt.output, &error)) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s\n", opt.output.c_str());
  return open ? open_in_viewer(opt.output) : 0;
}

bool parse_pid(const char* text, pid_t& pid) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0) return false;
  pid = static_cast<pid_t>(v);
  return true;
}

}  // namespace

int cmd_attach(int argc, char** argv) {
  if (argc < 2) return list();
  sc::RecordOptions opt;
  pid_t pid = 0;
  bool use_kineto = false;
  bool open = false;
  const char* verb = nullptr;
  uint64_t timeout_ms = 30000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string error;
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--kineto") {
      use_kineto = true;
    } else if (a == "--open") {
      open = true;
    } else if (a == "--status" || a == "--stop" || a == "--detach") {
      verb = argv[i] + 2;
    } else if (a == "--timeout") {
      if (i + 1 >= argc || !sc::parse_seconds(argv[++i], timeout_ms) || timeout_ms > 86400000)
        error = "--timeout takes seconds (at most a day)";
    } else if (sc::parse_record_option(argc, argv, i, opt, error)) {
    } else if (pid == 0 && parse_pid(argv[i], pid)) {
    } else {
      error = "unexpected argument " + a;
    }
    if (!error.empty()) {
      std::fprintf(stderr, "strata attach: %s\n", error.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (pid == 0) {
    std::fputs("strata attach: which PID? (`strata attach` lists them)\n", stderr);
    return 2;
  }
  if (use_kineto) return kineto(pid, opt, static_cast<int>(timeout_ms), open);
  if (verb != nullptr) return simple_command(pid, verb);
  if (opt.output.empty()) opt.output = sc::default_output_name();
  if (opt.duration_ms == 0 && opt.iterations == 0) opt.duration_ms = 2000;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  std::string error;
  auto progress = [](const std::string& line) { std::fprintf(stderr, "strata attach: %s\n", line.c_str()); };
  auto result = sc::record_from_agent(pid, opt, &g_cancel, progress, &error);
  if (!result) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, error.c_str());
    return 1;
  }
  std::fprintf(stderr, "strata attach: %s\n", sc::describe(*result).c_str());
  std::printf("%s\n", result->output.c_str());
  return open ? open_in_viewer(result->output) : 0;
}
