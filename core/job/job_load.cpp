// Opening a job: its files, each file's rank, loading and annotating the ranks several at a
// time within a memory budget, then the job's analyses.
#include "core/job/job.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

namespace strata {

namespace fs = std::filesystem;

namespace {

bool is_trace_name(const std::string& name) {
  return name.find(".json") != std::string::npos && name.find(".summary.") == std::string::npos;
}

// What a trace takes in memory once loaded: its JSON (kept for lazy reads) and the model, about
// 1.4 times the JSON (README, Loading). A .gz file's trailer gives the JSON size (mod 4 GiB).
uint64_t loaded_bytes(const std::string& path, uint64_t file_bytes) {
  uint64_t json = file_bytes;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    json = file_bytes * 8;
    std::ifstream f(path, std::ios::binary);
    unsigned char t[4];
    if (f && file_bytes >= 18 && f.seekg(-4, std::ios::end) && f.read(reinterpret_cast<char*>(t), 4)) {
      uint64_t isize = uint64_t(t[0]) | uint64_t(t[1]) << 8 | uint64_t(t[2]) << 16 | uint64_t(t[3]) << 24;
      if (isize >= file_bytes) json = isize;
    }
  }
  return json + json * 2 / 5;
}

}  // namespace

int64_t rank_from_name(std::string_view path) {
  std::string name(path.substr(path.find_last_of('/') == std::string_view::npos ? 0 : path.find_last_of('/') + 1));
  for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  int64_t found = -1;
  for (std::string_view word : {"rank", "worker"}) {
    for (size_t p = name.find(word); p != std::string::npos; p = name.find(word, p + 1)) {
      size_t q = p + word.size();
      if (q < name.size() && (name[q] == '-' || name[q] == '_' || name[q] == '.')) ++q;
      size_t d = q;
      while (d < name.size() && std::isdigit(static_cast<unsigned char>(name[d]))) ++d;
      if (d > q && d - q < 10) found = std::stoll(name.substr(q, d - q));
    }
    if (found >= 0) return found;
  }
  return found;
}

Result<std::vector<JobFile>> job_files(const std::vector<std::string>& inputs) {
  std::vector<JobFile> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> names;
      for (const fs::directory_entry& e : fs::directory_iterator(in, ec))
        if (e.is_regular_file(ec) && is_trace_name(e.path().filename().string())) names.push_back(e.path().string());
      if (ec) return Status::io(in + ": cannot list the directory: " + ec.message());
      if (names.empty()) return Status::not_found(in + ": no trace files (*.json, *.json.gz) in the directory");
      std::sort(names.begin(), names.end());
      for (std::string& n : names) out.push_back({std::move(n), -1, 0});
    } else if (fs::is_regular_file(in, ec)) {
      out.push_back({in, -1, 0});
    } else {
      return Status::not_found(in + ": no such file or directory");
    }
  }
  std::set<std::string> seen;
  for (JobFile& f : out) {
    std::error_code ec;
    f.bytes = fs::file_size(f.path, ec);
    if (!seen.insert(fs::weakly_canonical(f.path, ec).string()).second) return Status::invalid(f.path + ": named twice");
  }
  // Ranks named in file names order the files (rank2 before rank10); the rest keep their order.
  std::stable_sort(out.begin(), out.end(), [](const JobFile& a, const JobFile& b) {
    int64_t ra = rank_from_name(a.path), rb = rank_from_name(b.path);
    return ra >= 0 && rb >= 0 && ra < rb;
  });
  return out;
}

uint64_t memory_budget() {
  if (const char* e = std::getenv("STRATA_MEMORY_BUDGET")) {
    char* end = nullptr;
    double v = std::strtod(e, &end);
    if (end && end != e && v > 0) {
      int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : 0;
      return uint64_t(v * double(uint64_t(1) << shift));
    }
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : uint64_t(8) << 30;
}

Job load_job(const std::vector<JobFile>& files, const JobOptions& options, Progress* progress) {
  Job job;
  job.budget_bytes = options.budget_bytes ? options.budget_bytes : memory_budget();
  const size_t n = files.size();
  std::vector<uint64_t> need(n);
  uint64_t total = 0, largest = 0;
  for (size_t i = 0; i < n; ++i) {
    need[i] = loaded_bytes(files[i].path, files[i].bytes);
    total += need[i];
    largest = std::max(largest, need[i]);
  }
  const bool keep = options.keep_models && total <= job.budget_bytes;
  job.summaries_only = !keep;
  // Several ranks at once, each loader on its share of the cores; without room for every
  // model, only as many at once as the budget holds.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  size_t workers = std::min<size_t>(n, options.workers ? options.workers : cores);
  if (!keep && largest > 0) workers = std::clamp<size_t>(job.budget_bytes / largest, 1, workers);
  LoadOptions lo;
  lo.threads = std::max(1u, cores / unsigned(std::max<size_t>(workers, 1)));

  job.ranks.resize(n);
  std::vector<RankData> data(n);
  if (progress) {
    progress->enter(Stage::Reading);
    progress->total = total;
    progress->done = 0;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      JobRank& jr = job.ranks[i];
      jr.file = files[i];
      Progress part;
      part.parent = progress;
      LoadResult r = load_trace(files[i].path, &part, lo);
      if (!r.model) {
        jr.status = r.status;
      } else {
        AnnotateOptions ao;
        ao.threads = lo.threads;
        auto a = std::make_unique<Annotation>(annotate(*r.model, ao, &part));
        if (!a->status.is_ok()) {
          jr.status = Status::cancelled(files[i].path + ": cancelled");
        } else {
          jr.file.rank = r.model->distributed.rank;
          data[i] = rank_data(*r.model, *a, jr.file.rank);
          if (options.on_rank) options.on_rank(data[i]);
          if (keep) {
            jr.model = std::move(r.model);
            jr.annotation = std::move(a);
          }
        }
      }
      if (progress) progress->done += need[i];
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (progress && progress->cancelled()) return job;

  // Ranks: from the traces when they all say and agree, else from the names, else the order.
  auto unique_ranks = [&](auto rank_of) {
    std::set<int64_t> seen;
    for (size_t i = 0; i < n; ++i)
      if (job.ranks[i].status.is_ok() && (rank_of(i) < 0 || !seen.insert(rank_of(i)).second)) return false;
    return true;
  };
  if (!unique_ranks([&](size_t i) { return job.ranks[i].file.rank; })) {
    const bool by_name = unique_ranks([&](size_t i) { return rank_from_name(files[i].path); });
    for (size_t i = 0; i < n; ++i) job.ranks[i].file.rank = by_name ? rank_from_name(files[i].path) : int64_t(i);
    job.analysis.notes.push_back(by_name ? "ranks taken from the file names (the traces do not all name a distinct rank)"
                                         : "ranks taken from the files' order (neither the traces nor the names give distinct ranks)");
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return job.ranks[a].file.rank < job.ranks[b].file.rank; });
  std::vector<JobRank> sorted;
  for (size_t i : order) {
    if (job.ranks[i].status.is_ok()) {
      data[i].rank = job.ranks[i].file.rank;
      job.data.push_back(std::move(data[i]));
      job.data_rank.push_back(uint32_t(sorted.size()));
    }
    sorted.push_back(std::move(job.ranks[i]));
  }
  job.ranks = std::move(sorted);
  std::vector<std::string> notes = std::move(job.analysis.notes);
  job.analysis = analyze_job(job.data);
  job.analysis.notes.insert(job.analysis.notes.begin(), notes.begin(), notes.end());
  for (const JobRank& r : job.ranks)
    if (!r.status.is_ok()) job.analysis.notes.push_back("left out: " + r.status.message());
  if (job.summaries_only && options.keep_models)
    job.analysis.notes.push_back("the job's traces need more memory than the budget: ranks were summarized one at a time and their events dropped");
  return job;
}

}  // namespace strata
