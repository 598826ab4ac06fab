// Iterations: ProfilerStep#N ranges, or ranges the program named as iterations (NVTX ranges
// such as those Strata's agent counts, record_function("train_step")); without them, the
// training loop's period from the once-per-iteration markers PyTorch emits, else from the
// repeating sequence of top-level ops on the main thread; a trace with no repetition is one
// iteration.
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

// The repeating period of the main thread's top-level sequence, from a name that occurs at
// a constant stride. Returns the anchor positions (iteration starts), empty if none.
std::vector<size_t> periodic(const Context& c, const std::vector<EventId>& seq) {
  size_t L = seq.size();
  if (L < 4) return {};
  std::unordered_map<StrId, std::vector<uint32_t>> pos;
  for (size_t i = 0; i < L; ++i) pos[c.m.ev.name[seq[i]]].push_back(uint32_t(i));
  size_t best_cover = 0, best_p = 0;
  const std::vector<uint32_t>* best = nullptr;
  for (auto& [name, v] : pos) {
    if (v.size() < 2 || v.size() > L / 2) continue;
    size_t p = v[1] - v[0];
    bool regular = true;
    for (size_t i = 2; i < v.size() && regular; ++i) regular = v[i] - v[i - 1] == p;
    if (!regular || p < 2) continue;
    size_t cover = p * v.size();
    if (cover > best_cover || (cover == best_cover && p > best_p)) {
      best_cover = cover;
      best_p = p;
      best = &v;
    }
  }
  if (!best || best_cover * 2 < L) return {};
  // The sequence must repeat, not only the anchor.
  size_t b0 = (*best)[0], same = 0, total = 0;
  for (size_t i = b0; i + best_p < std::min(L, b0 + best_p * (best->size() - 1) + best_p); ++i, ++total)
    same += c.m.ev.name[seq[i]] == c.m.ev.name[seq[i + best_p]];
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

bool names_iteration(std::string_view n) {
  std::string l = lower(n.substr(0, 64));
  return l.find("iteration") != std::string::npos || l.find("train_step") != std::string::npos ||
         l.find("training_step") != std::string::npos;
}

std::vector<IterWork> find_iterations(Context& c, Annotation& a) {
  auto& ev = c.m.ev;
  std::vector<EventId> steps, ranges, opt_steps, loaders;
  for (EventId e : c.main_items) {
    std::string_view n = c.name(e);
    if (c.m.is_profiler_step(e)) steps.push_back(e);
    else if (ev.category(e) == Cat::UserAnnotation && names_iteration(n)) ranges.push_back(e);
    else if (n.starts_with("Optimizer.step#")) opt_steps.push_back(e);
    else if (n.starts_with("enumerate(DataLoader)#")) loaders.push_back(e);
  }
  std::vector<IterWork> out;
  if (c.main_items.empty()) {
    a.notes.push_back("no CPU thread with ops: iterations and phases could not be determined");
    a.iteration_source = IterationSource::None;
    return out;
  }
  if (steps.size() >= 2) {
    a.iteration_source = IterationSource::ProfilerStep;
    for (EventId s : steps) {
      out.push_back(make(c, step_name(c.name(s)), ev.start[s], ev.end(s)));
      out.back().it.step = profiler_step_number(c.name(s));
    }
    return out;
  }
  if (ranges.size() >= 2) {
    a.iteration_source = IterationSource::IterationRanges;
    for (size_t i = 0; i < ranges.size(); ++i)
      out.push_back(make(c, "Iteration " + std::to_string(i), ev.start[ranges[i]], ev.end(ranges[i])));
    return out;
  }
  if (opt_steps.size() >= 2) {
    a.iteration_source = IterationSource::OptimizerStep;
    return by_marker(c, opt_steps, true, a);
  }
  if (loaders.size() >= 2) {
    a.iteration_source = IterationSource::DataLoader;
    return by_marker(c, loaders, false, a);
  }
  // Periodicity over op roots (markers included).
  std::vector<EventId> seq;
  for (EventId e : c.main_items)
    if (!is_step(c, e)) seq.push_back(e);
  std::vector<size_t> starts = periodic(c, seq);
  if (starts.size() >= 2) {
    a.iteration_source = IterationSource::Periodic;
    Ns end_all = item_end(c, seq);
    for (size_t i = 0; i < starts.size(); ++i) {
      Ns b = ev.start[seq[starts[i]]];
      Ns e = i + 1 < starts.size() ? ev.start[seq[starts[i + 1]]] : end_all;
      out.push_back(make(c, "Iteration " + std::to_string(i), b, e, i + 1 == starts.size()));
    }
    if (starts.front() > 0)
      a.notes.push_back(std::to_string(starts.front()) + " top-level events before the first detected iteration are in no iteration");
    a.notes.push_back("no ProfilerStep ranges: iterations detected from the repeating op sequence; the last may be partial");
    return out;
  }
  if (steps.size() == 1) {
    a.iteration_source = IterationSource::ProfilerStep;
    out.push_back(make(c, step_name(c.name(steps[0])), ev.start[steps[0]], ev.end(steps[0])));
    out.back().it.step = profiler_step_number(c.name(steps[0]));
    return out;
  }
  a.iteration_source = IterationSource::WholeTrace;
  Ns b = ev.start[seq.empty() ? c.main_items.front() : seq.front()];
  out.push_back(make(c, "Iteration 0", b, item_end(c, c.main_items) + 1));
  a.notes.push_back("no ProfilerStep ranges and no repetition found: the trace is treated as one iteration");
  return out;
}

}  // namespace strata::annot
