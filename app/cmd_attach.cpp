// `strata attach`: list jobs running with the agent, record from one, or trigger
// Kineto's own on-demand trace in a PyTorch job (--kineto).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/commands.h"
#include "client/agents.h"
#include "client/jobs.h"
#include "client/kineto_ipc.h"
#include "client/options.h"

namespace {

namespace sc = strata::collector;

std::atomic<bool> g_cancel{false};
void on_interrupt(int) { g_cancel.store(true); }

// "3/8", "3" without a world size, "-" without a rank.
std::string rank_text(const sc::AgentInfo& a) {
  if (a.rank < 0) return "-";
  return std::to_string(a.rank) + (a.world_size > 0 ? "/" + std::to_string(a.world_size) : "");
}

// list_agents, saying on stderr which agents did not answer (one line each).
std::vector<sc::AgentInfo> agents_answering(strata::Status& status) {
  std::vector<sc::AgentInfo> agents;
  status = sc::list_agents(agents);
  const std::string& error = status.message();
  for (size_t at = 0; at < error.size();) {
    const size_t end = error.find('\n', at);
    std::fprintf(stderr, "strata attach: %s\n", error.substr(at, end - at).c_str());
    at = end == std::string::npos ? error.size() : end + 1;
  }
  return agents;
}

int list() {
  strata::Status listed;
  const auto jobs = sc::group_jobs(agents_answering(listed));
  if (jobs.empty()) {
    if (listed.is_ok()) std::printf("no running jobs with the Strata agent (start one with `strata record --dormant -- CMD`)\n");
    else std::printf("no agent answered (the jobs named above may still be running)\n");
    return listed.is_ok() ? 0 : 1;
  }
  for (const auto& job : jobs) {
    std::printf("job %d: %s\n", job.launcher, job.command.empty() ? "?" : job.command.c_str());
    std::printf("  %-8s %-9s %-10s %-24s %s\n", "PID", "RANK", "STATE", "GPU", "COMMAND");
    for (const auto& a : job.agents)
      std::printf("  %-8d %-9s %-10s %-24s %s\n", a.pid, rank_text(a).c_str(), a.state.c_str(),
                  a.gpu.empty() ? "-" : a.gpu.c_str(), a.command.c_str());
    if (job.agents.size() > 1)
      std::printf("  record all %zu together: strata attach --job %d --duration S | --iterations N\n",
                  job.agents.size(), job.launcher);
  }
  return 0;
}

int simple_command(pid_t pid, const char* verb) {
  sc::Message m;
  m.verb = verb;
  const strata::Result<sc::Message> reply = sc::agent_request(pid, m, 120000);
  if (!reply.is_ok()) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, reply.status().message().c_str());
    return 1;
  }
  if (sc::is_error(reply.value())) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, sc::error_text(reply.value()).c_str());
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
  strata::Status ready = dir.create();
  if (ready.is_ok()) ready = daemon.bind("dynolog");
  if (!ready.is_ok()) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", ready.message().c_str());
    return 1;
  }
  const std::string request = dir.path() + "/trace.pt.trace.json";
  std::fprintf(stderr, "strata attach --kineto: waiting for pid %d to poll for a config...\n", pid);
  auto log = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  const std::string config = sc::kineto::trace_config(opt.duration_ms, opt.iterations, request);
  if (const strata::Status delivered = daemon.deliver(pid, config, timeout_ms, log); !delivered.is_ok()) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", delivered.message().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "strata attach --kineto: pid %d took the config; Kineto warms CUPTI up for %u s, then traces; "
               "waiting for its trace...\n",
               pid, sc::kineto::kKinetoWarmupSecs);
  const int window_ms = static_cast<int>(opt.iterations > 0 ? 500 : opt.duration_ms);
  const strata::Result<std::string> written = sc::kineto::wait_for_trace(
      sc::kineto::written_names(request, pid),
      timeout_ms + window_ms + static_cast<int>(sc::kineto::kKinetoWarmupSecs) * 1000);
  const strata::Status moved = written.is_ok() ? sc::kineto::move_trace(written.value(), opt.output) : written.status();
  if (!moved.is_ok()) {
    std::fprintf(stderr, "strata attach --kineto: %s\n", moved.message().c_str());
    return 1;
  }
  std::printf("%s\n", opt.output.c_str());
  return open ? open_in_viewer(opt.output) : 0;
}

int record_job(pid_t launcher, sc::RecordOptions opt, bool open) {
  strata::Status listed;
  const sc::JobInfo job = sc::job_under(launcher, agents_answering(listed));
  opt.output_dir = opt.output.empty() ? sc::timestamped_name("strata-job-" + std::to_string(launcher), "") : opt.output;
  opt.output.clear();
  std::vector<std::string> told;  // the state last printed for each agent
  auto progress = [&](const sc::MultiRecording& m) {
    told.resize(m.agents.size());
    for (size_t i = 0; i < m.agents.size(); ++i) {
      const sc::AgentRecording& a = m.agents[i];
      if (a.state.empty() || a.state == told[i] || a.done) continue;
      const std::string what = told[i].empty() ? "recording into " + a.output : a.state;
      std::fprintf(stderr, "strata attach: %s: %s\n", sc::agent_name(a).c_str(), what.c_str());
      told[i] = a.state;
    }
  };
  const strata::Result<sc::MultiRecording> m = sc::record_job(job, opt, &g_cancel, progress);
  if (!m.is_ok()) {
    std::fprintf(stderr, "strata attach: %s\n", m.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "strata attach: the %zu agent%s of job %d answered the start within %.1f ms\n",
               m->agents.size(), m->agents.size() == 1 ? "" : "s", launcher, m->start_window_ms);
  for (const sc::AgentRecording& a : m->agents) {
    const std::string what = a.status.is_ok() ? sc::describe(a.result) + " in " + a.output : a.status.message();
    std::fprintf(stderr, "strata attach: %s: %s\n", sc::agent_name(a).c_str(), what.c_str());
  }
  std::fprintf(stderr, "strata attach: %s\n", sc::open_job_hint(opt.output_dir).c_str());
  std::printf("%s\n", opt.output_dir.c_str());
  if (!m->finished()) return 1;
  return open ? open_in_viewer(opt.output_dir) : 0;
}

bool parse_pid(const char* text, pid_t& pid) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0) return false;
  pid = static_cast<pid_t>(v);
  return true;
}

struct AttachArgs {
  RecordingArgs recording;
  std::string pid, job, timeout;
  bool kineto = false, open = false, status = false, stop = false, detach = false;
};

int run_attach(const CLI::App& sub, const AttachArgs& args) {
  if (sub.count_all() == sub.count()) return list();  // `strata attach` alone: no PID, no option
  sc::RecordOptions opt;
  pid_t pid = 0;
  pid_t job = 0;
  uint64_t timeout_ms = 30000;
  std::string error;
  if (!args.pid.empty() && !parse_pid(args.pid.c_str(), pid)) return usage_error(sub, "unexpected argument " + args.pid);
  if (!args.job.empty() && !parse_pid(args.job.c_str(), job)) return usage_error(sub, "--job takes the pid of the job's launcher");
  if (!args.timeout.empty() && (!sc::parse_seconds(args.timeout, timeout_ms) || timeout_ms > 86400000))
    return usage_error(sub, "--timeout takes seconds (at most a day)");
  if (!apply_recording_options(args.recording, opt, error)) return usage_error(sub, error);
  const char* verb = args.status ? "status" : args.stop ? "stop" : args.detach ? "detach" : nullptr;
  const bool use_kineto = args.kineto, open = args.open;
  if ((pid == 0) == (job == 0) || (job != 0 && (use_kineto || verb != nullptr)))
    return usage_error(sub, "give one PID, or --job PID (`strata attach` lists them)");
  if (use_kineto && !opt.metrics.empty())
    return usage_error(sub, "--metrics is the Strata agent's (Kineto's own range profiler is not driven from here)");
  if (use_kineto) return kineto(pid, opt, static_cast<int>(timeout_ms), open);
  if (verb != nullptr) return simple_command(pid, verb);
  if (opt.duration_ms == 0 && opt.iterations == 0) opt.duration_ms = 2000;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, nullptr);
  if (job != 0) return record_job(job, opt, open);
  if (opt.output.empty()) opt.output = sc::timestamped_name("strata", ".pt.trace.json");
  if (opt.gzip && !opt.output.ends_with(".gz")) opt.output += ".gz";
  auto progress = [](const std::string& line) { std::fprintf(stderr, "strata attach: %s\n", line.c_str()); };
  const strata::Result<sc::RecordResult> result = sc::record_from_agent(pid, opt, &g_cancel, progress);
  if (!result.is_ok()) {
    std::fprintf(stderr, "strata attach: pid %d: %s\n", pid, result.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "strata attach: %s\n", sc::describe(result.value()).c_str());
  std::printf("%s\n", result->output.c_str());
  return open ? open_in_viewer(result->output) : 0;
}

}  // namespace

Command add_attach(CLI::App& strata) {
  auto args = std::make_shared<AttachArgs>();
  CLI::App* sub = add_subcommand(
      strata, "attach",
      "list jobs running with the agent, record from one (--job: all its\n"
      "ranks; --kineto: a PyTorch job with KINETO_USE_DAEMON=1)",
      "strata attach                        list jobs running with the agent, each agent with its rank\n"
      "strata attach PID [--duration S | --iterations N] [--delay S] [--pattern GLOB]\n"
      "                  [--profiler-range] [--kinds LIST] [--metrics LIST [--kernels GLOB]] [-o FILE]\n"
      "                  [--gzip] [--open]\n"
      "strata attach --job PID [...the same] [-o DIR]\n"
      "strata attach PID --status | --stop | --detach\n"
      "strata attach --kineto PID [--duration S | --iterations N] [-o FILE] [--timeout S] [--open]");
  sub->add_option("PID", args->pid, "the process to record from (started with `strata record --dormant`)")
      ->type_name("");
  sub->add_option("--job", args->job,
                  "record every agent that is PID or under it (a launcher: torchrun,\n"
                  "mpirun, a shell) together into DIR/rank-R.pt.trace.json (-o DIR;\n"
                  "default ./strata-job-PID-YYYYmmdd-HHMMSS/)")
      ->type_name("PID");
  add_recording_options(*sub, args->recording);
  sub->add_flag("--open", args->open, "open the trace (a job: its directory) in the viewer when it is written");
  CLI::Option* status = sub->add_flag("--status", args->status, "the agent's state and counters");
  CLI::Option* stop = sub->add_flag("--stop", args->stop, "stop the recording in progress")->excludes(status);
  sub->add_flag("--detach", args->detach, "end any recording and detach the agent from CUPTI (the job runs on)")->excludes(status)->excludes(stop);
  sub->add_flag("--kineto", args->kineto,
                "ask a PyTorch job started with KINETO_USE_DAEMON=1 (and\n"
                "ENABLE_IPC_FABRIC=true in its Kineto config) for a Kineto trace,\n"
                "speaking dynolog's ipcfabric protocol");
  sub->add_option("--timeout", args->timeout, "--kineto: how long to wait for the job to poll (default 30)")->type_name("S");
  sub->footer(
      "Records from a job started with `strata record --dormant` (default: 2 seconds; Ctrl-C stops early).\n"
      "With --job and --iterations each rank starts at its own next iteration, so ranks in lockstep record\n"
      "the same iterations (collector/README.md). --metrics LIST [--kernels GLOB] adds hardware counters of\n"
      "the kernels matching GLOB (CUPTI's range profiler; each profiled kernel is serialized and replayed\n"
      "once per pass), as `strata record` does.");
  return {sub, [sub, args] { return run_attach(*sub, *args); }};
}

int cmd_attach(int argc, char** argv) { return run_one_command(add_attach, argc, argv); }
