#include "app/cli.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <unistd.h>

bool read_model_file(const std::string& path, strata::AnnotateOptions& out, std::string& error) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) {
    error = "cannot read " + path;
    return false;
  }
  const strata::Status st = strata::set_model_text(out, text.str());
  if (st.is_ok()) return true;
  error = path + ": " + st.message() + " (--model wants the text print(model) writes)";
  return false;
}

CLI::Option* add_inputs(CLI::App& sub, std::vector<std::string>& inputs, bool required) {
  CLI::Option* o = sub.add_option("FILE|DIR", inputs,
                                  "a trace (Kineto JSON, or .gz), or a job: a directory of one trace\n"
                                  "per rank, or several files")
                       ->type_name("");
  if (required) o->required();
  return o;
}

CLI::Option* add_model_option(CLI::App& sub, std::string& path) {
  return sub.add_option("--model", path, "the text print(model) writes: layers take its modules'\n"
                                        "attribute paths")
      ->type_name("MODEL.txt");
}

bool apply_model_option(const CLI::App& sub, const std::string& path, strata::AnnotateOptions& out) {
  if (path.empty()) return true;
  std::string error;
  if (read_model_file(path, out, error)) return true;
  std::fprintf(stderr, "strata %s: %s\n", sub.get_name().c_str(), error.c_str());
  return false;
}

bool single_file(const std::vector<std::string>& inputs) {
  std::error_code ec;
  return inputs.size() == 1 && !std::filesystem::is_directory(inputs[0], ec);
}

uint32_t memory_event_for(const strata::TraceModel& m, const strata::Annotation& a, const std::string& spec, std::string& error) {
  const strata::DeviceMemory* d = a.analyses.memory.peak_device();
  if (!d) {
    error = "the trace has no [memory] events (record with profile_memory=True)";
    return UINT32_MAX;
  }
  if (spec == "peak") return d->at_peak.through;
  char* end = nullptr;
  const double ms = std::strtod(spec.c_str(), &end);
  if (spec.empty() || *end) {
    error = "--memory-at wants 'peak' or a time in ms from the trace's start, not '" + spec + "'";
    return UINT32_MAX;
  }
  const uint32_t e = strata::memory_event_at(m.memory, d->device_type, d->device_id, m.time_begin + strata::Ns(ms * 1e6));
  if (e == UINT32_MAX) error = "no memory event on " + strata::memory_device_name(d->device_type, d->device_id) + " at or before " + spec + " ms";
  return e;
}

namespace {

// Shows `what` on the terminal while `done` is false, once the work has taken half a second.
template <class F>
void show_progress(const std::atomic<bool>& done, F&& what) {
  if (!isatty(2)) return;
  bool shown = false;
  auto start = std::chrono::steady_clock::now();
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500)) continue;
    std::fprintf(stderr, "\r%s\033[K", what().c_str());
    shown = true;
  }
  if (shown) std::fprintf(stderr, "\r\033[K");
}

}  // namespace

bool load_job_for_cli(const std::vector<std::string>& inputs, const char* command, bool keep_models, strata::Job& job) {
  strata::Result<std::vector<strata::JobFile>> found = strata::job_files(inputs);
  if (!found.is_ok()) {
    std::fprintf(stderr, "strata %s: %s\n", command, found.status().message().c_str());
    return false;
  }
  const std::vector<strata::JobFile>& files = found.value();
  strata::Progress progress;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    strata::JobOptions options;
    options.keep_models = keep_models;
    job = strata::load_job(files, options, &progress);
    done = true;
  });
  show_progress(done, [&] {
    char buf[160];
    std::snprintf(buf, sizeof buf, "strata %s: loading and annotating %zu ranks %3.0f%%", command, files.size(),
                  progress.fraction() * 100);
    return std::string(buf);
  });
  worker.join();
  if (job.data.empty()) {
    for (const strata::JobRank& r : job.ranks) std::fprintf(stderr, "strata: %s\n", r.status.message().c_str());
    return false;
  }
  return true;
}

LoadedTrace load_for_cli(const std::string& path, const char* command, const strata::AnnotateOptions* annotate) {
  LoadedTrace out;
  strata::Progress progress;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    strata::LoadResult r = strata::load_trace(path, &progress);
    if (!r.model) {
      out.error = r.error();
    } else {
      if (annotate) out.annotation = strata::annotate(*r.model, *annotate, &progress);
      out.model = std::move(r.model);
    }
    done = true;
  });
  show_progress(done, [&] {
    const strata::Stage s = progress.stage.load();
    char buf[1200];
    if (s <= strata::Stage::Building)
      std::snprintf(buf, sizeof buf, "strata %s: %s %s %3.0f%%", command, strata::stage_name(s), path.c_str(), progress.fraction() * 100);
    else
      std::snprintf(buf, sizeof buf, "strata %s: %s", command, strata::stage_name(s));
    return std::string(buf);
  });
  worker.join();
  return out;
}
