#include "sim_job.h"

#include <unistd.h>

#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace strata::collector::test {

namespace {

// Variables the agent reads: a job gets only those its test gives it.
bool is_agent_variable(const std::string& key) {
  return key == "STRATA_RECORD" || key == "STRATA_BUFFER_MB" ||
         key == "STRATA_SOCKET_DIR" || key == "NVTX_INJECTION64_PATH" || key == "CUDA_INJECTION64_PATH";
}

// The counters of the "SIMSTATS {json}" line, empty when there is none.
std::map<std::string, uint64_t> parse_stats(const std::string& out, std::string* error) {
  std::map<std::string, uint64_t> stats;
  const size_t at = out.find("SIMSTATS ");
  if (at == std::string::npos) {
    *error = "no SIMSTATS line";
    return stats;
  }
  const size_t begin = at + std::strlen("SIMSTATS ");
  const std::string json = out.substr(begin, out.find('\n', begin) - begin);
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(json).get(object) != simdjson::SUCCESS) {
    *error = "SIMSTATS is not a JSON object: " + json;
    return stats;
  }
  for (auto field : object) {
    uint64_t value = 0;
    if (field.value.get(value) == simdjson::SUCCESS) stats[std::string(field.key)] = value;
  }
  return stats;
}

}  // namespace

std::string SimJob::agent_path() { return STRATA_AGENT_PATH; }

SimJob::SimJob() {
  char tmpl[] = "/tmp/strata-sim-XXXXXX";
  if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  ::setenv("STRATA_SOCKET_DIR", (dir_ + "/sockets").c_str(), 1);
}

SimJob::~SimJob() {
  process_.wait(0);  // kills the job if it still runs
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

bool SimJob::start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                   int timeout_ms) {
  if (dir_.empty() || started_) {
    error_ = dir_.empty() ? "cannot create a temp dir" : "the job was started already";
    return false;
  }
  started_ = true;
  std::vector<std::string> argv = {STRATA_SIM_JOB, "--agent", STRATA_AGENT_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> envs = env;
  envs.emplace("STRATA_SOCKET_DIR", dir_ + "/sockets");
  if (!process_.start(argv, envs, is_agent_variable)) {
    error_ = process_.error();
    return false;
  }
  const std::string ready = "ready " + std::to_string(process_.pid()) + "\n";
  if (process_.wait_for_output(ready, timeout_ms)) return true;
  error_ = "no 'ready' line within " + std::to_string(timeout_ms) + " ms (or the job ended); stderr: " + err();
  return false;
}

bool SimJob::wait(int timeout_ms) {
  if (!started_) {
    error_ = "the job was not started";
    return false;
  }
  const bool ended = process_.wait(timeout_ms);
  std::string stats_error;
  stats_ = parse_stats(out(), &stats_error);
  if (!ended) error_ = "the job did not exit within " + std::to_string(timeout_ms) + " ms (killed)";
  else if (exit_status() != 0) error_ = "the job exited with status " + std::to_string(exit_status());
  else error_ = stats_error;
  if (!error_.empty()) error_ += "; stderr: " + err();
  return error_.empty();
}

bool SimJob::start_recorded(const RecordOptions& opt, const std::vector<std::string>& args,
                            std::map<std::string, std::string> env) {
  Message m = start_request(opt);
  m.set("exclusive", "1");
  env["STRATA_RECORD"] = encode_message(m);
  env["NVTX_INJECTION64_PATH"] = agent_path();
  return start(args, env);
}

Result<RecordResult> SimJob::record(const RecordOptions& opt, int timeout_ms) {
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!finished.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done; })) cancel.store(true);
  });
  Result<RecordResult> result = record_from_agent(pid(), opt, &cancel, {});
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  finished.notify_all();
  watchdog.join();
  if (cancel.load())
    return Status::cancelled("the recording did not finish within " + std::to_string(timeout_ms) + " ms (stopped)");
  return result;
}

}  // namespace strata::collector::test
