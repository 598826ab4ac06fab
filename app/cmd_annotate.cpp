// strata annotate FILE -o OUT.json[.gz]
// strata annotate DIR | FILE1 FILE2 ... -o OUT_DIR   (a job: each rank's trace, annotated, under its own name)
#include "app/cli.h"
#include "app/commands.h"

#include <cstdio>
#include <filesystem>

namespace {

int annotate_one(const std::string& in, const std::string& out, const strata::AnnotateOptions& options) {
  LoadedTrace r = load_for_cli(in, "annotate", &options);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  const strata::Status written = strata::write_annotated_trace(*r.model, r.annotation, out);
  if (!written.is_ok()) {
    std::fprintf(stderr, "strata annotate: %s\n", written.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "strata annotate: wrote %s (%zu iterations, %zu annotation nodes, %llu of %llu GPU ops annotated)\n",
               out.c_str(), r.annotation.iterations.size(), r.annotation.tree.size(),
               static_cast<unsigned long long>(r.annotation.gpu_ops_annotated),
               static_cast<unsigned long long>(r.annotation.gpu_ops));
  return 0;
}

struct AnnotateArgs {
  std::vector<std::string> inputs;
  std::string output;  // a file for one trace, a directory for a job
  std::string model;
  strata::AnnotateOptions annotate;
};

int run_annotate(const CLI::App& sub, AnnotateArgs& args) {
  if (!apply_model_option(sub, args.model, args.annotate)) return 1;
  if (single_file(args.inputs)) return annotate_one(args.inputs[0], args.output, args.annotate);
  const strata::Result<std::vector<strata::JobFile>> files = strata::job_files(args.inputs);
  if (!files.is_ok()) {
    std::fprintf(stderr, "strata annotate: %s\n", files.status().message().c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(args.output, ec);
  if (!std::filesystem::is_directory(args.output, ec)) return usage_error(sub, "-o " + args.output + " must be a directory for a job");
  int rc = 0;
  for (const strata::JobFile& f : files.value()) {
    std::string name = std::filesystem::path(f.path).filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    rc |= annotate_one(f.path, (std::filesystem::path(args.output) / (name + ".gz")).string(), args.annotate);
  }
  return rc;
}

}  // namespace

Command add_annotate(CLI::App& strata) {
  auto args = std::make_shared<AnnotateArgs>();
  CLI::App* sub = add_subcommand(strata, "annotate",
                                 "the trace plus iteration/phase/layer tracks, for Perfetto",
                                 "strata annotate FILE -o OUT.json[.gz] [--model MODEL.txt]\n"
                                 "strata annotate DIR | FILE1 FILE2 ... -o OUT_DIR   (a job: each rank's trace, annotated)");
  add_inputs(*sub, args->inputs);
  sub->add_option("-o,--output", args->output, "where to write (.gz: gzipped); a directory for a job")
      ->type_name("OUT")
      ->required();
  add_model_option(*sub, args->model);
  return {sub, [sub, args] { return run_annotate(*sub, *args); }};
}
