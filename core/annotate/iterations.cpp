// Iterations from what the program said, most specific first: ProfilerStep#N ranges (in any
// category), ranges it named as iterations (record_function("train_step"), the agent's NVTX
// ranges), a serving engine's step ranges ("step[EXTEND …]", "execute_model"), repeated
// outermost ranges at step level, the once-per-iteration markers PyTorch emits
// (Optimizer.step#, enumerate(DataLoader)#), the calls of the top-level module. Only where
// the program said nothing: the repeating sequence of the main thread's top-level work, never
// cutting through a module call or a named range; else the whole trace is one iteration.
#include "core/annotate/internal.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace strata::annot {

namespace {

bool is_step(const Context& c, EventId e) { return c.m.is_profiler_step(e); }

std::string step_name(std::string_view n) {
  n = strip_prefix(n, kProfilerStepPrefix);
  return "Iteration " + std::string(n);
}

// Items (not ProfilerStep ranges) whose start lies in [b, e).
std::vector<EventId> items_in(const Context& c, Ns b, Ns e) {
  std::vector<EventId> out;
  auto& st = c.m.ev.start;
  auto lo = std::lower_bound(c.main_items.begin(), c.main_items.end(), b,
                             [&](EventId x, Ns t) { return st[x] < t; });
  for (auto it = lo; it != c.main_items.end() && st[*it] < e; ++it)
    if (!is_step(c, *it)) out.push_back(*it);
  return out;
}

IterWork make(const Context& c, std::string name, Ns b, Ns e, bool partial = false) {
  IterWork w;
  w.it.name = std::move(name);
  w.it.begin = b;
  w.it.end = e;
  w.it.partial = partial;
  w.items = items_in(c, b, e);
  return w;
}

Ns item_end(const Context& c, const std::vector<EventId>& v) {
  Ns e = 0;
  for (EventId x : v) e = std::max(e, c.m.ev.end(x));
  return e;
}

// Iterations bounded by a marker that occurs once per iteration. `after` = the iteration
// ends with the marker (Optimizer.step); else it starts with it (the DataLoader's next()).
std::vector<IterWork> by_marker(const Context& c, const std::vector<EventId>& marks, bool after, Annotation& a) {
  std::vector<IterWork> out;
  auto& ev = c.m.ev;
  auto first_after = [&](Ns t) {
    for (EventId x : c.main_items)
      if (ev.start[x] >= t && !is_step(c, x)) return ev.start[x];
    return t;
  };
  Ns trace_b = c.main_items.empty() ? c.m.time_begin : ev.start[c.main_items.front()];
  Ns trace_e = c.main_items.empty() ? c.m.time_end : item_end(c, c.main_items);
  std::vector<Ns> bounds;
  if (after) {
    bounds.push_back(trace_b);
    for (size_t i = 0; i + 1 < marks.size(); ++i) bounds.push_back(first_after(ev.end(marks[i])));
    bounds.push_back(ev.end(marks.back()));
  } else {
    for (EventId x : marks) bounds.push_back(ev.start[x]);
    bounds.push_back(trace_e);
  }
  // Extend the last to backward work that ends later (not for `after`: it ends at the step).
  size_t n = bounds.size() - 1;
  std::vector<size_t> counts;
  for (size_t i = 0; i < n; ++i) counts.push_back(items_in(c, bounds[i], bounds[i + 1]).size());
  std::vector<size_t> sorted = counts;
  std::sort(sorted.begin(), sorted.end());
  size_t median = sorted[sorted.size() / 2];
  for (size_t i = 0; i < n; ++i) {
    bool partial = counts[i] * 10 < median * 8;
    out.push_back(make(c, "Iteration " + std::to_string(i), bounds[i], bounds[i + 1], partial));
  }
  if (!out.empty() && after && bounds.front() < bounds[1] && out.front().it.partial)
    a.notes.push_back("the first iteration is partial (the trace starts inside it)");
  if (after) {
    auto tail = items_in(c, bounds.back(), INT64_MAX);
    size_t launching = 0;
    for (EventId x : tail)
      if (c.m.ev.category(x) == Cat::CpuOp) ++launching;
    if (launching * 10 >= median && launching > 0) {
      out.push_back(make(c, "Iteration " + std::to_string(n), bounds.back(), trace_e, true));
      a.notes.push_back("the last iteration is partial (the trace ends inside it)");
    } else if (!tail.empty()) {
      a.notes.push_back(std::to_string(tail.size()) + " top-level events after the last iteration are in no iteration");
    }
  }
  return out;
}

// The repeating period of the main thread's top-level sequence, from a name that occurs at a
// nearly constant stride (a repetition may hold an op or two more or less: the profiler drops
// or merges short events). Returns the anchor positions (iteration starts), empty if none.
std::vector<size_t> periodic(const Context& c, const std::vector<EventId>& seq) {
  size_t L = seq.size();
  if (L < 4) return {};
  std::unordered_map<StrId, std::vector<uint32_t>> pos;
  for (size_t i = 0; i < L; ++i) pos[c.m.ev.name[seq[i]]].push_back(uint32_t(i));
  size_t best_cover = 0, best_p = 0;
  const std::vector<uint32_t>* best = nullptr;
  for (auto& [name, v] : pos) {
    if (v.size() < 2 || v.size() > L / 2) continue;
    std::vector<uint32_t> strides;
    for (size_t i = 1; i < v.size(); ++i) strides.push_back(v[i] - v[i - 1]);
    std::vector<uint32_t> sorted = strides;
    std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
    const size_t p = sorted[sorted.size() / 2];
    const size_t tolerance = std::max<size_t>(2, p / 50);
    bool regular = p >= 2;
    for (uint32_t d : strides) regular = regular && (d > p ? d - p : p - d) <= tolerance;
    if (!regular) continue;
    size_t cover = v.back() - v.front() + p;
    if (cover > best_cover || (cover == best_cover && p > best_p)) {
      best_cover = cover;
      best_p = p;
      best = &v;
    }
  }
  if (!best || best_cover * 2 < L) return {};
  // The sequence must repeat, not only the anchor: consecutive periods hold mostly the same names.
  size_t same = 0, total = 0;
  for (size_t k = 0; k + 2 < best->size() + 1 && k + 1 < best->size(); ++k) {
    std::unordered_map<StrId, int> count;
    for (uint32_t i = (*best)[k]; i < (*best)[k + 1]; ++i) ++count[c.m.ev.name[seq[i]]];
    uint32_t next_end = k + 2 < best->size() ? (*best)[k + 2] : uint32_t(std::min(L, size_t((*best)[k + 1]) + best_p));
    for (uint32_t i = (*best)[k + 1]; i < next_end; ++i, ++total)
      if (int& n = count[c.m.ev.name[seq[i]]]; n > 0) --n, ++same;
  }
  if (total == 0 || same * 10 < total * 8) return {};
  // Rotation: start each iteration at the offset preceded by the longest idle gaps.
  auto& ev = c.m.ev;
  size_t best_r = 0;
  Ns best_gap = -1;
  for (size_t r = 0; r < best_p; ++r) {
    Ns gap = 0;
    for (uint32_t p0 : *best) {
      size_t i = p0 + r;
      if (i == 0 || i >= L) continue;
      Ns prev_end = 0;
      for (size_t k = i; k-- > 0 && k + 8 > i;) prev_end = std::max(prev_end, ev.end(seq[k]));
      gap += std::max<Ns>(0, ev.start[seq[i]] - prev_end);
    }
    if (gap > best_gap) {
      best_gap = gap;
      best_r = r;
    }
  }
  std::vector<size_t> starts;
  for (uint32_t p0 : *best)
    if (p0 + best_r < L) starts.push_back(p0 + best_r);
  return starts;
}

}  // namespace

// The program's outermost ranges on the main thread: user ranges that no other range (but a
// ProfilerStep), module frame or op encloses. Steps and phases are said at this level.
namespace {

// A name with its numbers left out, so that "step 3" and "step 4" are one kind of range.
std::string without_digits(std::string_view n) {
  std::string o;
  for (char ch : clean_range_name(n))
    if (ch < '0' || ch > '9') o += ch;
  return o;
}

// Repeated outermost ranges at step level: one name (numbers aside) that says no phase, seen
// at least twice, never overlapping itself, and together covering most of the top-level ops'
// time from its first start to its last end. The best covering such name, or empty.
std::vector<EventId> step_level_ranges(const Context& c, const std::vector<EventId>& outer) {
  auto& ev = c.m.ev;
  std::unordered_map<std::string, std::vector<EventId>> groups;
  for (EventId e : outer)
    if (!read_range_name(c.name(e)).phase) groups[without_digits(c.name(e))].push_back(e);
  std::vector<EventId> best;
  double best_cover = 0;
  for (auto& [name, v] : groups) {
    if (v.size() < 2) continue;
    bool apart = true;
    for (size_t i = 1; i < v.size() && apart; ++i) apart = ev.start[v[i]] >= ev.end(v[i - 1]);
    if (!apart) continue;
    Ns b = ev.start[v.front()], e = ev.end(v.back()), in = 0, all = 0;
    for (EventId x : c.main_items) {
      if (!c.is_root(x) || ev.start[x] < b || ev.start[x] >= e) continue;
      all += ev.dur[x];
      auto it = std::upper_bound(v.begin(), v.end(), ev.start[x], [&](Ns t, EventId r) { return t < ev.start[r]; });
      if (it != v.begin() && ev.start[x] < ev.end(*(it - 1))) in += ev.dur[x];
    }
    double cover = all > 0 ? double(in) / double(all) : 0.0;
    if (cover >= 0.6 && cover > best_cover) {
      best_cover = cover;
      best = v;
    }
  }
  return best;
}

// The top-level module calls that are the model's: the outermost module (not a loss) whose
// calls take the most time.
std::vector<EventId> model_calls(const Context& c) {
  std::unordered_map<StrId, std::pair<Ns, std::vector<EventId>>> by_name;
  for (EventId e : c.top_modules) {
    if (is_loss_module(module_of_frame(c.name(e)))) continue;
    auto& g = by_name[c.m.ev.name[e]];
    g.first += c.m.ev.dur[e];
    g.second.push_back(e);
  }
  const std::vector<EventId>* best = nullptr;
  Ns best_t = -1;
  for (auto& [name, g] : by_name)
    if (g.first > best_t) {
      best_t = g.first;
      best = &g.second;
    }
  return best ? *best : std::vector<EventId>{};
}

// The main thread's sequence for the repetition search: each outermost range or module call
// is one element (a period never cuts through one), the ops outside them are elements too.
std::vector<EventId> unit_sequence(const Context& c, const std::vector<EventId>& outer) {
  std::vector<EventId> containers = outer;
  containers.insert(containers.end(), c.top_modules.begin(), c.top_modules.end());
  auto& ev = c.m.ev;
  std::sort(containers.begin(), containers.end(), [&](EventId a, EventId b) { return ev.start[a] < ev.start[b]; });
  std::vector<EventId> top;  // containers not inside another container
  for (EventId x : containers)
    if (top.empty() || ev.start[x] >= ev.end(top.back())) top.push_back(x);
  std::vector<EventId> seq;
  size_t k = 0;
  for (EventId e : c.main_items) {
    if (is_step(c, e)) continue;
    while (k < top.size() && ev.end(top[k]) <= ev.start[e]) seq.push_back(top[k++]);
    if (k < top.size() && ev.start[e] >= ev.start[top[k]]) continue;  // inside a container
    seq.push_back(e);
  }
  for (; k < top.size(); ++k) seq.push_back(top[k]);
  std::sort(seq.begin(), seq.end(), [&](EventId a, EventId b) { return ev.start[a] < ev.start[b]; });
  return seq;
}

// Iterations that start at each of `starts` (times), the last ending with the main thread's work.
std::vector<IterWork> from_starts(const Context& c, const std::vector<Ns>& starts, Ns end_all) {
  std::vector<IterWork> out;
  for (size_t i = 0; i < starts.size(); ++i)
    out.push_back(make(c, "Iteration " + std::to_string(i), starts[i], i + 1 < starts.size() ? starts[i + 1] : end_all));
  return out;
}

// Each period holds backward work, when the trace trains: a period without any is a part
// of one iteration (a layer of the forward), not an iteration.
bool periods_hold_backward(const Context& c, const std::vector<Ns>& starts, Ns end_all) {
  if (!c.has_backward) return true;
  auto& ev = c.m.ev;
  for (size_t i = 0; i < starts.size(); ++i) {
    Ns b = starts[i], e = i + 1 < starts.size() ? starts[i + 1] : end_all;
    bool any = false;
    auto lo = std::lower_bound(c.bwd_items.begin(), c.bwd_items.end(), b, [&](EventId x, Ns t) { return ev.start[x] < t; });
    any = lo != c.bwd_items.end() && ev.start[*lo] < e;
    for (EventId x : items_in(c, b, e))
      if (any) break;
      else any = is_backward_name(c.name(x));
    if (!any) return false;
  }
  return true;
}

}  // namespace

std::vector<IterWork> find_iterations(Context& c, Annotation& a) {
  auto& ev = c.m.ev;
  std::vector<EventId> steps, ranges, opt_steps, loaders, engine_steps;
  const std::vector<EventId>& outer = c.outer_ranges;
  for (EventId e : c.main_items) {
    std::string_view n = c.name(e);
    if (c.m.is_profiler_step(e)) steps.push_back(e);
    else if (is_optimizer_step_marker(n)) opt_steps.push_back(e);
    else if (is_dataloader_marker(n)) loaders.push_back(e);
  }
  for (EventId e : outer) {
    if (names_iteration(c.name(e))) ranges.push_back(e);
    else if (names_engine_step(c.name(e))) engine_steps.push_back(e);
  }
  std::vector<IterWork> out;
  if (c.main_items.empty()) {
    a.notes.push_back("no CPU thread with ops: iterations and phases could not be determined");
    a.iteration_source = IterationSource::None;
    return out;
  }
  // What the program said, most specific first.
  if (!steps.empty()) {
    a.iteration_source = IterationSource::ProfilerStep;
    for (EventId s : steps) {
      out.push_back(make(c, step_name(c.name(s)), ev.start[s], ev.end(s)));
      out.back().it.step = profiler_step_number(c.name(s));
    }
    return out;
  }
  auto from_ranges = [&](const std::vector<EventId>& rs, IterationSource src) {
    a.iteration_source = src;
    for (size_t i = 0; i < rs.size(); ++i) {
      out.push_back(make(c, "Iteration " + std::to_string(i), ev.start[rs[i]], ev.end(rs[i])));
      out.back().range = rs[i];
    }
    return out;
  };
  if (!ranges.empty()) return from_ranges(ranges, IterationSource::IterationRanges);
  if (!engine_steps.empty()) return from_ranges(engine_steps, IterationSource::StepRanges);
  if (std::vector<EventId> rs = step_level_ranges(c, outer); !rs.empty()) return from_ranges(rs, IterationSource::StepRanges);
  if (opt_steps.size() >= 2) {
    a.iteration_source = IterationSource::OptimizerStep;
    return by_marker(c, opt_steps, true, a);
  }
  if (loaders.size() >= 2) {
    a.iteration_source = IterationSource::DataLoader;
    return by_marker(c, loaders, false, a);
  }
  const Ns end_all = item_end(c, c.main_items);
  if (std::vector<EventId> calls = model_calls(c); !calls.empty()) {
    a.iteration_source = IterationSource::ModuleCalls;
    std::vector<Ns> starts;
    for (EventId x : calls) starts.push_back(ev.start[x]);
    out = from_starts(c, starts, std::max(end_all, ev.end(calls.back())));
    a.notes.push_back("no ProfilerStep ranges: each call of the top-level module " +
                      std::string(module_of_frame(c.name(calls.front()))) + " starts an iteration");
    return out;
  }
  // Inference fills the gap: the repeating sequence of the main thread's top-level work.
  std::vector<EventId> seq = unit_sequence(c, outer);
  std::vector<size_t> at = periodic(c, seq);
  std::vector<Ns> starts;
  for (size_t i : at) starts.push_back(ev.start[seq[i]]);
  if (starts.size() >= 2 && periods_hold_backward(c, starts, end_all)) {
    a.iteration_source = IterationSource::Periodic;
    out = from_starts(c, starts, end_all);
    out.back().it.partial = true;
    if (at.front() > 0)
      a.notes.push_back(std::to_string(at.front()) + " top-level events before the first detected iteration are in no iteration");
    a.notes.push_back("no ProfilerStep ranges: iterations inferred from the repeating op sequence; the last may be partial");
    return out;
  }
  a.iteration_source = IterationSource::WholeTrace;
  Ns b = ev.start[seq.empty() ? c.main_items.front() : seq.front()];
  out.push_back(make(c, "Iteration 0", b, end_all + 1));
  a.notes.push_back("no ProfilerStep ranges and no repetition found: the trace is treated as one iteration");
  return out;
}

}  // namespace strata::annot
