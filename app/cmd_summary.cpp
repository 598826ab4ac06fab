// strata summary FILE [--json] [--item PATH]
#include "app/cli.h"
#include "app/commands.h"

#include <cstdio>

int cmd_summary(int argc, char** argv) {
  FileArgs args;
  const char* usage = "strata summary FILE [--json] [--item \"Iteration 3/Backward\"]";
  if (int rc = parse_file_args({"summary", usage, true, false, true}, argc, argv, args)) return rc;
  LoadedTrace r = load_for_cli(args.path, "summary", true);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out;
  if (!args.item.empty()) {
    // One item's figures, as the viewer's details panel shows them.
    strata::NodeId n = strata::find_node(r.annotation.tree, args.item);
    if (n == strata::kNoNode) {
      std::fprintf(stderr, "strata summary: no annotation item '%s'\n", args.item.c_str());
      return 1;
    }
    out = args.json ? strata::work_json(r.annotation.tree.path(n), strata::node_work(*r.model, r.annotation, n))
                    : strata::work_text(r.annotation.tree.path(n), strata::node_work(*r.model, r.annotation, n));
  } else {
    out = args.json ? strata::summary_json(*r.model, r.annotation) : strata::summary_text(*r.model, r.annotation);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
