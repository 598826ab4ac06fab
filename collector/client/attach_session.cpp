#include "attach_session.h"

#include <sys/stat.h>

#include <algorithm>

#include "client/options.h"

namespace strata::collector {

void AgentScan::refresh() {
  if (running()) return;
  started_ = true;
  last_ = SteadyClock::now();
  pending_ = std::async(std::launch::async, [] {
    Found f;
    f.status = list_agents(f.agents);
    f.jobs = group_jobs(f.agents);
    return f;
  });
}

void AgentScan::refresh_if_due(SteadyClock::time_point now) {
  if (!started_ || now - last_ >= interval_) refresh();
}

std::optional<AgentScan::Found> AgentScan::take_found() {
  if (!running() || pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  last_ = SteadyClock::now();  // the interval counts from the answer: a slow agent is not asked back to back
  return pending_.get();
}

bool AgentScan::take(std::vector<AgentInfo>& agents, Status& status) {
  auto f = take_found();
  if (!f) return false;
  agents = std::move(f->agents);
  status = std::move(f->status);
  return true;
}

bool AgentScan::take(std::vector<JobInfo>& jobs, Status& status) {
  auto f = take_found();
  if (!f) return false;
  jobs = std::move(f->jobs);
  status = std::move(f->status);
  return true;
}

bool LiveFollow::due(SteadyClock::time_point now, bool loading, const std::function<int64_t()>& size_of) {
  if (loading || (checked_ && now - last_ < interval_)) return false;
  checked_ = true;
  last_ = now;
  const int64_t size = size_of();
  if (size <= 0 || size == read_size_) return false;
  read_size_ = size;
  return true;
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

std::string attach_output_name(pid_t pid) {
  return timestamped_name("strata-" + std::to_string(pid), ".pt.trace.json");
}

AttachSession::~AttachSession() {
  cancel_.store(true);
  if (worker_.joinable()) worker_.join();
}

Status AttachSession::start(pid_t pid, RecordOptions opt) {
  opt.output = opt.output.empty() ? attach_output_name(pid) : absolute_path(opt.output);
  opt.output_dir.clear();
  return launch(pid, std::move(opt), [this, pid] {
    auto progress = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    };
    return record_from_agent(pid, opt_, &cancel_, progress);
  });
}

Status AttachSession::start_job(const JobInfo& job, RecordOptions opt) {
  const std::string dir = opt.output_dir;
  opt.output_dir = dir.empty() ? timestamped_name("strata-job-" + std::to_string(job.launcher), "") : absolute_path(dir);
  opt.output.clear();
  return launch(job.launcher, std::move(opt), [this, job] { return run_job(job); });
}

Result<RecordResult> AttachSession::run_job(const JobInfo& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back("recording the " + std::to_string(job.agents.size()) + " agents of job " +
                     std::to_string(job.launcher) + " into " + opt_.output_dir);
  }
  auto progress = [this](const MultiRecording& m) {
    std::lock_guard<std::mutex> lock(mu_);
    agents_ = m.agents;
  };
  const Result<MultiRecording> m = record_job(job, opt_, &cancel_, progress);
  if (!m.is_ok()) return m.status();
  RecordResult sum;
  sum.output = opt_.output_dir;
  std::string failed;  // every failed rank, named
  for (const AgentRecording& a : m->agents) {
    sum.events += a.result.events;
    sum.dropped += a.result.dropped;
    if (!a.status.is_ok()) failed += (failed.empty() ? "" : "; ") + agent_name(a) + ": " + a.status.message();
  }
  if (!m->finished()) return Status::io(failed);
  return sum;
}

Status AttachSession::launch(pid_t pid, RecordOptions opt, Work work) {
  if (active()) return Status::invalid("a recording is in progress (pid " + std::to_string(pid_) + ")");
  if (worker_.joinable()) worker_.join();
  pid_ = pid;
  opt_ = std::move(opt);
  follow_ = LiveFollow(follow_.interval());
  cancel_.store(false);
  events_shown_ = 0;
  final_asked_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.clear();
    agents_.clear();
    status_ = Status::ok();
    result_ = {};
    started_ = ended_ = SteadyClock::now();
  }
  state_.store(State::Recording);
  worker_ = std::thread([this, work = std::move(work)] {
    const Result<RecordResult> r = work();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = SteadyClock::now();
      if (r.is_ok()) {
        result_ = r.value();
        lines_.push_back((cancel_.load() ? "stopped early: " : "finished: ") + describe(r.value()) + " in " + r->output);
      } else {
        status_ = r.status();
      }
    }
    state_.store(r.is_ok() ? State::Finished : State::Failed);
  });
  return Status::ok();
}

void AttachSession::stop() {
  State expected = State::Recording;
  if (state_.compare_exchange_strong(expected, State::Stopping)) cancel_.store(true);
}

bool AttachSession::worth_final_read() const {
  // A failed recording (the job died, say) still left a readable start worth keeping in view.
  const State s = state();
  return s == State::Finished || (s == State::Failed && events_shown_ > 0);
}

AttachSession::Action AttachSession::next(SteadyClock::time_point now, bool loading) {
  if (active())
    return follow_.due(now, loading, [this] { return output_size(); }) ? Action::Reload : Action::None;
  if (!worth_final_read() || final_asked_ || loading) return Action::None;
  final_asked_ = true;
  return Action::FinalLoad;
}

bool AttachSession::done() const {
  const State s = state();
  return s != State::Idle && !active() && (final_asked_ || !worth_final_read());
}

void AttachSession::shown(uint64_t events) { events_shown_ = events; }

int64_t AttachSession::output_size() const {
  if (!is_job()) return file_size(opt_.output);
  int64_t total = 0;  // the job's files together: any rank's growth is worth a reload
  for (const std::string& name : rank_files(opt_.output_dir))
    total += std::max<int64_t>(0, file_size(opt_.output_dir + "/" + name));
  return total;
}

std::vector<AgentRecording> AttachSession::agents() const {
  std::lock_guard<std::mutex> lock(mu_);
  return agents_;
}

std::vector<std::string> AttachSession::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

Status AttachSession::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

RecordResult AttachSession::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

double AttachSession::seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto end = active() ? SteadyClock::now() : ended_;
  return std::chrono::duration<double>(end - started_).count();
}

}  // namespace strata::collector
