// strata annotate's output and the summary JSON: valid JSON, tiers present, strata.path on GPU events.
#include "helpers.h"

#include <simdjson.h>

#include <cstdio>
#include <map>

using namespace strata;
using namespace strata::test;

namespace {

bool valid_json(const std::string& s) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  return parser.parse(s).get(doc) == simdjson::SUCCESS;
}

}  // namespace

TEST_CASE("annotated trace: tiers as X events, strata.path on every GPU event, reloadable") {
  auto m = load(torch2_trace("resnet18-train-h100.pt.trace.json.gz"));
  Annotation a = annotate(*m);
  std::string out = annotated_trace_json(*m, a).value();
  REQUIRE(!out.empty());
  CHECK(valid_json(out));
  LoadResult r = load_trace_bytes("annotated.json", out);
  REQUIRE(r.model);
  const TraceModel& o = *r.model;
  std::map<std::string, size_t> cats;
  for (EventId e = 0; e < o.ev.size(); ++e) cats[o.category_names[o.ev.cat[e]]]++;
  CHECK(cats["strata.iteration"] == 2);
  CHECK(cats["strata.phase"] == 14);
  CHECK(cats["strata.layer"] > 100);
  CHECK(o.ev.size() == m->ev.size() + cats["strata.iteration"] + cats["strata.phase"] + cats["strata.layer"]);
  size_t with_path = 0, gpu = 0;
  for (EventId e = 0; e < o.ev.size(); ++e) {
    if (!is_gpu_cat(o.ev.category(e))) continue;
    ++gpu;
    std::string_view src = o.source_of(e);
    if (src.find("\"strata.path\":\"Iteration ") != std::string_view::npos) ++with_path;
  }
  CHECK(gpu > 700);
  CHECK(with_path >= 724);
}

TEST_CASE("annotated trace: .gz output, odd names stay valid JSON") {
  STRATA_REQUIRE_TRACE(p, "hotline-transformer-rtx3090.pt.trace.json.gz");
  auto m = load(p);
  Annotation a = annotate(*m);
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/strata-annotate-test.json.gz";
  CHECK(write_annotated_trace(*m, a, path).is_ok());
  LoadResult r = load_trace(path);
  REQUIRE(r.model);
  size_t layers = 0;
  for (EventId e = 0; e < r.model->ev.size(); ++e) layers += r.model->category_names[r.model->ev.cat[e]] == "strata.layer";
  CHECK(layers > 100);
  std::remove(path.c_str());
}

TEST_CASE("every trace annotates, summarizes and exports to valid JSON") {
  std::vector<std::string> files;
  for (const char* f : {"mlp-train-nosteps-h100.pt.trace.json.gz", "resnet18-infer-h100.pt.trace.json.gz",
                        "resnet18-train-h100.pt.trace.json.gz", "transformer-train-h100.pt.trace.json.gz"})
    files.push_back(torch2_trace(f));
  for (const auto& f : trace_folder_files(false))  // tests/data/traces and what only ../shared/traces has
    if (f.extension() == ".gz") files.push_back(f.string());
  CHECK(files.size() >= 4);
  for (auto& f : files) {
    CAPTURE(f);
    auto m = load(f);
    Annotation a = annotate(*m);
    check_tree(a.tree);
    CHECK(valid_json(summary_json(*m, a)));
    std::string out = annotated_trace_json(*m, a).value();
    CHECK(valid_json(out));
  }
}

TEST_CASE("odd input: empty and CPU-only traces annotate with notes") {
  LoadResult r = load_trace_bytes("empty.json", "{\"traceEvents\":[]}");
  REQUIRE(r.model);
  Annotation a = annotate(*r.model);
  CHECK(a.iterations.empty());
  CHECK(!a.notes.empty());
  CHECK(valid_json(summary_json(*r.model, a)));
  CHECK(valid_json(annotated_trace_json(*r.model, a).value()));
  LoadResult one = load_trace_bytes(
      "one.json", "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\\\"q\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}]");
  REQUIRE(one.model);
  Annotation b = annotate(*one.model);
  CHECK(b.iterations.size() == 1);
  CHECK(valid_json(annotated_trace_json(*one.model, b).value()));
}
