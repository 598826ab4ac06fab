// The job's analyses, on the ranks' data alone: clock offsets from the collectives the ranks
// share (a collective completes at nearly the same instant on every member), each collective's
// arrivals and waits, the rank that held each iteration up and where its time went, and
// communication per layer, per kind and per phase.
#include "core/job/job.h"
#include "core/median.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace strata {

namespace {

// Clocks that agree this well are left alone: collectives end within a few µs of each other.
constexpr Ns kAlignedWithin = 10'000;

struct Key {
  std::string group;
  int64_t step;
  uint32_t index;
  bool operator<(const Key& o) const {
    return group != o.group ? group < o.group : step != o.step ? step < o.step : index < o.index;
  }
};

// Of all the other members' breakdowns, the median of each figure; `pick` reads one figure.
template <class F>
Ns others_median(const std::vector<const RankData::Breakdown*>& others, F&& pick) {
  std::vector<Ns> v;
  for (const RankData::Breakdown* b : others) v.push_back(pick(*b));
  return median(std::move(v));
}

Ns part_of(const std::vector<RankData::Part>& parts, const std::string& name, const RankData& r, bool gpu) {
  for (const RankData::Part& p : parts)
    if (r.names[p.name] == name) return gpu ? p.gpu : p.cpu;
  return 0;
}

// The name in `mine` whose time grew most against the others (by GPU or CPU time), or "".
std::string most_grown(const RankData& me, const std::vector<RankData::Part>& mine,
                       const std::vector<std::pair<const RankData*, const std::vector<RankData::Part>*>>& others, bool gpu,
                       Ns at_least) {
  std::string best;
  Ns best_excess = at_least;
  for (const RankData::Part& p : mine) {
    const std::string& name = me.names[p.name];
    std::vector<Ns> v;
    for (auto& [r, parts] : others) v.push_back(part_of(*parts, name, *r, gpu));
    Ns excess = (gpu ? p.gpu : p.cpu) - median(std::move(v));
    if (excess > best_excess) best_excess = excess, best = name;
  }
  return best;
}

// Where the straggler's time went before it arrived at `inst`: against the other members,
// the data-loading stall, the kernels, or the CPU-side gap that grew by most of the delay.
void explain(const std::vector<RankData>& ranks, const JobAnalysis::Instance& inst, JobAnalysis::Straggler& s) {
  const auto& late = inst.members[inst.last];
  const RankData& me = ranks[late.rank];
  const RankData::Breakdown& mine = me.collectives[late.collective].before;
  std::vector<const RankData::Breakdown*> others;
  std::vector<std::pair<const RankData*, const std::vector<RankData::Part>*>> other_layers, other_kernels;
  for (size_t k = 0; k < inst.members.size(); ++k) {
    if (k == inst.last) continue;
    const RankData& o = ranks[inst.members[k].rank];
    const RankData::Breakdown& b = o.collectives[inst.members[k].collective].before;
    others.push_back(&b);
    other_layers.push_back({&o, &b.layers});
    other_kernels.push_back({&o, &b.kernels});
  }
  const Ns half = inst.delay / 2;
  auto phase_excess = [&](bool gpu, size_t p) {
    return (gpu ? mine.phase_gpu[p] : mine.phase_cpu[p]) -
           others_median(others, [&](const RankData::Breakdown& b) { return gpu ? b.phase_gpu[p] : b.phase_cpu[p]; });
  };
  auto most_grown_phase = [&](bool gpu) {
    size_t best = size_t(PhaseKind::Other);
    Ns best_excess = 0;
    for (size_t p = 0; p < size_t(PhaseKind::Count); ++p)
      if (Ns e = phase_excess(gpu, p); e > best_excess) best_excess = e, best = p;
    return best;
  };
  auto idle_excess = [&](IdleCause c) {
    return mine.idle[size_t(c)] - others_median(others, [&](const RankData::Breakdown& b) { return b.idle[size_t(c)]; });
  };
  const size_t loading = size_t(PhaseKind::DataLoading);
  if (phase_excess(false, loading) >= half || idle_excess(IdleCause::DataLoading) >= half) {
    s.cause = "data loading";
    s.phase = phase_name(PhaseKind::DataLoading);
    s.layer = most_grown(me, mine.layers, other_layers, false, half);
    return;
  }
  const Ns gpu_excess =
      mine.gpu_compute - others_median(others, [](const RankData::Breakdown& b) { return b.gpu_compute; });
  if (gpu_excess >= half) {
    s.cause = "kernels";
    s.phase = phase_name(PhaseKind(most_grown_phase(true)));
    s.layer = most_grown(me, mine.layers, other_layers, true, half);
    s.kernel = most_grown(me, mine.kernels, other_kernels, true, half);
    return;
  }
  // The host fell behind: the GPU sat idle waiting for it.
  IdleCause cause = IdleCause::Other;
  Ns best = 0;
  for (IdleCause c : {IdleCause::Launch, IdleCause::HostBlocked, IdleCause::Communication, IdleCause::CpuCompute, IdleCause::Other})
    if (Ns e = idle_excess(c); e > best) best = e, cause = c;
  s.cause = cause == IdleCause::Other ? "CPU-side gap" : std::string("CPU-side gap: ") + idle_cause_name(cause);
  s.phase = phase_name(PhaseKind(most_grown_phase(false)));
  s.layer = most_grown(me, mine.layers, other_layers, false, half);
}

// Communication per layer, kind and phase, per rank (the mean over ranks). A collective's
// time, bytes and exposed time go to its layers by their shares, else to its phase.
void communication_breakdown(const std::vector<RankData>& ranks, JobAnalysis& j) {
  std::map<std::string, JobAnalysis::Comm> layers, kinds, phases;
  auto add = [](std::map<std::string, JobAnalysis::Comm>& to, const std::string& name, int64_t bytes, Ns time, Ns exposed) {
    JobAnalysis::Comm& c = to[name];
    c.name = name;
    c.count += 1;
    c.bytes += std::max<int64_t>(bytes, 0);
    c.time += time;
    c.exposed += exposed;
    return &c;
  };
  for (const RankData& r : ranks)
    for (const RankData::Collective& c : r.collectives) {
      Ns dur = c.end - c.start;
      add(kinds, r.names[c.kind], c.bytes, dur, c.exposed);
      add(phases, phase_name(c.phase), c.bytes, dur, c.exposed);
      const uint8_t how = uint8_t(1u << unsigned(c.attribution));
      if (c.layers.empty()) {
        add(layers, phase_name(c.phase), c.bytes, dur, c.exposed)->attributions |= how;
        continue;
      }
      // Cut at the shares' running sums, the last at 1: the parts add up to the whole exactly.
      double upto = 0;
      for (size_t k = 0; k < c.layers.size(); ++k) {
        const double from = upto;
        upto = k + 1 == c.layers.size() ? 1.0 : upto + c.layers[k].share;
        auto cut = [&](int64_t v) { return Ns(std::llround(double(v) * upto)) - Ns(std::llround(double(v) * from)); };
        JobAnalysis::Comm* l = add(layers, r.names[c.layers[k].name], c.bytes > 0 ? cut(c.bytes) : -1, cut(dur), cut(c.exposed));
        l->attributions |= how;
        l->estimated |= c.estimated;
      }
    }
  const auto nr = Ns(ranks.size());
  using Into = std::pair<std::map<std::string, JobAnalysis::Comm>*, std::vector<JobAnalysis::Comm>*>;
  for (auto [from, to] : {Into{&layers, &j.comm_layers}, Into{&kinds, &j.comm_kinds}, Into{&phases, &j.comm_phases}}) {
    for (auto& [name, c] : *from) {
      JobAnalysis::Comm per = c;
      per.count = c.count / uint64_t(nr);
      per.bytes = c.bytes / nr;
      per.time = c.time / nr;
      per.exposed = c.exposed / nr;
      to->push_back(std::move(per));
    }
    std::sort(to->begin(), to->end(), [](auto& x, auto& y) { return x.time != y.time ? x.time > y.time : x.name < y.name; });
  }
}

}  // namespace

const JobAnalysis::StepWait* JobAnalysis::step_wait(uint32_t rank, int64_t step) const {
  auto it = std::lower_bound(step_waits.begin(), step_waits.end(), std::pair(rank, step),
                             [](const StepWait& w, const std::pair<uint32_t, int64_t>& k) { return std::pair(w.rank, w.step) < k; });
  return it != step_waits.end() && it->rank == rank && it->step == step ? &*it : nullptr;
}

JobAnalysis analyze_job(const std::vector<RankData>& ranks) {
  JobAnalysis j;
  j.clock_offset.assign(ranks.size(), 0);
  if (ranks.empty()) return j;
  j.reference_rank = ranks.front().rank;

  // Collectives matched across ranks: by process group, then step and place in it when every
  // rank's collectives fall in steps, else by place in the trace.
  bool by_step = true;
  for (const RankData& r : ranks)
    for (const RankData::Collective& c : r.collectives) by_step &= c.step >= 0;
  std::map<Key, std::vector<JobAnalysis::Instance::Member>> matched;
  for (uint32_t ri = 0; ri < ranks.size(); ++ri) {
    const RankData& r = ranks[ri];
    std::unordered_map<uint32_t, uint32_t> seq;  // group → next place in the trace
    for (uint32_t ci = 0; ci < r.collectives.size(); ++ci) {
      const RankData::Collective& c = r.collectives[ci];
      uint32_t place = seq[c.group]++;
      Key k{r.names[c.group], by_step ? c.step : -1, by_step ? c.index : place};
      matched[k].push_back({ri, ci, 0, c.end - c.start, 0});
    }
  }

  // Clock offsets: each rank against one already on the reference clock, by the median
  // difference of the ends of the collectives they share.
  std::vector<uint8_t> placed(ranks.size(), 0);
  placed[0] = 1;
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t ri = 1; ri < ranks.size(); ++ri) {
      if (placed[ri]) continue;
      std::map<uint32_t, std::vector<Ns>> diffs;  // by placed rank
      for (auto& [k, members] : matched) {
        const JobAnalysis::Instance::Member* mine = nullptr;
        for (auto& mb : members)
          if (mb.rank == ri) mine = &mb;
        if (!mine) continue;
        for (auto& mb : members)
          if (mb.rank != ri && placed[mb.rank])
            diffs[mb.rank].push_back(ranks[mb.rank].collectives[mb.collective].end + j.clock_offset[mb.rank] -
                                     ranks[ri].collectives[mine->collective].end);
      }
      if (diffs.empty()) continue;
      auto best = std::max_element(diffs.begin(), diffs.end(), [](auto& x, auto& y) { return x.second.size() < y.second.size(); });
      j.aligned_by += best->second.size();
      Ns off = median(best->second);
      j.clock_offset[ri] = (off > -kAlignedWithin && off < kAlignedWithin) ? 0 : off;
      placed[ri] = 1;
      progress = true;
    }
  }
  for (uint32_t ri = 0; ri < ranks.size(); ++ri)
    if (!placed[ri])
      j.notes.push_back("rank " + std::to_string(ranks[ri].rank) + " shares no collective with the others: its clock is left as it is");

  // Arrivals and waits.
  for (auto& [k, members] : matched) {
    if (members.size() < 2) continue;
    JobAnalysis::Instance inst;
    const RankData::Collective& c0 = ranks[members[0].rank].collectives[members[0].collective];
    inst.kind = ranks[members[0].rank].names[c0.kind];
    inst.group = k.group;
    inst.step = c0.step;
    inst.index = c0.index;
    inst.members = members;
    Ns shortest = INT64_MAX;
    for (auto& mb : inst.members) {
      mb.arrival = ranks[mb.rank].collectives[mb.collective].start + j.clock_offset[mb.rank];
      shortest = std::min(shortest, mb.duration);
    }
    Ns latest = INT64_MIN, second = INT64_MIN;
    for (uint32_t i = 0; i < inst.members.size(); ++i) {
      auto& mb = inst.members[i];
      mb.wait = mb.duration - shortest;
      if (mb.arrival > latest) second = latest, latest = mb.arrival, inst.last = i;
      else second = std::max(second, mb.arrival);
    }
    inst.delay = latest - second;
    j.instances.push_back(std::move(inst));
  }

  std::map<std::pair<uint32_t, int64_t>, JobAnalysis::StepWait> waits;
  for (const JobAnalysis::Instance& inst : j.instances)
    for (uint32_t k = 0; k < inst.members.size(); ++k) {
      JobAnalysis::StepWait& w = waits[{inst.members[k].rank, inst.step}];
      w.rank = inst.members[k].rank;
      w.step = inst.step;
      w.waited += inst.members[k].wait;
      if (k == inst.last) w.caused += inst.delay;
    }
  for (auto& [key, w] : waits) j.step_waits.push_back(w);

  // Stragglers: per step, the rank whose late arrivals cost the others the most, when that
  // is more than noise (0.1 ms, or 1% of the median iteration).
  std::vector<Ns> medians;
  for (const RankData& r : ranks) medians.push_back(r.iter_median);
  const Ns threshold = std::max<Ns>(100'000, median(medians) / 100);
  std::map<std::pair<int64_t, uint32_t>, std::pair<Ns, uint32_t>> cost;  // (step, rank) → (delay, worst instance)
  for (uint32_t i = 0; i < j.instances.size(); ++i) {
    const JobAnalysis::Instance& inst = j.instances[i];
    if (inst.delay <= 0) continue;
    auto& [delay, worst] = cost[{inst.step, inst.members[inst.last].rank}];
    if (delay == 0 || inst.delay > j.instances[worst].delay) worst = i;
    delay += inst.delay;
  }
  std::map<int64_t, std::pair<uint32_t, Ns>> per_step;  // step → (rank, delay) of the worst
  for (auto& [key, v] : cost)
    if (v.first > per_step[key.first].second) per_step[key.first] = {key.second, v.first};
  for (auto& [step, rv] : per_step) {
    if (rv.second < threshold) continue;
    JobAnalysis::Straggler s;
    s.rank = ranks[rv.first].rank;
    s.step = step;
    s.delay = rv.second;
    s.instance = cost[{step, rv.first}].second;
    explain(ranks, j.instances[s.instance], s);
    j.stragglers.push_back(std::move(s));
  }
  std::sort(j.stragglers.begin(), j.stragglers.end(), [](auto& x, auto& y) {
    return x.delay != y.delay ? x.delay > y.delay : x.step < y.step;
  });

  communication_breakdown(ranks, j);
  if (j.instances.empty() && ranks.size() > 1)
    j.notes.push_back("no collective is shared by two ranks: clocks are left as they are and no straggler can be named");
  return j;
}

}  // namespace strata
