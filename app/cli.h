// Shared by the headless subcommands: argument parsing and loading (and annotating) on a
// worker thread with progress on a terminal for long runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/job/job.h"
#include "core/loader.h"

#include <memory>
#include <string>
#include <vector>

// What a subcommand accepts besides its inputs (one or more files and directories: a job).
struct ArgSpec {
  const char* command;  // "summary"
  const char* usage;    // "strata summary FILE [--json]"
  bool json = false;    // --json
  bool output = false;  // -o OUT (required)
  bool item = false;    // --item PATH
  bool merge = false;   // --merge: the inputs are per-rank summaries
  bool range = false;   // --range A:B
  bool memory_at = false;  // --memory-at T|peak
  bool batch = false;      // --batch N,N,...
  bool model = false;      // --model FILE (print(model) text)
};

struct FileArgs {
  std::vector<std::string> inputs;  // files and directories, as given
  std::string output;  // -o, for commands that write a file (a directory for a job)
  std::string item;    // --item: an annotation node's path ("Iteration 3/Backward")
  std::string range;   // --range: "A:B", milliseconds from the trace's start
  std::string memory_at;  // --memory-at: "peak", or ms from the trace's start
  std::string batch;      // --batch: batch sizes, one per input
  strata::AnnotateOptions annotate;  // --model: the model's modules name the layers
  bool json = false;
  bool merge = false;
  // One trace file (not a job of several or a directory).
  bool single_file() const;
};

// Parses the command line as `spec` allows; on a bad one prints why and returns the exit
// code to use (2), else returns 0.
int parse_file_args(const ArgSpec& spec, int argc, char** argv, FileArgs& out);

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
