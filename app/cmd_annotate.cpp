// strata annotate FILE -o OUT.json[.gz]
#include "app/cli.h"
#include "app/commands.h"

#include <cstdio>

int cmd_annotate(int argc, char** argv) {
  FileArgs args;
  if (int rc = parse_file_args({"annotate", "strata annotate FILE -o OUT.json[.gz]", false, true}, argc, argv, args))
    return rc;
  const std::string& out = args.output;
  LoadedTrace r = load_for_cli(args.path, "annotate", true);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string err = strata::write_annotated_trace(*r.model, r.annotation, out);
  if (!err.empty()) {
    std::fprintf(stderr, "strata annotate: %s\n", err.c_str());
    return 1;
  }
  std::fprintf(stderr, "strata annotate: wrote %s (%zu iterations, %zu annotation nodes, %llu of %llu GPU ops annotated)\n",
               out.c_str(), r.annotation.iterations.size(), r.annotation.tree.size(),
               static_cast<unsigned long long>(r.annotation.gpu_ops_annotated),
               static_cast<unsigned long long>(r.annotation.gpu_ops));
  return 0;
}
