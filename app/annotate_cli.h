// Shared by `strata summary` and `strata annotate`: load a trace and annotate it on worker
// threads, showing progress on a terminal for long runs.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <memory>
#include <string>

struct LoadedAnnotation {
  std::unique_ptr<strata::TraceModel> model;
  strata::Annotation annotation;
  std::string error;
};

LoadedAnnotation load_and_annotate(const std::string& path, const char* command);
