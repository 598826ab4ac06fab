// Shared by the headless subcommands: their inputs and options, and loading (and annotating) on a
// worker thread with progress on a terminal for long runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/job/job.h"
#include "core/loader.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

// Options given to CLI11 handed on, as words, to a parser that takes an argv (the collector's
// recording and attach options keep one parser for the command line and the viewer).
struct OptionWords {
  std::vector<std::string> words;
  void value(const char* name, const std::string& v) {
    if (!v.empty()) words.insert(words.end(), {name, v});
  }
  void flag(const char* name, bool on) {
    if (on) words.emplace_back(name);
  }
  std::vector<char*> argv() {
    std::vector<char*> out;
    for (std::string& w : words) out.push_back(w.data());
    return out;
  }
};

// Whether `inputs` name one trace file (not a job: a directory, or several files).
bool single_file(const std::vector<std::string>& inputs);

// `FILE|DIR ...`: the traces a subcommand reads (`required`: at least one).
CLI::Option* add_inputs(CLI::App& sub, std::vector<std::string>& inputs, bool required = true);
// `--model MODEL.txt`: the text print(model) writes (layers take its modules' attribute paths).
CLI::Option* add_model_option(CLI::App& sub, std::string& path);
// Reads `--model`'s file into `out` (when `path` is set); false (having said why) when it cannot.
bool apply_model_option(const CLI::App& sub, const std::string& path, strata::AnnotateOptions& out);

struct LoadedTrace {
  std::unique_ptr<strata::TraceModel> model;
  strata::Annotation annotation;  // empty unless asked for
  std::string error;
};

// The memory event `--memory-at` names ("peak": the peak of the device with the highest; T:
// the last event at or before T ms from the trace's start, on that device); UINT32_MAX with
// `error` set when there is none.
uint32_t memory_event_for(const strata::TraceModel& m, const strata::Annotation& a, const std::string& spec, std::string& error);

// Loads a trace with progress on a terminal, and annotates it with `annotate` unless null.
LoadedTrace load_for_cli(const std::string& path, const char* command, const strata::AnnotateOptions* annotate);
// `--model FILE`: a model's print(model) text, its module tree and leaves into `out` (which
// keeps the rest); false with `error` naming the file and the line.
bool read_model_file(const std::string& path, strata::AnnotateOptions& out, std::string& error);

// Loads a job's ranks (summaries only, to stay within memory) with progress on a terminal;
// prints why and returns false when it cannot.
bool load_job_for_cli(const std::vector<std::string>& inputs, const char* command, bool keep_models, strata::Job& job);
