// A real trace loaded and annotated, as the diff and compare tests open each side of a pair.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>

namespace strata::test {

struct AnnotatedRun {
  std::unique_ptr<TraceModel> model;
  Annotation annotation;
};

inline AnnotatedRun open_annotated(const std::filesystem::path& p) {
  LoadResult r = load_trace(p.string());
  INFO(p.string() << ": " << r.error());
  REQUIRE(r.model);
  AnnotatedRun run{std::move(r.model), {}};
  run.annotation = annotate(*run.model);
  return run;
}

}  // namespace strata::test
