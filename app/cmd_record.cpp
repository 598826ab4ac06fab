// `strata record`: launch a job with the CUPTI agent loaded and record it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "app/cli.h"
#include "app/commands.h"
#include "client/jobs.h"
#include "client/launch.h"
#include "client/options.h"
#include "protocol/message.h"

namespace {

void ignore_signal(int) {}  // the job gets Ctrl-C; we stay to report where the trace is

// Where the job's traces went, or why there are none; false when none was written.
bool report(const strata::collector::RecordOptions& opt) {
  if (opt.output_dir.empty()) {
    struct stat st {};
    if (::stat(opt.output.c_str(), &st) != 0) {
      std::fprintf(stderr, "strata record: no trace was written: the job never initialized CUDA, or the agent "
                           "reported why above\n");
      return false;
    }
    std::fprintf(stderr, "strata record: trace written to %s (%lld KiB)\n", opt.output.c_str(),
                 static_cast<long long>(st.st_size / 1024));
    return true;
  }
  const auto files = strata::collector::rank_files(opt.output_dir);
  if (files.empty()) {
    std::fprintf(stderr, "strata record: no trace was written to %s: no process of the job initialized CUDA, or the "
                         "agent reported why above\n", opt.output_dir.c_str());
    return false;
  }
  long long bytes = 0;
  for (const std::string& f : files)
    if (struct stat st {}; ::stat((opt.output_dir + "/" + f).c_str(), &st) == 0) bytes += st.st_size;
  const std::string names = files.size() == 1 ? files[0] : files.front() + " ... " + files.back();
  std::fprintf(stderr, "strata record: %zu trace%s written to %s (%s, %lld KiB)\n", files.size(),
               files.size() == 1 ? "" : "s", opt.output_dir.c_str(), names.c_str(), bytes / 1024);
  std::fprintf(stderr, "strata record: %s\n", strata::collector::open_job_hint(opt.output_dir).c_str());
  return true;
}

struct RecordArgs {
  RecordingArgs recording;
  bool dormant = false;
  std::vector<std::string> program;  // after "--"
};

int run_record(const CLI::App& sub, const RecordArgs& args) {
  strata::collector::RecordOptions opt;
  if (std::string why; !apply_recording_options(args.recording, opt, why)) return usage_error(sub, why);
  const bool dormant = args.dormant;
  // Without "--", the command is what the parser left from its first word on.
  const std::vector<std::string> rest = sub.remaining();
  if (!rest.empty() && !rest.front().empty() && rest.front()[0] == '-') return usage_error(sub, "unknown option " + rest.front());
  std::vector<std::string> command = rest;
  if (!rest.empty() && !args.program.empty()) command.push_back("--");  // the command's own "--" (it began before)
  command.insert(command.end(), args.program.begin(), args.program.end());
  if (command.empty()) return usage_error(sub, "no command given (strata record [OPTIONS] -- CMD ARGS...)");
  const strata::Result<std::string> agent = strata::collector::find_agent();
  if (!agent.is_ok()) {
    std::fprintf(stderr, "strata record: %s\n", agent.status().message().c_str());
    return 1;
  }
  std::string request;
  if (!dormant) {
    if (opt.output.empty()) opt.output = strata::collector::timestamped_name("strata", ".pt.trace.json");
    if (strata::collector::names_directory(opt.output)) {
      opt.output_dir = std::exchange(opt.output, "");
      const strata::Result<int> prepared = strata::collector::prepare_job_dir(opt.output_dir);
      if (!prepared.is_ok()) {
        std::fprintf(stderr, "strata record: %s\n", prepared.status().message().c_str());
        return 1;
      }
      const int removed = prepared.value();
      if (removed > 0)
        std::fprintf(stderr, "strata record: removed %d trace%s of an earlier recording from %s\n", removed,
                     removed == 1 ? "" : "s", opt.output_dir.c_str());
    } else {
      if (opt.gzip && !opt.output.ends_with(".gz")) opt.output += ".gz";
      ::unlink(opt.output.c_str());  // the job's first process claims the name exclusively
    }
    auto msg = strata::collector::start_request(opt);
    msg.set("exclusive", "1");
    request = strata::collector::encode_message(msg);
    request.pop_back();  // no newline in an environment variable
  }
  const strata::Result<pid_t> launched = strata::collector::launch_with_agent(command, agent.value(), request);
  if (!launched.is_ok()) {
    std::fprintf(stderr, "strata record: %s\n", launched.status().message().c_str());
    return 1;
  }
  const pid_t pid = launched.value();
  struct sigaction sa {};
  sa.sa_handler = ignore_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (dormant)
    std::fprintf(stderr, "strata record: pid %d runs with the agent dormant; record with `strata attach %d --duration S`\n",
                 pid, pid);
  const int status = strata::collector::wait_child(pid);
  if (!dormant && !report(opt)) return 1;
  return status;
}

}  // namespace

// Applies them one by one as the collector parses them (the same checks, the same messages).
bool apply_recording_options(const RecordingArgs& a, strata::collector::RecordOptions& opt, std::string& error) {
  OptionWords w;
  w.value("--duration", a.duration);
  w.value("--iterations", a.iterations);
  w.value("--delay", a.delay);
  w.value("--pattern", a.pattern);
  w.value("--kinds", a.kinds);
  w.value("--metrics", a.metrics);
  w.value("--kernels", a.kernels);
  w.value("-o", a.output);
  w.flag("--profiler-range", a.profiler_range);
  w.flag("--gzip", a.gzip);
  std::vector<char*> argv = w.argv();
  const int argc = static_cast<int>(argv.size());
  for (int i = 0; i < argc; ++i) {
    const strata::Result<bool> parsed = strata::collector::parse_record_option(argc, argv.data(), i, opt);
    if (!parsed.is_ok()) error = parsed.status().message();
    if (!parsed.is_ok() || !parsed.value()) return false;
  }
  const strata::Status together = strata::collector::check_record_options(opt);
  error = together.message();
  return together.is_ok();
}

void add_recording_options(CLI::App& sub, RecordingArgs& a) {
  CLI::Option* duration =
      sub.add_option("--duration", a.duration, "record S seconds (after --delay)")->type_name("S");
  sub.add_option("--iterations", a.iterations,
                 "record N iterations, counted from NVTX ranges matching --pattern\n"
                 "(default *iteration*), or cudaProfilerStart/Stop (--profiler-range)")
      ->type_name("N")
      ->excludes(duration);
  sub.add_option("--delay", a.delay, "wait S seconds before recording")->type_name("S");
  sub.add_option("--pattern", a.pattern, "the NVTX ranges that are iterations (default *iteration*)")->type_name("GLOB");
  sub.add_flag("--profiler-range", a.profiler_range, "iterations are cudaProfilerStart/Stop ranges");
  sub.add_option("--kinds", a.kinds,
                 "what to record (default: all): kernel, memcpy, memset, runtime-all\n"
                 "(runtime APIs but noisy queries), runtime (launches, copies, syncs,\n"
                 "allocations only), driver, sync, nvtx, overhead, external; or edits\n"
                 "of the default: -sync,-nvtx")
      ->type_name("LIST");
  sub.add_option("--metrics", a.metrics,
                 "hardware counters per kernel (CUPTI range profiler; comma-separated\n"
                 "metric names, e.g. smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,\n"
                 "gpu__time_duration.sum): each profiled kernel is serialized and\n"
                 "replayed once per pass -- slow")
      ->type_name("LIST");
  sub.add_option("--kernels", a.kernels, "which kernels --metrics profiles, by name (default: *)")->type_name("GLOB");
  sub.add_option("-o", a.output,
                 "the trace (FILE.gz: gzipped); a directory (one that exists, or a\n"
                 "name ending in /): each process of a job writes DIR/rank-R.pt.trace.json")
      ->type_name("FILE|DIR/");
  sub.add_flag("--gzip", a.gzip, "write .json.gz");
}

Command add_record(CLI::App& strata) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = add_subcommand(
      strata, "record",
      "record a CUDA job with Strata's CUPTI agent (collector/README.md);\n"
      "--metrics LIST: hardware counters (FLOPs) per kernel",
      "strata record [--duration S | --iterations N] [--delay S] [--pattern GLOB] [--profiler-range]\n"
      "              [--kinds LIST] [--metrics LIST [--kernels GLOB]] [-o FILE | -o DIR/] [--gzip]\n"
      "              -- CMD ARGS...\n"
      "strata record --dormant -- CMD ARGS...");
  add_recording_options(*sub, args->recording);
  sub->add_flag("--dormant", args->dormant, "load the agent idle; record later with `strata attach PID`");
  sub->prefix_command();  // "--" is optional: the command's first word ends strata's options
  sub->footer(
      "Runs CMD with Strata's CUPTI agent and writes a Kineto-compatible trace. With -o DIR/, each\n"
      "process of a distributed job (torchrun, mpirun, srun) writes DIR/rank-R.pt.trace.json, R from its\n"
      "RANK (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, LOCAL_RANK; pid-P without one); open them\n"
      "as one job with `strata DIR`. Without --duration or --iterations it records until the job exits.\n"
      "Exits 1 when no trace was written, else with the job's exit status; 2 on a bad command line.");
  return {sub, [sub, args] { return run_record(*sub, *args); }, &args->program};
}

int cmd_record(int argc, char** argv) { return run_one_command(add_record, argc, argv); }
