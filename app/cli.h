// Shared by the headless subcommands: argument parsing and loading (and annotating) on a
// worker thread with progress on a terminal for long runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <memory>
#include <string>

struct FileArgs {
  std::string path;
  std::string output;  // -o, for commands that write a file
  bool json = false;
};

// Parses `FILE [--json] [-o OUT]` as `usage` allows; on a bad command line prints why and
// returns the exit code to use (2), else returns 0.
int parse_file_args(const char* command, const char* usage, bool takes_json, bool takes_output, int argc,
                    char** argv, FileArgs& out);

struct LoadedTrace {
  std::unique_ptr<strata::TraceModel> model;
  strata::Annotation annotation;  // empty unless asked for
  std::string error;
};

LoadedTrace load_for_cli(const std::string& path, const char* command, bool annotate);
