// `--model FILE`: a model's `print(model)` text, its leaf modules in definition order, and
// their alignment with the layer units inferred from a forward pass's ops, so that inferred
// layers carry the model's own names ("layer3.1.conv2") as Hotline's torchinfo summaries do.
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

bool parse_model_text(std::string_view text, std::vector<ModelLeaf>& out, std::string& error) {
  out.clear();
  // The open modules. A ranged one ("(0-2): 3 x Block(") is written once, as its first index:
  // its leaves are repeated for the others when it closes.
  struct Open { std::string parent, path; int first = 0, last = 0; bool ranged = false; std::vector<ModelLeaf> leaves; };
  std::vector<Open> stack;
  size_t line_no = 0;
  bool root_seen = false;
  auto join = [](const std::string& a, std::string_view b) { return a.empty() ? std::string(b) : a + "." + std::string(b); };
  auto add = [&](ModelLeaf l) { (stack.empty() ? out : stack.back().leaves).push_back(std::move(l)); };
  auto fail = [&](const std::string& why) {
    error = "line " + std::to_string(line_no) + ": " + why;
    return false;
  };
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view s = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (s.empty()) continue;
    if (s == ")") {
      if (stack.empty()) return fail("')' closes nothing");
      Open o = std::move(stack.back());
      stack.pop_back();
      for (int i = o.first; i <= o.last; ++i)
        for (const ModelLeaf& l : o.leaves) {
          if (!o.ranged || i == o.first) {
            add(l);
            continue;
          }
          const std::string to = join(o.parent, std::to_string(i));
          add({to + l.path.substr(o.path.size()), l.type});
        }
      continue;
    }
    ModuleLine ml;
    if (!parse_line(s, ml)) return fail("not a module as print(model) writes one: '" + std::string(s.substr(0, 80)) + "'");
    if (ml.name.empty()) {  // the root's line
      if (root_seen || !stack.empty()) return fail("a second model");
      root_seen = true;
      if (ml.opens) stack.push_back({});
      else out.push_back({"", std::string(ml.type)});
      continue;
    }
    const std::string parent = stack.empty() ? std::string() : stack.back().path;
    const std::string path = join(parent, ml.ranged ? std::to_string(ml.first) : std::string(ml.name));
    if (ml.opens) {
      stack.push_back({parent, path, ml.ranged ? ml.first : 0, ml.ranged ? ml.last : 0, ml.ranged, {}});
    } else if (ml.ranged) {
      for (int i = ml.first; i <= ml.last; ++i) add({join(parent, std::to_string(i)), std::string(ml.type)});
    } else {
      add({path, std::string(ml.type)});
    }
  }
  if (!stack.empty()) return fail("the text ends with " + std::to_string(stack.size()) + " module(s) still open");
  if (out.empty()) return fail("no modules");
  return true;
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
