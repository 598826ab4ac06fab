// strata summary FILE [--json]
#include "app/cli.h"
#include "app/commands.h"

#include <cstdio>

int cmd_summary(int argc, char** argv) {
  FileArgs args;
  if (int rc = parse_file_args("summary", "strata summary FILE [--json]", true, false, argc, argv, args)) return rc;
  LoadedTrace r = load_for_cli(args.path, "summary", true);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out = args.json ? strata::summary_json(*r.model, r.annotation) : strata::summary_text(*r.model, r.annotation);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
