// Annotation accuracy against the ground truth a trace itself holds: hid= ranges (Hotline's
// traces, Strata's corpus) or, without them, its nn.Module frames.
//
//   strata_bench_annotate_accuracy [--ways] [--dump] [CORPUS_DIR | TRACE.json.gz ...]
//
// With no argument: ../shared/traces/hotline-*, tests/data/torch2's training traces, every
// model of tests/data/corpus-cpu/manifest.json, of tests/data/corpus-cpu-modern (today's
// architectures, for tuning), of tests/data/corpus-cpu-families (families the others lack, for
// tuning), of tests/data/corpus-cpu-heldout (models no rule was tuned on), of
// tests/data/corpus-cpu-variants (variants of those families as their reference code writes
// them, recorded after the rules, measured once, then tuned on), of
// tests/data/corpus-cpu-variants2 to -variants12 (more of them, for tuning), of tests/data/corpus-cpu-objectives
// (training objectives written by hand or composed, for tuning), of tests/data/corpus-cpu-fresh
// (more variants, the check) and of tests/data/corpus-cpu-backward (models of those with their
// autograd sequence numbers: the backward's truth). A directory is a
// corpus with a manifest.json (per model: file, family, split, modules with hid, path, class);
// splits are reported per corpus.
//
// Each trace is annotated "bare" (the truth's ranges, the nn.Module frames and every Python
// frame stripped: all inferred) and scored against its truth tree (core/annotate/accuracy.h),
// one row per model: phase agreement over the truth's phase time (- when the truth has no
// phases), leaf F1 (pairwise, the forward's outermost ops grouped by innermost module call
// against innermost inferred layer), the trivial grouping's F1 (every outermost op its own
// layer: over the leaf ops on CPU traces, over forward kernels grouped by their outermost op
// when the trace has kernels, where it is compared with the kernels' F1, shown beside it),
// block recall (repeated non-leaf module calls some layer holds exactly; how many blocks),
// node precision (layers of two or more ops that are one call or a run of sibling calls; how
// many layers), the share of backward ops placed under a forward layer (by the trace's links, else
// by reverse op order); where the trace has links, the share of the backward ops they place that
// the reverse op order, with them stripped, puts under the same forward layer; and a flag where the compared F1 is below the trivial one. Then, per split,
// the median and the minimum of each figure and how many models meet each goal. `--ways`
// adds rows annotated with the nn.Module frames kept ("modules") and with nothing stripped
// ("visible"). `--dump` prints each trace's first forward, a leaf op a line: the op, its
// innermost module call, its innermost inferred layer; then the blocks no layer holds and the
// layers that are no module call; then each truth phase that the inferred phases do not
// cover whole.
#include "core/annotate/accuracy.h"
#include "core/loader.h"
#include "core/text_format.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#ifndef STRATA_TRACES_DIR
#define STRATA_TRACES_DIR "../shared/traces"
#endif
#ifndef STRATA_TORCH2_DIR
#define STRATA_TORCH2_DIR "tests/data/torch2"
#endif
#ifndef STRATA_CORPUS_DIR
#define STRATA_CORPUS_DIR "tests/data/corpus-cpu"
#endif

namespace {

struct Entry {
  std::string name, path, family = "-", split = "-";
  std::vector<strata::TruthModule> modules;
};

// The models of a corpus's manifest.json; false (with a message) when it cannot be read.
bool read_manifest(const std::string& dir, std::vector<Entry>& out) {
  const std::string path = dir + "/manifest.json";
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(path).get(doc)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), simdjson::error_message(err));
    return false;
  }
  simdjson::dom::array models;
  if (doc["models"].get(models)) {
    std::fprintf(stderr, "%s: no models\n", path.c_str());
    return false;
  }
  for (simdjson::dom::element mo : models) {
    Entry e;
    std::string_view s;
    if (mo["file"].get(s)) continue;
    e.path = dir + "/" + std::string(s);
    e.name = mo["name"].get(s) ? std::filesystem::path(e.path).filename().string() : std::string(s);
    if (!mo["family"].get(s)) e.family = s;
    // Splits are per corpus: tests/data/corpus-cpu's "tune" and "heldout", corpus-cpu-modern's
    // and corpus-cpu-families' "tune", and the fresh models of tests/data/corpus-cpu-heldout
    // and corpus-cpu-fresh, which no rule was tuned on; corpus-cpu-variants' to -variants12's and -objectives' "tune".
    if (!mo["split"].get(s)) e.split = std::filesystem::path(dir).filename().string() + ":" + std::string(s);
    simdjson::dom::array mods;
    if (!mo["modules"].get(mods))
      for (simdjson::dom::element md : mods) {
        strata::TruthModule tm;
        int64_t hid;
        if (md["hid"].get(hid)) continue;
        tm.hid = int32_t(hid);
        if (!md["path"].get(s)) tm.path = s;
        if (!md["class"].get(s)) tm.cls = s;
        e.modules.push_back(std::move(tm));
      }
    out.push_back(std::move(e));
  }
  return true;
}

struct Row {
  std::string split;
  strata::AccuracyScore s;
  double backward_mapped = -1;  // share of backward ops placed under a forward layer; -1: none
  double backward_order = -1;   // with links in the trace: the share reverse op order places as they do
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "median 97.10 min 80.00, 30/35 >= 95.00" over the figures that exist (>= 0).
template <class Get>
std::string figure_line(const std::vector<Row>& rows, Get get, double goal) {
  std::vector<double> v;
  for (const Row& r : rows)
    if (double x = get(r); x >= 0) v.push_back(x);
  if (v.empty()) return "-";
  size_t meet = size_t(std::count_if(v.begin(), v.end(), [&](double x) { return x >= goal - 1e-9; }));
  return strata::strprintf("median %6.2f min %6.2f, %zu/%zu >= %.0f", 100 * median(v), 100 * *std::min_element(v.begin(), v.end()), meet,
                           v.size(), 100 * goal);
}

std::string pct(double x) { return x < 0 ? "-" : strata::strprintf("%.2f", 100 * x); }

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  bool ways = false, dump = false;
  std::vector<Entry> entries;
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ways") {
      ways = true;
    } else if (a == "--dump") {
      dump = true;
    } else if (std::filesystem::is_directory(a)) {
      if (!read_manifest(a, entries)) rc = 1;
    } else {
      entries.push_back({std::filesystem::path(a).filename().string(), a, "-", "-", {}});
    }
  }
  if (entries.empty() && rc == 0) {
    for (const char* n : {"hotline-resnet50-rtx3090.pt.trace.json.gz", "hotline-transformer-rtx3090.pt.trace.json.gz",
                          "hotline-gnn-rtx3090.pt.trace.json.gz"})
      entries.push_back({n, std::string(STRATA_TRACES_DIR) + "/" + n, "hotline", "-", {}});
    for (const char* n : {"resnet18-train-h100.pt.trace.json.gz", "transformer-train-h100.pt.trace.json.gz"})
      entries.push_back({n, std::string(STRATA_TORCH2_DIR) + "/" + n, "torch2", "-", {}});
    if (!read_manifest(STRATA_CORPUS_DIR, entries)) rc = 1;
    for (const char* dir : {STRATA_CORPUS_DIR "-modern", STRATA_CORPUS_DIR "-families", STRATA_CORPUS_DIR "-heldout", STRATA_CORPUS_DIR "-variants",
                            STRATA_CORPUS_DIR "-variants2", STRATA_CORPUS_DIR "-variants3", STRATA_CORPUS_DIR "-variants4",
                            STRATA_CORPUS_DIR "-variants5", STRATA_CORPUS_DIR "-variants6",
                            STRATA_CORPUS_DIR "-variants7", STRATA_CORPUS_DIR "-variants8", STRATA_CORPUS_DIR "-variants9", STRATA_CORPUS_DIR "-variants10", STRATA_CORPUS_DIR "-variants11", STRATA_CORPUS_DIR "-variants12", STRATA_CORPUS_DIR "-objectives", STRATA_CORPUS_DIR "-fresh",
                            STRATA_CORPUS_DIR "-backward"})
      if (std::filesystem::is_directory(dir) && !read_manifest(dir, entries)) rc = 1;
  }
  std::printf("%-42s %-12s %-7s %-7s %7s %7s %7s %-5s %7s %5s %7s %5s %7s %7s %7s\n", "model", "family", "split", "way", "phase%", "leafF1",
              "kernF1", "triv/", "trivial", "", "blocks", "", "nodes", "bwd", "order");
  std::printf("%-42s %-12s %-7s %-7s %7s %7s %7s %-5s %7s %5s %7s %5s %7s %7s %7s\n", "", "", "", "", "", "", "", "over", "", "n", "recall%", "n",
              "prec%", "mapped%", "agree%");
  std::vector<Row> rows;
  for (const Entry& en : entries) {
    strata::LoadResult full = strata::load_trace(en.path);
    if (!full.model) {
      std::fprintf(stderr, "%s\n", full.error().c_str());
      rc = 1;
      continue;
    }
    const strata::GroundTruth truth = strata::ground_truth(*full.model, en.modules.empty() ? nullptr : &en.modules);
    if (!truth.present()) {
      std::printf("%-42s %-12s %-7s no ground truth (hid= ranges or nn.Module frames)\n", en.name.c_str(), en.family.c_str(),
                  en.split.c_str());
      continue;
    }
    struct Way { const char* name; unsigned strip; };
    std::vector<Way> list{{"bare", strata::kStripTruthRanges | strata::kStripModules | strata::kStripStacks}};
    if (ways) list.insert(list.end(), {Way{"modules", strata::kStripTruthRanges}, Way{"visible", 0u}});
    for (Way way : list) {
      if (truth.source == strata::GroundTruth::Source::Modules && way.strip == strata::kStripTruthRanges) continue;  // = visible
      strata::LoadResult stripped;
      if (way.strip) {
        stripped = strata::load_trace_bytes(en.path + " (stripped)", strata::strip_events(*full.model, way.strip));
        if (!stripped.model) {
          std::fprintf(stderr, "%s\n", stripped.error().c_str());
          rc = 1;
          continue;
        }
      }
      const strata::TraceModel& m = way.strip ? *stripped.model : *full.model;
      strata::Annotation a = strata::annotate(m);
      strata::AccuracyScore s = strata::score_against(m, a, truth);
      const std::string blocks = s.blocks ? pct(s.block_recall) : "-", nodes = s.nodes ? pct(s.node_precision) : "-";
      const double mapped =
          a.backward_ops ? double(a.backward_mapped_links + a.backward_mapped_order) / double(a.backward_ops) : -1.0;
      // With links in the trace: how the reverse op order places what the links place.
      double order = -1;
      if (way.strip && !full.model->bwd_to_fwd.empty()) {
        strata::LoadResult unlinked = strata::load_trace_bytes(en.path + " (no links)", strata::strip_events(*full.model, way.strip | strata::kStripLinks));
        if (unlinked.model) order = strata::backward_agreement(m, a, strata::annotate(*unlinked.model)).share();
      }
      std::printf("%-42s %-12s %-7s %-7s %7s %7s %7s %-5s %7s %5llu %7s %5llu %7s %7s %7s%s\n", en.name.c_str(), en.family.c_str(),
                  en.split.c_str(), way.name, pct(s.phase_agreement).c_str(), pct(s.leaf_f1).c_str(),
                  s.baseline_over_kernels ? pct(s.layer_f1).c_str() : "-", s.baseline_over_kernels ? "kern" : "ops",
                  pct(s.baseline_f1).c_str(), static_cast<unsigned long long>(s.blocks), blocks.c_str(),
                  static_cast<unsigned long long>(s.nodes), nodes.c_str(), pct(mapped).c_str(), pct(order).c_str(), s.below_trivial() ? "  BELOW TRIVIAL" : "");
      if (dump) std::printf("%s", strata::truth_dump(m, a, truth, 0).c_str());
      if (s.leaf_ops_unmatched)
        std::printf("    (%llu of %llu leaf ops not found in the annotated trace)\n", static_cast<unsigned long long>(s.leaf_ops_unmatched),
                    static_cast<unsigned long long>(s.leaf_ops));
      if (way.strip == (strata::kStripTruthRanges | strata::kStripModules | strata::kStripStacks))
        rows.push_back({en.split, s, mapped, order});
    }
  }
  // Per split (the bare annotations): each figure's median and minimum, and how many meet its goal.
  std::map<std::string, std::vector<Row>> splits;
  for (const Row& r : rows) splits[r.split].push_back(r);
  for (const auto& [name, v] : splits) {
    size_t below = size_t(std::count_if(v.begin(), v.end(), [](const Row& r) { return r.s.below_trivial(); }));
    std::printf("\n%s (%zu models, bare):\n", name == "-" ? "no split" : name.c_str(), v.size());
    std::printf("  phase agreement  %s\n", figure_line(v, [](const Row& r) { return r.s.phase_agreement; }, 0.99).c_str());
    std::printf("  leaf F1          %s; below trivial: %zu\n", figure_line(v, [](const Row& r) { return r.s.leaf_f1; }, 0.95).c_str(), below);
    std::printf("  block recall     %s\n", figure_line(v, [](const Row& r) { return r.s.blocks ? r.s.block_recall : -1.0; }, 0.9).c_str());
    std::printf("  node precision   %s\n", figure_line(v, [](const Row& r) { return r.s.nodes ? r.s.node_precision : -1.0; }, 0.9).c_str());
    // Backward ops under a forward layer: by the trace's links, else by reverse op order.
    std::printf("  backward mapped  %s\n", figure_line(v, [](const Row& r) { return r.backward_mapped; }, 0.95).c_str());
    // Where the trace has links: the reverse op order's placements against theirs.
    std::printf("  order vs links   %s\n", figure_line(v, [](const Row& r) { return r.backward_order; }, 0.95).c_str());
  }
  std::printf("\n%.2f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return rc;
}
