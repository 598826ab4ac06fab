// The strata executable's command line: one CLI11 app, one subcommand per add_X below. Each
// add_X declares its subcommand (usage, options, inputs) on the root app and returns what runs
// it once the whole command line has parsed. Exit codes, for every subcommand:
//   0 done, 1 failed (a file that cannot be read, a recording that wrote nothing, ...),
//   2 usage (a bad command line; the subcommand's usage is one `strata SUB --help` away).
// `strata record` passes its job's exit status on when a trace was written.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // after a successful parse; returns the exit code
  // A command that starts a program (record) gets everything after the first "--" here,
  // untouched by the parser.
  std::vector<std::string>* program = nullptr;
};

Command add_view(CLI::App& strata);      // the viewer; headless screenshot / layout / benchmark modes
Command add_info(CLI::App& strata);      // what a trace holds
Command add_summary(CLI::App& strata);   // annotation findings as text or JSON
Command add_annotate(CLI::App& strata);  // the trace plus annotation tiers, for Perfetto
Command add_predict(CLI::App& strata);   // memory and time against the batch size
Command add_whatif(CLI::App& strata);    // predicted iteration time under changed durations
Command add_diff(CLI::App& strata);      // two runs compared
Command add_record(CLI::App& strata);    // collector: launch a job with the agent
Command add_attach(CLI::App& strata);    // collector: record from a running job
#ifdef STRATA_HAVE_VIEWER
bool viewer_display_available();  // a display to open a window on
#endif

// The recording options `strata record` and `strata attach` share (cmd_record.cpp), as typed:
//   --duration S --iterations N --delay S --pattern GLOB --profiler-range --kinds LIST
//   --metrics LIST --kernels GLOB -o FILE|DIR/ --gzip
namespace strata::collector {
struct RecordOptions;
}
struct RecordingArgs {
  std::string duration, iterations, delay, pattern, kinds, metrics, kernels, output;
  bool profiler_range = false, gzip = false;
};
void add_recording_options(CLI::App& sub, RecordingArgs& args);
// Into `opt`, checked as the collector checks them; false with `error` when one is bad.
bool apply_recording_options(const RecordingArgs& args, strata::collector::RecordOptions& opt, std::string& error);

// `strata record ...` / `strata attach ...` alone (the collector's standalone test binary):
// argv[0] is the subcommand's name.
int cmd_record(int argc, char** argv);
int cmd_attach(int argc, char** argv);

// Shows `usage` (lines "strata SUB ...", joined by '\n') as the "Usage:" of the app's --help.
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) { column_width(32); }
  std::string make_usage(const CLI::App*, std::string) const override {
    std::string out = "Usage: ";
    for (char c : usage_) out += c == '\n' ? std::string("\n       ") : std::string(1, c);
    return out + "\n";
  }
  // "--item PATH", "FILE|DIR ... REQUIRED": the value and whether it repeats or is required
  // (which options exclude which is said by the usage and the error).
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string out;
    if (!opt->get_type_name().empty()) out += " " + opt->get_type_name();
    if (opt->get_expected_max() > 1) out += " ...";
    if (opt->get_required()) out += " REQUIRED";
    return out;
  }

 private:
  std::string usage_;
};

// A subcommand of `strata` with its usage lines and a one-line (or two-line) description,
// which `strata --help` lists and `strata SUB --help` shows above its usage.
inline CLI::App* add_subcommand(CLI::App& strata, const char* name, const char* description, const char* usage) {
  CLI::App* sub = strata.add_subcommand(name, description);
  sub->formatter(std::make_shared<UsageFormatter>(usage));
  return sub;
}

// A bad command line found after parsing: says why, and where the usage is; returns 2.
inline int usage_error(const CLI::App& sub, const std::string& what) {
  std::fprintf(stderr, "strata %s: %s\nRun 'strata %s --help' for its usage.\n", sub.get_name().c_str(), what.c_str(),
               sub.get_name().c_str());
  return 2;
}

// Parses `args` (the words after the program's name) with `strata`, whose subcommands are
// `commands`, and runs the one chosen. --help and --version print on stdout and return 0;
// a bad command line is said on stderr and returns 2.
inline int run_command_line(CLI::App& strata, const std::vector<Command>& commands, std::vector<std::string> args) {
  const Command* chosen = nullptr;
  if (!args.empty())
    for (const Command& c : commands)
      if (c.app->check_name(args[0])) chosen = &c;
  if (chosen && chosen->program) {
    auto dashes = std::find(args.begin(), args.end(), "--");
    if (dashes != args.end()) {
      chosen->program->assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    strata.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return strata.exit(e);  // --help, --version: on stdout
    const std::vector<CLI::App*> subs = strata.get_subcommands();
    if (subs.empty()) {
      std::fprintf(stderr, "strata: %s\nRun 'strata --help' for the subcommands.\n", e.what());
      return 2;
    }
    return usage_error(*subs.front(), e.what());
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  std::fputs(strata.help().c_str(), stderr);
  return 2;
}

// One subcommand alone, as `strata NAME ...` would run it.
inline int run_one_command(Command (*add)(CLI::App&), int argc, char** argv) {
  CLI::App strata("", "strata");
  const Command c = add(strata);
  return run_command_line(strata, {c}, std::vector<std::string>(argv, argv + argc));
}
