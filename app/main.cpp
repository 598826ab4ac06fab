// strata: a profiler for deep-learning training traces. The command line is one CLI11 app whose
// subcommands are declared next to what they do (app/commands.h): `strata --help` lists them
// all, `strata SUB --help` prints one's usage, `strata --version` the version.
#include "app/commands.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#ifndef STRATA_VERSION
#error "STRATA_VERSION comes from CMake's project(VERSION)"
#endif

#ifndef STRATA_HAVE_VIEWER
// Built without the viewer (STRATA_BUILD_VIEWER=OFF, or its libraries missing): `strata view`
// is still a subcommand, and says so.
Command add_view(CLI::App& strata) {
  CLI::App* sub = add_subcommand(strata, "view", "the viewer (this strata was built without it)", "strata view ...");
  sub->allow_extras();
  return {sub, [] {
            std::fputs("strata view: this strata was built without the viewer (GLFW, OpenGL, Dear ImGui); "
                       "`strata summary` and `strata info` print what it would show\n",
                       stderr);
            return 1;
          }};
}
#endif

namespace {

const char* kUsage =
    "strata FILE | DIR | FILE1 FILE2 ... [view's options]\n"
    "strata SUBCOMMAND [OPTIONS] ...   (strata SUBCOMMAND --help: its usage and options)\n"
    "strata --version";

const char* kFooter =
    "strata FILE opens a trace in the viewer (without a display: what `strata info FILE` prints).\n"
    "strata DIR, or strata FILE1 FILE2 ..., opens a distributed job, one trace per rank: clocks aligned,\n"
    "stragglers and where their time went, communication per layer (docs/jobs.md); view, info, summary,\n"
    "annotate and whatif take a job too, and `strata summary --merge RANK.json ...` merges per-rank\n"
    "summaries made anywhere. Exit status: 0 done, 1 failed, 2 a bad command line.";

}  // namespace

int main(int argc, char** argv) {
  CLI::App strata("strata " STRATA_VERSION ": a profiler for deep-learning training traces", "strata");
  strata.formatter(std::make_shared<UsageFormatter>(kUsage));
  strata.set_help_flag("-h,--help", "print this help and exit");  // the subcommands' too
  strata.set_version_flag("--version", "strata " STRATA_VERSION, "print strata's version and exit");
  const std::vector<Command> commands = {add_view(strata),    add_info(strata),    add_summary(strata),
                                         add_annotate(strata), add_predict(strata), add_whatif(strata),
                                         add_diff(strata),     add_record(strata),  add_attach(strata)};
  strata.footer(kFooter);  // after the subcommands, which would copy it

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(strata.help().c_str(), stderr);
    return 2;
  }
  if (args[0] == "help") {  // `strata help [SUB]`
    args.erase(args.begin());
    args.insert(args.begin() + (args.empty() ? 0 : 1), "--help");
  }
  bool subcommand = false;
  for (const Command& c : commands) subcommand = subcommand || c.app->check_name(args[0]);
  if (!subcommand && !args[0].starts_with("-")) {
    // `strata FILE | DIR | FILE1 FILE2 ...`: the viewer (without a display: `strata info`).
    // A word that names no file and does not look like a path is a mistyped subcommand.
    std::error_code ec;
    if (!std::filesystem::exists(args[0], ec) && args[0].find_first_of("/.") == std::string::npos) {
      std::fprintf(stderr,
                   "strata: '%s' is neither a subcommand nor a trace file or directory\n"
                   "Run 'strata --help' for the subcommands.\n",
                   args[0].c_str());
      return 2;
    }
#ifdef STRATA_HAVE_VIEWER
    args.insert(args.begin(), viewer_display_available() ? "view" : "info");
#else
    args.insert(args.begin(), "info");
#endif
  }
  return run_command_line(strata, commands, std::move(args));
}
