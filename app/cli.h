// Shared by the headless subcommands: argument parsing and loading (and annotating) on a
// worker thread with progress on a terminal for long runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <memory>
#include <string>

// What a subcommand accepts besides its FILE.
struct ArgSpec {
  const char* command;  // "summary"
  const char* usage;    // "strata summary FILE [--json]"
  bool json = false;    // --json
  bool output = false;  // -o OUT (required)
  bool item = false;    // --item PATH
};

struct FileArgs {
  std::string path;
  std::string output;  // -o, for commands that write a file
  std::string item;    // --item: an annotation node's path ("Iteration 3/Backward")
  bool json = false;
};

// Parses the command line as `spec` allows; on a bad one prints why and returns the exit
// code to use (2), else returns 0.
int parse_file_args(const ArgSpec& spec, int argc, char** argv, FileArgs& out);

struct LoadedTrace {
  std::unique_ptr<strata::TraceModel> model;
  strata::Annotation annotation;  // empty unless asked for
  std::string error;
};

LoadedTrace load_for_cli(const std::string& path, const char* command, bool annotate);
