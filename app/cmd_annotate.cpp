// strata annotate FILE -o OUT.json[.gz]
#include "app/annotate_cli.h"
#include "app/commands.h"

#include <cstdio>
#include <string_view>

int cmd_annotate(int argc, char** argv) {
  std::string path, out;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "-o" || a == "--output") && i + 1 < argc) out = argv[++i];
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata annotate: unknown option '%s'\nusage: strata annotate FILE -o OUT.json[.gz]\n", argv[i]);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "strata annotate: one file at a time\n");
      return 2;
    }
  }
  if (path.empty() || out.empty()) {
    std::fprintf(stderr, "usage: strata annotate FILE -o OUT.json[.gz]\n");
    return 2;
  }
  LoadedAnnotation r = load_and_annotate(path, "annotate");
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
