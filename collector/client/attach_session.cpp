#include "attach_session.h"

#include <sys/stat.h>

#include "client/options.h"

namespace strata::collector {

void AgentScan::refresh() {
  if (running()) return;
  started_ = true;
  last_ = SteadyClock::now();
  pending_ = std::async(std::launch::async, [] {
    Found f;
    f.agents = list_agents(&f.error);
    return f;
  });
}

void AgentScan::refresh_if_due(SteadyClock::time_point now) {
  if (!started_ || now - last_ >= interval_) refresh();
}

bool AgentScan::take(std::vector<AgentInfo>& agents, std::string& error) {
  if (!running() || pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  Found f = pending_.get();
  agents = std::move(f.agents);
  error = std::move(f.error);
  last_ = SteadyClock::now();  // the interval counts from the answer: a slow agent is not asked back to back
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

bool AttachSession::start(pid_t pid, RecordOptions opt, std::string* error) {
  if (active()) {
    *error = "a recording is in progress (pid " + std::to_string(pid_) + ")";
    return false;
  }
  if (worker_.joinable()) worker_.join();
  opt.output = opt.output.empty() ? attach_output_name(pid) : absolute_path(opt.output);
  pid_ = pid;
  opt_ = std::move(opt);
  follow_ = LiveFollow(follow_.interval());
  cancel_.store(false);
  events_shown_ = 0;
  final_asked_ = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.clear();
    error_.clear();
    result_ = {};
    started_ = ended_ = SteadyClock::now();
  }
  state_.store(State::Recording);
  worker_ = std::thread([this] {
    std::string err;
    auto progress = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    };
    const auto r = record_from_agent(pid_, opt_, &cancel_, progress, &err);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = SteadyClock::now();
      if (r) {
        result_ = *r;
        lines_.push_back((cancel_.load() ? "stopped early: " : "finished: ") + describe(*r) + " in " + r->output);
      } else {
        error_ = err;
      }
    }
    state_.store(r ? State::Finished : State::Failed);
  });
  return true;
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
    return follow_.due(now, loading, [this] { return file_size(opt_.output); }) ? Action::Reload : Action::None;
  if (!worth_final_read() || final_asked_ || loading) return Action::None;
  final_asked_ = true;
  return Action::FinalLoad;
}

bool AttachSession::done() const {
  const State s = state();
  return s != State::Idle && !active() && (final_asked_ || !worth_final_read());
}

void AttachSession::shown(uint64_t events) { events_shown_ = events; }

std::vector<std::string> AttachSession::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

std::string AttachSession::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
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
