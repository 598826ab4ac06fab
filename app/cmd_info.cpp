// strata info FILE [--json]
#include "app/cli.h"
#include "app/commands.h"
#include "core/trace_info.h"

#include <cstdio>

int cmd_info(int argc, char** argv) {
  FileArgs args;
  if (int rc = parse_file_args({"info", "strata info FILE [--json]", true}, argc, argv, args)) return rc;
  LoadedTrace r = load_for_cli(args.path, "info", false);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out = args.json ? strata::info_json(*r.model) : strata::info_text(*r.model);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
