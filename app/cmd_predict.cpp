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

const char* kUsage =
    "strata predict FILE... [--batch N,N,...] [--json]   (traces of one model at different batch sizes; "
    "--batch gives each file's when the traces record no input shapes)";

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

}  // namespace

int cmd_predict(int argc, char** argv) {
  FileArgs args;
  ArgSpec spec{"predict", kUsage, true};
  spec.batch = true;
  spec.model = true;
  if (int rc = parse_file_args(spec, argc, argv, args)) return rc;
  std::vector<int64_t> batches;
  if (!args.batch.empty() && (!parse_batches(args.batch, batches) || batches.size() != args.inputs.size())) {
    std::fprintf(stderr, "strata predict: --batch wants one batch size per file, comma-separated (%zu files)\n", args.inputs.size());
    return 2;
  }
  std::vector<strata::BatchPoint> points;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    LoadedTrace r = load_for_cli(args.inputs[i], "predict", &args.annotate);
    if (!r.model) {
      std::fprintf(stderr, "strata: %s\n", r.error.c_str());
      return 1;
    }
    strata::BatchPoint b;
    std::string error;
    if (!strata::batch_point(*r.model, r.annotation, batches.empty() ? -1 : batches[i], b, error)) {
      std::fprintf(stderr, "strata predict: %s: %s\n", args.inputs[i].c_str(), error.c_str());
      return 1;
    }
    points.push_back(std::move(b));
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
