// `strata record`: launch a job with the CUPTI agent loaded and record it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "app/commands.h"
#include "client/jobs.h"
#include "client/launch.h"
#include "client/options.h"
#include "protocol/message.h"

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: strata record [--duration S | --iterations N] [--delay S] [--pattern GLOB] [--profiler-range]\n"
      "                     [--kinds LIST] [--metrics LIST [--kernels GLOB]] [-o FILE | -o DIR/] [--gzip]\n"
      "                     -- CMD ARGS...\n"
      "       strata record --dormant -- CMD ARGS...\n"
      "Runs CMD with Strata's CUPTI agent and writes a Kineto-compatible trace (FILE.gz: gzipped).\n"
      "  -o DIR/           a directory (one that exists, or a name ending in /): every process of a\n"
      "                    distributed job (torchrun, mpirun, srun) writes DIR/rank-R.pt.trace.json,\n"
      "                    R from its RANK (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, LOCAL_RANK;\n"
      "                    pid-P without one); open them as one job with `strata DIR`\n"
      "  --gzip            write .json.gz\n"
      "  --duration S      record S seconds from the first CUDA call (after --delay)\n"
      "  --iterations N    record N iterations, counted from NVTX ranges matching --pattern\n"
      "                    (default *iteration*), or from cudaProfilerStart/Stop with --profiler-range\n"
      "  --kinds LIST      what to record (default: all): kernel, memcpy, memset, runtime-all (runtime\n"
      "                    APIs but noisy queries), runtime (launches/copies/syncs/allocations only),\n"
      "                    driver, sync, nvtx, overhead, external; or edits of the default: -sync,-nvtx\n"
      "  --metrics LIST    hardware counters per kernel (CUPTI range profiler, comma-separated metric\n"
      "                    names, e.g. smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,gpu__time_duration.sum):\n"
      "                    each profiled kernel is serialized and replayed once per pass -- slow\n"
      "  --kernels GLOB    which kernels --metrics profiles, by name (default: *)\n"
      "  --dormant         load the agent idle; record later with `strata attach PID`\n"
      "Without --duration or --iterations it records until the job exits.\n",
      out);
}

void ignore_signal(int) {}  // the job gets Ctrl-C; we stay to report where the trace is

// Where the job's traces went, or why there are none.
void report(const strata::collector::RecordOptions& opt) {
  if (opt.output_dir.empty()) {
    struct stat st {};
    if (::stat(opt.output.c_str(), &st) == 0)
      std::fprintf(stderr, "strata record: trace written to %s (%lld KiB)\n", opt.output.c_str(),
                   static_cast<long long>(st.st_size / 1024));
    else
      std::fprintf(stderr, "strata record: no trace was written: the job never initialized CUDA, or the agent "
                           "reported why above\n");
    return;
  }
  const auto files = strata::collector::rank_files(opt.output_dir);
  if (files.empty()) {
    std::fprintf(stderr, "strata record: no trace was written to %s: no process of the job initialized CUDA, or the "
                         "agent reported why above\n", opt.output_dir.c_str());
    return;
  }
  long long bytes = 0;
  for (const std::string& f : files)
    if (struct stat st {}; ::stat((opt.output_dir + "/" + f).c_str(), &st) == 0) bytes += st.st_size;
  const std::string names = files.size() == 1 ? files[0] : files.front() + " ... " + files.back();
  std::fprintf(stderr, "strata record: %zu trace%s written to %s (%s, %lld KiB)\n", files.size(),
               files.size() == 1 ? "" : "s", opt.output_dir.c_str(), names.c_str(), bytes / 1024);
  std::fprintf(stderr, "strata record: %s\n", strata::collector::open_job_hint(opt.output_dir).c_str());
}

}  // namespace

int cmd_record(int argc, char** argv) {
  strata::collector::RecordOptions opt;
  bool dormant = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a == "--dormant") {
      dormant = true;
      continue;
    }
    std::string error;
    if (strata::collector::parse_record_option(argc, argv, i, opt, error)) {
      if (!error.empty()) {
        std::fprintf(stderr, "strata record: %s\n", error.c_str());
        return 2;
      }
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "strata record: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
    break;  // the command starts here ("--" is optional)
  }
  if (const std::string why = strata::collector::check_record_options(opt); !why.empty()) {
    std::fprintf(stderr, "strata record: %s\n", why.c_str());
    return 2;
  }
  if (i >= argc) {
    std::fputs("strata record: no command given\n", stderr);
    usage(stderr);
    return 2;
  }
  std::string error;
  const std::string agent = strata::collector::find_agent(&error);
  if (agent.empty()) {
    std::fprintf(stderr, "strata record: %s\n", error.c_str());
    return 1;
  }
  std::string request;
  if (!dormant) {
    if (opt.output.empty()) opt.output = strata::collector::timestamped_name("strata", ".pt.trace.json");
    if (strata::collector::names_directory(opt.output)) {
      opt.output_dir = std::exchange(opt.output, "");
      const int removed = strata::collector::prepare_job_dir(opt.output_dir, &error);
      if (removed < 0) {
        std::fprintf(stderr, "strata record: %s\n", error.c_str());
        return 1;
      }
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
  const std::vector<std::string> command(argv + i, argv + argc);
  const pid_t pid = strata::collector::launch_with_agent(command, agent, request, &error);
  if (pid < 0) {
    std::fprintf(stderr, "strata record: %s\n", error.c_str());
    return 127;
  }
  struct sigaction sa {};
  sa.sa_handler = ignore_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (dormant)
    std::fprintf(stderr, "strata record: pid %d runs with the agent dormant; record with `strata attach %d --duration S`\n",
                 pid, pid);
  const int status = strata::collector::wait_child(pid);
  if (!dormant) report(opt);
  return status;
}
