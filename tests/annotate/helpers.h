// Loading the real traces the annotation tests use.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace strata::test {

// A real trace by name: tests/data/traces, else ../shared/traces; empty when neither has it
// (STRATA_REQUIRE_TRACE skips the test case then).
inline std::string shared_trace(const char* name) { return find_trace(name).string(); }
inline std::string torch2_trace(const char* name) { return std::string(STRATA_TORCH2_DIR) + "/" + name; }
inline bool exists(const std::string& p) { return std::filesystem::exists(p); }

inline std::unique_ptr<TraceModel> load(const std::string& path) {
  LoadResult r = load_trace(path);
  INFO(path << ": " << r.error());
  REQUIRE(r.model);
  return std::move(r.model);
}

inline std::vector<std::string> child_names(const AnnotationTree& t, NodeId n) {
  std::vector<std::string> out;
  for (NodeId c : t.children(n)) out.emplace_back(t.name_of(c));
  return out;
}

inline bool has_layer(const AnnotationTree& t, std::string_view name) {
  for (NodeId i = 0; i < t.size(); ++i)
    if (t.kind[i] == NodeKind::Layer && t.name_of(i) == name) return true;
  return false;
}

// Structural invariants every annotation must keep.
inline void check_tree(const AnnotationTree& t) {
  REQUIRE(t.size() >= 1);
  CHECK(t.kind[0] == NodeKind::Root);
  for (NodeId i = 1; i < t.size(); ++i) {
    NodeId p = t.parent[i];
    REQUIRE(p < i);
    CHECK(t.subtree_end[i] <= t.subtree_end[p]);
    CHECK(t.depth[i] == t.depth[p] + 1);
    CHECK(t.end[i] >= t.begin[i]);
    CHECK(t.kernels[i] <= t.kernels[p]);
  }
}

}  // namespace strata::test
