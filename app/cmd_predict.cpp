// strata predict FILE... [--batch N,...] [--json]
// Traces of one model at several batch sizes (or one): memory at the peak and iteration time
// against the batch, the largest batch that fits the device, the throughput curve.
#include "app/cli.h"
#include "app/commands.h"
#include "core/json_writer.h"
#include "core/predict.h"

#include <cstdio>
#include <cstdlib>

namespace {

// "8,16,32" → {8, 16, 32}; false on anything else.
bool parse_batches(const std::string& s, std::vector<int64_t>& out) {
  const char* p = s.c_str();
  while (*p) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 1) return false;
    out.push_back(v);
    p = end;
    if (*p == ',') ++p;
    else if (*p) return false;
  }
  return !out.empty();
}

struct PredictArgs {
  std::vector<std::string> inputs;
  std::string batch;  // --batch: batch sizes, one per input
  std::string model;
  strata::AnnotateOptions annotate;
  bool json = false;
};

int run_predict(const CLI::App& sub, PredictArgs& args) {
  std::vector<int64_t> batches;
  if (!args.batch.empty() && (!parse_batches(args.batch, batches) || batches.size() != args.inputs.size()))
    return usage_error(sub, "--batch wants one batch size per file, comma-separated (" + std::to_string(args.inputs.size()) +
                                " files)");
  if (!apply_model_option(sub, args.model, args.annotate)) return 1;
  std::vector<strata::BatchPoint> points;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    LoadedTrace r = load_for_cli(args.inputs[i], "predict", &args.annotate);
    if (!r.model) {
      std::fprintf(stderr, "strata: %s\n", r.error.c_str());
      return 1;
    }
    strata::Result<strata::BatchPoint> b = strata::batch_point(*r.model, r.annotation, batches.empty() ? -1 : batches[i]);
    if (!b.is_ok()) {
      std::fprintf(stderr, "strata predict: %s: %s\n", args.inputs[i].c_str(), b.status().message().c_str());
      return 1;
    }
    points.push_back(std::move(b.value()));
  }
  const strata::BatchPrediction p = strata::predict_batch(std::move(points));
  if (!args.json) {
    const std::string text = strata::prediction_text(p);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  strata::JsonWriter w;
  w.begin_object();
  strata::write_prediction_fields(w, p);
  w.end_object();
  std::printf("%s\n", w.str().c_str());
  return 0;
}

}  // namespace

Command add_predict(CLI::App& strata) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = add_subcommand(strata, "predict",
                                 "memory at the peak and iteration time against the batch size, the\n"
                                 "largest batch that fits, samples/s (docs/predict.md)",
                                 "strata predict FILE... [--batch N,N,...] [--json] [--model MODEL.txt]\n"
                                 "                     (one trace: an estimate from it alone)");
  sub->add_option("FILE", args->inputs, "traces of one model, one per batch size")->type_name("")->required();
  sub->add_option("--batch", args->batch, "each file's batch size, when the traces record no input shapes")
      ->type_name("N,N,...");
  sub->add_flag("--json", args->json, "JSON (docs/predict.md) instead of text");
  add_model_option(*sub, args->model);
  return {sub, [sub, args] { return run_predict(*sub, *args); }};
}
