// Jobs: loading every rank of a job, and merging per-rank summaries.
//
//   strata_bench_job load DIR|FILES... [--workers N]  loads and annotates every rank (as the viewer does,
//                                             models kept within the memory budget) and analyses
//                                             the job: seconds, MB/s over the files' JSON, peak RSS
//   strata_bench_job merge N RANK_SUMMARY.json  parses the summary N times as ranks 0..N-1 (as
//                                             `strata summary --merge` reads N files) and analyses
//                                             the job: seconds for each part
//
// One measurement per run: run it several times and take the median (each run in its own
// process, so that peak RSS is its own).
#include "core/job/job.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int load(const std::vector<std::string>& inputs, unsigned workers) {
  strata::Result<std::vector<strata::JobFile>> listed = strata::job_files(inputs);
  if (!listed.is_ok()) {
    std::fprintf(stderr, "%s\n", listed.status().message().c_str());
    return 1;
  }
  const std::vector<strata::JobFile>& files = listed.value();
  uint64_t file_bytes = 0;
  for (const strata::JobFile& f : files) file_bytes += f.bytes;
  auto t0 = Clock::now();
  strata::JobOptions options;
  options.workers = workers;
  strata::Job job = strata::load_job(files, options);
  double secs = since(t0);
  uint64_t json_bytes = 0;
  for (const strata::JobRank& r : job.ranks)
    if (r.model) json_bytes += r.model->stats.json_bytes;
  const double mb = double(json_bytes ? json_bytes : file_bytes) / 1e6;
  std::printf("%zu ranks (%zu loaded), %.1f MB of JSON (%.1f MB of files): %.2f s, %.0f MB/s; peak RSS %.0f MB (%.2fx the files); "
              "budget %.1f GB, %s\n",
              job.ranks.size(), job.data.size(), mb, double(file_bytes) / 1e6, secs, mb / secs,
              double(strata::peak_rss_bytes()) / 1e6, double(strata::peak_rss_bytes()) / double(file_bytes),
              double(job.budget_bytes) / 1e9, job.summaries_only ? "summaries only" : "models kept");
  std::printf("  %zu stragglers, %zu collective instances\n", job.analysis.stragglers.size(), job.analysis.instances.size());
  return 0;
}

int merge(size_t n, const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  auto t0 = Clock::now();
  std::vector<strata::RankData> ranks(n);
  for (size_t i = 0; i < n; ++i) {
    strata::Result<strata::RankData> read = strata::read_rank_data(text);
    if (!read.is_ok()) {
      std::fprintf(stderr, "%s: %s\n", path, read.status().message().c_str());
      return 1;
    }
    ranks[i] = std::move(read.value());
    ranks[i].rank = int64_t(i);
  }
  double parse_s = since(t0);
  auto t1 = Clock::now();
  strata::JobAnalysis j = strata::analyze_job(ranks);
  double analyze_s = since(t1);
  auto t2 = Clock::now();
  std::string out = strata::job_summary_json(ranks, j);
  double write_s = since(t2);
  std::printf("merge of %zu rank summaries (%.1f MB of JSON): parse %.2f s, analyse %.2f s, write %.2f s, total %.2f s; "
              "%zu collective instances; peak RSS %.0f MB\n",
              n, double(text.size() * n) / 1e6, parse_s, analyze_s, write_s, parse_s + analyze_s + write_s,
              j.instances.size(), double(strata::peak_rss_bytes()) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && !std::strcmp(argv[1], "load")) {
    unsigned workers = 0;
    std::vector<std::string> inputs;
    for (int i = 2; i < argc; ++i)
      if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) workers = unsigned(std::atoi(argv[++i]));
      else inputs.emplace_back(argv[i]);
    return load(inputs, workers);
  }
  if (argc == 4 && !std::strcmp(argv[1], "merge")) return merge(size_t(std::atoll(argv[2])), argv[3]);
  std::fprintf(stderr, "usage: strata_bench_job load DIR|FILES... | strata_bench_job merge N RANK_SUMMARY.json\n");
  return 2;
}
