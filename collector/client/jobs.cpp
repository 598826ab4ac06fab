#include "jobs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "client/processes.h"
#include "protocol/job_rank.h"

namespace strata::collector {

namespace fs = std::filesystem;

namespace {

void sort_agents(std::vector<AgentInfo>& agents) {
  std::sort(agents.begin(), agents.end(), [](const AgentInfo& a, const AgentInfo& b) {
    const bool ra = a.rank >= 0, rb = b.rank >= 0;
    if (ra != rb) return ra;
    return a.rank != b.rank ? a.rank < b.rank : a.pid < b.pid;
  });
}

// The number in a rank file's name (rank-12..., pid-345...), for ordering.
int64_t name_number(const std::string& name) {
  const size_t dash = name.find('-');
  int64_t n = 0;
  for (size_t i = dash + 1; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (int64_t{1} << 40); ++i)
    n = n * 10 + (name[i] - '0');
  return n;
}

}  // namespace

std::vector<JobInfo> group_jobs(std::vector<AgentInfo> agents) {
  std::set<pid_t> agent_pids;
  for (const AgentInfo& a : agents) agent_pids.insert(a.pid);
  std::map<pid_t, JobInfo> jobs;
  for (AgentInfo& a : agents) {
    pid_t launcher = a.pid;
    // Each step goes up to another agent, so the walk ends within as many steps as there are agents.
    for (size_t step = 0; step <= agents.size(); ++step) {
      const pid_t parent = parent_of(launcher);
      if (parent <= 0) break;
      launcher = parent;
      if (agent_pids.count(parent) == 0) break;
    }
    jobs[launcher].agents.push_back(std::move(a));
  }
  std::vector<JobInfo> out;
  for (auto& [launcher, job] : jobs) {
    job.launcher = launcher;
    job.command = process_command(launcher);
    sort_agents(job.agents);
    out.push_back(std::move(job));
  }
  return out;
}

Status list_jobs(std::vector<JobInfo>& out) {
  std::vector<AgentInfo> agents;
  Status st = list_agents(agents);
  out = group_jobs(std::move(agents));
  return st;
}

JobInfo job_under(pid_t pid, const std::vector<AgentInfo>& agents) {
  JobInfo job;
  job.launcher = pid;
  job.command = process_command(pid);
  for (const AgentInfo& a : agents)
    if (descends_from(a.pid, pid)) job.agents.push_back(a);
  sort_agents(job.agents);
  return job;
}

Result<int> prepare_job_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) && !fs::create_directories(dir, ec))
    return Status::io("cannot create the directory " + dir + (ec ? ": " + ec.message() : ": a file of that name is in the way"));
  int removed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (is_rank_file_name(e.path().filename().string()) && !e.is_directory(ec) && fs::remove(e.path(), ec)) ++removed;
  if (ec) return Status::io("cannot clear the earlier recording's files from " + dir + ": " + ec.message());
  return removed;
}

std::vector<std::string> rank_files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (is_rank_file_name(e.path().filename().string())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    if (a[0] != b[0]) return a[0] > b[0];  // rank-... before pid-...
    const int64_t na = name_number(a), nb = name_number(b);
    return na != nb ? na < nb : a < b;
  });
  return names;
}

std::string open_job_hint(const std::string& dir) {
  return "open them as one job: strata " + dir + "   (or: strata summary " + dir + ")";
}

Result<MultiRecording> record_job(const JobInfo& job, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                  const std::function<void(const MultiRecording&)>& progress) {
  if (job.agents.empty())
    return Status::not_found("no Strata agent runs under pid " + std::to_string(job.launcher) + " (`strata attach` lists the jobs)");
  if (opt.output_dir.empty() || opt.output_dir[0] != '/')
    return Status::invalid("a job is recorded into a directory given by its absolute path");
  if (Result<int> prepared = prepare_job_dir(opt.output_dir); !prepared.is_ok()) return prepared.status();
  std::vector<pid_t> pids;
  for (const AgentInfo& a : job.agents) pids.push_back(a.pid);
  return record_agents(pids, opt, cancel, progress);
}

}  // namespace strata::collector
