// Load benchmark: Strata's full load against a bare single-threaded simdjson On-Demand pass
// (the floor) and Python's json.load, each in its own process so peak RSS is its own.
//
//   strata_bench_load TRACE.json [--runs N] [--python-runs K] [--threads T] [--no-python]
//
// Prints the median of N runs of Strata and the floor (K of Python, default 1: it is slow),
// with MB/s, events/s, model bytes per event and peak RSS.
#include "core/loader.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The floor: read ph/cat/name/ts/dur/pid/tid of every event, nothing else, one thread.
int floor_pass(const char* path) {
  auto t0 = Clock::now();
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json)) {
    std::fprintf(stderr, "floor: cannot read %s\n", path);
    return 1;
  }
  double read_s = since(t0);
  auto t1 = Clock::now();
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc)) return 1;
  uint64_t events = 0, checksum = 0;
  simdjson::ondemand::array arr;
  auto root_type = doc.type();
  if (!root_type.error() && root_type.value() == simdjson::ondemand::json_type::array) {
    if (doc.get_array().get(arr)) return 1;
  } else if (doc["traceEvents"].get_array().get(arr)) {
    return 1;
  }
  for (auto item : arr) {
    simdjson::ondemand::object o;
    if (item.get_object().get(o)) continue;
    for (auto field : o) {
      simdjson::ondemand::raw_json_string key;
      if (field.key().get(key)) break;
      if (key == "ph" || key == "cat" || key == "name" || key == "ts" || key == "dur" || key == "pid" || key == "tid") {
        std::string_view token = field.value().raw_json_token();
        checksum += token.size();
      }
    }
    ++events;
  }
  double parse_s = since(t1);
  std::printf("%.6f %.6f %llu %llu\n", read_s, parse_s, (unsigned long long)events, (unsigned long long)checksum);
  return 0;
}

int strata_pass(const char* path, unsigned threads) {
  strata::LoadOptions options;
  options.threads = threads;
  strata::LoadResult r = strata::load_trace(path, nullptr, options);
  if (!r.model) {
    std::fprintf(stderr, "%s\n", r.error().c_str());
    return 1;
  }
  const auto& st = r.model->stats;
  std::printf("%.6f %.6f %.6f %.6f %llu %llu\n", st.seconds_total, st.seconds_read, st.seconds_parse,
              st.seconds_build, (unsigned long long)st.trace_events, (unsigned long long)st.model_bytes);
  return 0;
}

struct ChildRun {
  std::string out;
  double wall = 0;
  long max_rss_kb = 0;
  int status = -1;
};

ChildRun run_child(const std::vector<std::string>& args) {
  ChildRun r;
  int pipefd[2];
  if (pipe(pipefd) != 0) return r;
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, size_t(n));
  close(pipefd[0]);
  rusage ru{};
  wait4(pid, &r.status, 0, &ru);
  r.wall = since(t0);
  r.max_rss_kb = ru.ru_maxrss;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--floor") == 0) return floor_pass(argv[2]);
  if (argc >= 4 && std::strcmp(argv[1], "--strata") == 0) return strata_pass(argv[2], unsigned(std::atoi(argv[3])));
  if (argc < 2) {
    std::fprintf(stderr, "usage: strata_bench_load TRACE.json [--runs N] [--threads T] [--no-python]\n");
    return 2;
  }
  std::string path = argv[1];
  int runs = 3, python_runs = 1;
  unsigned threads = 0;
  bool python = true;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--python-runs") && i + 1 < argc) python_runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = unsigned(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--no-python")) python = false;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    std::perror(path.c_str());
    return 1;
  }
  double mb = double(st.st_size) / 1e6;
  std::string self = "/proc/self/exe";
  char exe[4096];
  ssize_t len = readlink(self.c_str(), exe, sizeof exe - 1);
  if (len <= 0) return 1;
  exe[len] = 0;

  std::vector<double> s_total, s_parse, s_build, s_rss, f_parse, f_total, f_rss, p_total, p_rss;
  unsigned long long events = 0, model_bytes = 0;
  // Each contender's runs back to back: a large process just before leaves the kernel
  // reclaiming its memory, which slows the next one's first touches.
  for (int r = 0; r < runs; ++r) {
    ChildRun c = run_child({exe, "--strata", path, std::to_string(threads)});
    double tot, rd, parse, build;
    if (c.status != 0 || std::sscanf(c.out.c_str(), "%lf %lf %lf %lf %llu %llu", &tot, &rd, &parse, &build, &events,
                                     &model_bytes) != 6) {
      std::fprintf(stderr, "strata load failed: %s\n", c.out.c_str());
      return 1;
    }
    s_total.push_back(tot);
    s_parse.push_back(parse);
    s_build.push_back(build);
    s_rss.push_back(double(c.max_rss_kb) * 1024);
  }
  for (int r = 0; r < runs; ++r) {
    ChildRun f = run_child({exe, "--floor", path});
    double frd, fparse;
    unsigned long long fev, sum;
    if (f.status != 0 || std::sscanf(f.out.c_str(), "%lf %lf %llu %llu", &frd, &fparse, &fev, &sum) != 4) {
      std::fprintf(stderr, "floor pass failed\n");
      return 1;
    }
    f_parse.push_back(fparse);
    f_total.push_back(frd + fparse);
    f_rss.push_back(double(f.max_rss_kb) * 1024);
  }
  for (int r = 0; python && r < python_runs; ++r) {
    ChildRun p = run_child({"python3", "-c",
                            "import json,sys,time\nt=time.perf_counter()\nd=json.load(open(sys.argv[1],'rb'))\n"
                            "print(time.perf_counter()-t)",
                            path});
    if (p.status == 0) {
      p_total.push_back(std::atof(p.out.c_str()));
      p_rss.push_back(double(p.max_rss_kb) * 1024);
    }
  }
  double ev = double(events);
  std::printf("trace: %s, %.1f MB, %llu traceEvents entries, %d runs (medians)\n", path.c_str(), mb, events, runs);
  std::printf("  strata load (%u threads): %.3f s  (parse %.3f, build %.3f)  %.0f MB/s  %.2f M events/s  "
              "model %.1f bytes/event  peak RSS %.0f MB (%.2fx file)\n",
              threads ? threads : std::max(1u, unsigned(sysconf(_SC_NPROCESSORS_ONLN))), median(s_total),
              median(s_parse), median(s_build), mb / median(s_total), ev / 1e6 / median(s_total),
              double(model_bytes) / ev, median(s_rss) / 1e6, median(s_rss) / double(st.st_size));
  std::printf("  floor (simdjson On-Demand, 1 thread, 7 fields): %.3f s parse, %.3f s with read  %.0f MB/s  "
              "peak RSS %.0f MB\n",
              median(f_parse), median(f_total), mb / median(f_parse), median(f_rss) / 1e6);
  if (!p_total.empty())
    std::printf("  python json.load (%zu runs): %.3f s  %.0f MB/s  peak RSS %.0f MB (%.1fx file)\n", p_total.size(),
                median(p_total), mb / median(p_total), median(p_rss) / 1e6, median(p_rss) / double(st.st_size));
  std::printf("  strata vs floor: %.2fx the floor's parse time; vs python: %.1fx faster\n",
              median(s_total) / median(f_parse), p_total.empty() ? 0.0 : median(p_total) / median(s_total));
  return 0;
}
