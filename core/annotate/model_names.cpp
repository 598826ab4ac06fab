// `--model FILE`: a model's `print(model)` text as its module tree (every module's attribute
// path, type and children in definition order) and its leaf modules, and the leaves'
// alignment with the layer units inferred from a forward pass's ops, so that inferred layers
// carry the model's own names ("layer3.1.conv2") as Hotline's torchinfo summaries do. Layers
// from nn.Module frames are renamed by the tree in module_paths.cpp.
#include "core/annotate/internal.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace strata {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A parsed line "(name): Type(args)" / "(a-b): N x Type(" / "Type(" (the root).
struct ModuleLine {
  std::string_view name;  // "" for the root
  std::string_view type;
  int first = 0, last = 0;  // a "(a-b): N x Type" range (newer PyTorch folds repeated modules so)
  bool ranged = false;
  bool opens = false;  // its children follow on the next lines
};

bool parse_line(std::string_view line, ModuleLine& out) {
  std::string_view s = trim(line);
  if (s.starts_with("(")) {
    size_t close = s.find("): ");
    if (close == std::string_view::npos) return false;
    out.name = s.substr(1, close - 1);
    s = s.substr(close + 3);
    size_t dash = out.name.find('-');
    if (dash != std::string_view::npos && dash > 0) {
      out.ranged = true;
      out.first = std::atoi(std::string(out.name.substr(0, dash)).c_str());
      out.last = std::atoi(std::string(out.name.substr(dash + 1)).c_str());
      if (out.last < out.first || out.last - out.first > 100000) return false;
      size_t x = s.find(" x ");
      if (x != std::string_view::npos) s = s.substr(x + 3);
    }
  }
  size_t paren = s.find('(');
  if (paren == std::string_view::npos || paren == 0) return false;
  out.type = s.substr(0, paren);
  for (char ch : out.type)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.')) return false;
  // Balanced on the line: a leaf. Else its children follow.
  int depth = 0;
  for (char ch : s.substr(paren)) depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
  out.opens = depth > 0;
  return true;
}

}  // namespace

Result<std::vector<ModelModule>> parse_model_tree(std::string_view text) {
  std::vector<ModelModule> out;
  // The open modules. A ranged one ("(0-2): 3 x Block(") is written once, as its first index:
  // its subtree is copied for the others when it closes.
  struct Open { int32_t node; int first = 0, last = 0; bool ranged = false, implicit = false; };
  std::vector<Open> stack;
  size_t line_no = 0;
  auto join = [](const std::string& a, std::string_view b) { return a.empty() ? std::string(b) : a + "." + std::string(b); };
  auto fail = [&](const std::string& why) { return Status::invalid("line " + std::to_string(line_no) + ": " + why); };
  auto add = [&](int32_t parent, std::string path, std::string_view type) {
    const auto id = int32_t(out.size());
    out.push_back({std::move(path), std::string(type), parent, {}});
    if (parent >= 0) out[size_t(parent)].children.push_back(id);
    return id;
  };
  // Copies the subtree of `node`, [node, end) (the last one added under its parent), as
  // sibling index `index`, after everything added so far.
  auto copy_as = [&](int32_t node, size_t end, int index) {
    const auto from = size_t(node);
    const int32_t parent = out[from].parent;
    const std::string old_path = out[from].path;
    const std::string new_path = join(parent >= 0 ? out[size_t(parent)].path : std::string(), std::to_string(index));
    const auto shift = int32_t(out.size() - from);
    if (parent >= 0) out[size_t(parent)].children.push_back(int32_t(out.size()));
    for (size_t k = from; k < end; ++k) {
      ModelModule c = out[k];
      c.path = new_path + c.path.substr(old_path.size());
      c.parent = k == from ? parent : c.parent + shift;
      for (int32_t& ch : c.children) ch += shift;
      out.push_back(std::move(c));
    }
  };
  bool root_seen = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view s = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (s.empty()) continue;
    if (s == ")") {
      if (stack.empty() || stack.back().implicit) return fail("')' closes nothing");
      const Open o = stack.back();
      stack.pop_back();
      const size_t end = out.size();
      if (o.ranged)
        for (int i = o.first + 1; i <= o.last; ++i) copy_as(o.node, end, i);
      continue;
    }
    ModuleLine ml;
    if (!parse_line(s, ml)) return fail("not a module as print(model) writes one: '" + std::string(s.substr(0, 80)) + "'");
    if (ml.name.empty()) {  // the root's line
      if (root_seen || !stack.empty()) return fail("a second model");
      root_seen = true;
      const int32_t root = add(-1, std::string(), ml.type);
      if (ml.opens) stack.push_back({root});
      continue;
    }
    if (stack.empty() && root_seen) return fail("a module after the model's closing ')'");
    if (stack.empty()) {  // a fragment without the model's line: a root of no type holds it
      root_seen = true;
      stack.push_back({add(-1, std::string(), std::string_view()), 0, 0, false, true});
    }
    const int32_t parent = stack.back().node;
    const std::string parent_path = out[size_t(parent)].path;
    if (ml.opens) {
      const int32_t id = add(parent, join(parent_path, ml.ranged ? std::to_string(ml.first) : std::string(ml.name)), ml.type);
      stack.push_back({id, ml.first, ml.last, ml.ranged});
    } else if (ml.ranged) {
      for (int i = ml.first; i <= ml.last; ++i) add(parent, join(parent_path, std::to_string(i)), ml.type);
    } else {
      add(parent, join(parent_path, ml.name), ml.type);
    }
  }
  if (stack.size() == 1 && stack.back().implicit) stack.clear();
  if (!stack.empty()) return fail("the text ends with " + std::to_string(stack.size()) + " module(s) still open");
  if (out.empty()) return fail("no modules");
  return out;
}

std::vector<ModelLeaf> model_leaves(const std::vector<ModelModule>& tree) {
  std::vector<ModelLeaf> out;
  for (const ModelModule& mm : tree)
    if (mm.children.empty()) out.push_back({mm.path, mm.type});
  return out;
}

Result<std::vector<ModelLeaf>> parse_model_text(std::string_view text) {
  Result<std::vector<ModelModule>> tree = parse_model_tree(text);
  if (!tree.is_ok()) return tree.status();
  return model_leaves(tree.value());
}

Status set_model_text(AnnotateOptions& o, std::string_view text) {
  Result<std::vector<ModelModule>> tree = parse_model_tree(text);
  if (!tree.is_ok()) return tree.status();
  o.model = model_leaves(tree.value());
  o.model_tree = std::move(tree.value());
  return Status::ok();
}

namespace annot {

std::vector<int32_t> align_to_model(const std::vector<std::string_view>& unit_kinds, const std::vector<std::string_view>& leaf_kinds) {
  const size_t n = unit_kinds.size(), m = leaf_kinds.size();
  if (n == 0 || m == 0 || n * m > (size_t(64) << 20)) return {};
  // lcs[i][j]: the longest common subsequence of units[i..] and leaves[j..] (row-major, (n+1)·(m+1)).
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = unit_kinds[i] == leaf_kinds[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::vector<int32_t> out(n, -1);
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (unit_kinds[i] == leaf_kinds[j] && at(i, j) == at(i + 1, j + 1) + 1) out[i++] = int32_t(j++);
    else if (at(i + 1, j) >= at(i, j + 1)) ++i;
    else ++j;
  }
  return out;
}

}  // namespace annot

}  // namespace strata
