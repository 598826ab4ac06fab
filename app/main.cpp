// strata: a profiler for deep-learning training traces.
#include "app/commands.h"

#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: strata [FILE]                 open a trace (prints its summary until the viewer is built)\n"
      "       strata info FILE [--json]     what a trace holds: events, tracks, steps, devices, load figures\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "info") return cmd_info(argc - 1, argv + 1);
  if (cmd == "record") return cmd_record(argc - 1, argv + 1);
  if (cmd == "attach") return cmd_attach(argc - 1, argv + 1);
  // A bare file argument opens it.
  if (!cmd.empty() && cmd[0] != '-') return cmd_info(argc, argv);
  std::fprintf(stderr, "strata: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
