// The replay: one pass over the points in topological order.
#include "core/whatif/replay.h"

#include "core/median.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::whatif {

namespace {

constexpr uint32_t kOwnStart = UINT32_MAX;  // an end bound by its own start plus work

Ns scaled(Ns x, double f) { return f == 1.0 ? x : Ns(std::llround(double(x) * f)); }


}  // namespace

ReplayResult replay(const Graph& g, const std::vector<double>& scale, const Progress* progress) {
  ReplayResult r;
  const size_t np = 2 * g.size();
  auto factor = [&](Vertex v) { return scale.empty() ? 1.0 : scale[v]; };
  std::vector<Ns> t(np, std::numeric_limits<Ns>::min());
  std::vector<uint32_t> why(np, kOwnStart);
  uint32_t since_check = 0;
  for (Point p : g.order) {
    if (++since_check == 1u << 16) {
      since_check = 0;
      if (progress && progress->cancelled()) break;
    }
    const Vertex v = vertex_of(p);
    Ns best = is_end_point(p) ? t[p - 1] + scaled(g.work[v], factor(v)) : std::numeric_limits<Ns>::min();
    uint32_t bind = kOwnStart;
    for (uint32_t k = g.in_begin[p]; k < g.in_begin[p + 1]; ++k) {
      const Edge& e = g.edges[k];
      Ns x = (e.from == kNoPoint ? 0 : t[e.from]) + (e.scales ? scaled(e.lag, factor(v)) : e.lag);
      if (x > best) best = x, bind = k;
    }
    t[p] = best;
    why[p] = bind;
  }
  r.start.resize(g.size());
  r.end.resize(g.size());
  for (Vertex v = 0; v < g.size(); ++v) {
    r.start[v] = t[start_point(v)];
    r.end[v] = t[end_point(v)];
  }
  for (Point p = 0; p < np; ++p)
    if (r.last == kNoPoint || t[p] > t[r.last]) r.last = p;

  // The critical path: from the last point back along what bound each point.
  for (Point p = r.last; p != kNoPoint;) {
    const Vertex v = vertex_of(p);
    if (r.critical_path.empty() || r.critical_path.back() != v) r.critical_path.push_back(v);
    if (why[p] == kOwnStart) p = is_end_point(p) ? p - 1 : kNoPoint;
    else p = g.edges[why[p]].from;
  }
  std::reverse(r.critical_path.begin(), r.critical_path.end());

  // Iterations, per part.
  for (const Part& part : g.parts) {
    PartReplay pr;
    std::vector<Ns> gpu_end(part.gpu_by_issue.size());
    for (size_t i = 0; i < gpu_end.size(); ++i)
      gpu_end[i] = std::max(i ? gpu_end[i - 1] : std::numeric_limits<Ns>::min(), r.end[part.gpu_by_issue[i]]);
    auto at = [&](const Boundary& b) {
      if (b.vertex == kNoVertex) return Ns(0);
      Ns cpu = r.start[b.vertex] + std::min(b.offset, r.end[b.vertex] - r.start[b.vertex]);
      return b.gpu_before ? std::max(cpu, gpu_end[b.gpu_before - 1] - b.gpu_lead) : cpu;
    };
    std::vector<Ns> complete;
    for (size_t i = 0; 2 * i + 1 < part.boundaries.size(); ++i) {
      pr.iterations.push_back(at(part.boundaries[2 * i + 1]) - at(part.boundaries[2 * i]));
      if (!part.partial[i]) complete.push_back(pr.iterations.back());
    }
    for (const Part::PhaseSpan& ph : part.phases) pr.phases.push_back(std::max<Ns>(0, at(ph.end) - at(ph.begin)));
    pr.median = median(complete.empty() ? pr.iterations : complete);
    if (part.boundaries.size() >= 2) pr.window = at(part.boundaries.back()) - at(part.boundaries.front());
    r.iteration = std::max(r.iteration, pr.median);
    r.window = std::max(r.window, pr.window);
    r.parts.push_back(std::move(pr));
  }
  return r;
}

}  // namespace strata::whatif
