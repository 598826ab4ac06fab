// Jobs: ranks from file names, the job's analyses on hand-made rank data (offsets, waits,
// stragglers, clocks already aligned), rank data through JSON and back, and bad summaries.
#include "core/job/job.h"
#include "core/json_writer.h"

#include <doctest/doctest.h>

using namespace strata;

namespace {

// A rank with one step and `n` allreduces, each 1 ms long and 10 ms apart, on its own clock.
RankData synthetic_rank(int64_t rank, Ns clock, size_t n, Ns late_at = -1, Ns late_by = 0) {
  RankData r;
  r.rank = rank;
  r.file = "rank" + std::to_string(rank) + ".json";
  uint32_t kind = r.intern("allreduce"), group = r.intern("0");
  r.iterations.push_back({7, clock, clock + Ns(n) * 10'000'000, false});
  r.iter_median = Ns(n) * 10'000'000;
  Ns shift = 0;
  for (size_t i = 0; i < n; ++i) {
    RankData::Collective c;
    c.kind = kind;
    c.group = group;
    c.step = 7;
    c.index = uint32_t(i);
    if (Ns(i) == late_at) shift = late_by;
    c.start = clock + Ns(i) * 10'000'000 + 5'000'000 + shift;
    c.end = clock + Ns(i) * 10'000'000 + 6'000'000 + (Ns(i) >= late_at && late_at >= 0 ? late_by : 0);
    c.launch = c.start - 10'000;
    c.phase = PhaseKind::Backward;
    r.collectives.push_back(c);
  }
  return r;
}

}  // namespace

TEST_CASE("job: ranks from file names") {
  CHECK(rank_from_name("/runs/trace_rank-3.pt.trace.json.gz") == 3);
  CHECK(rank_from_name("rank12.json") == 12);
  CHECK(rank_from_name("worker_5.json") == 5);
  CHECK(rank_from_name("/data/rank7/trace_8_rank_1.json") == 1);  // the file's own name decides
  CHECK(rank_from_name("trace.json") == -1);
  CHECK(rank_from_name("ranking.json") == -1);
}

TEST_CASE("job: offsets from shared collectives, the late rank named, aligned clocks left alone") {
  // Rank 1's clock runs 12.5 ms ahead; rank 2 is 3 ms late to collective 2 (the others wait).
  std::vector<RankData> ranks;
  ranks.push_back(synthetic_rank(0, 1'000'000'000, 4));
  ranks.push_back(synthetic_rank(1, 1'012'500'000, 4));
  ranks.push_back(synthetic_rank(2, 1'000'000'000, 4, 2, 3'000'000));
  // The others' collective 2 lasts 3 ms longer: they wait for rank 2; the rest of theirs shift.
  for (int r : {0, 1})
    for (size_t i = 2; i < 4; ++i) {
      ranks[size_t(r)].collectives[i].end += 3'000'000;
      if (i > 2) ranks[size_t(r)].collectives[i].start += 3'000'000;
    }
  JobAnalysis j = analyze_job(ranks);
  REQUIRE(j.clock_offset.size() == 3);
  CHECK(j.clock_offset[0] == 0);
  CHECK(j.clock_offset[1] == -12'500'000);
  CHECK(j.clock_offset[2] == 0);  // the same clock as rank 0: left alone
  REQUIRE(j.stragglers.size() == 1);
  CHECK(j.stragglers[0].rank == 2);
  CHECK(j.stragglers[0].step == 7);
  CHECK(j.stragglers[0].delay == 3'000'000);
  const JobAnalysis::Instance& inst = j.instances[j.stragglers[0].instance];
  CHECK(inst.index == 2);
  for (const auto& mb : inst.members) CHECK(mb.wait == (ranks[mb.rank].rank == 2 ? 0 : 3'000'000));
  // Communication per kind, per rank.
  REQUIRE(j.comm_kinds.size() == 1);
  CHECK(j.comm_kinds[0].name == "allreduce");
  CHECK(j.comm_kinds[0].count == 4);
}

TEST_CASE("job: rank data through JSON and back, and summaries that are not") {
  RankData r = synthetic_rank(3, 5'000'000, 3);
  r.collectives[1].layers.push_back(r.intern("block_1/conv_2"));
  r.collectives[1].before.layers.push_back({r.intern("Backward/block_1/conv_2"), 700, 900});
  r.collectives[1].before.idle[size_t(IdleCause::Launch)] = 42;
  JsonWriter w;
  w.begin_object().key("rank_data");
  write_rank_data(w, r);
  w.end_object();
  Result<RankData> read = read_rank_data(w.str());
  REQUIRE_MESSAGE(read.is_ok(), read.status().message());
  const RankData& back = read.value();
  CHECK(back.rank == 3);
  CHECK(back.names == r.names);
  REQUIRE(back.collectives.size() == 3);
  CHECK(back.collectives[1].layers == r.collectives[1].layers);
  CHECK(back.collectives[1].before.layers.size() == 1);
  CHECK(back.collectives[1].before.layers[0].gpu == 900);
  CHECK(back.collectives[1].before.idle[size_t(IdleCause::Launch)] == 42);
  CHECK(back.collectives[2].end == r.collectives[2].end);

  for (const char* bad : {"", "{", "[]", "{\"file\":\"x\"}", "{\"rank_data\":{\"schema\":\"strata.rank/1\"}}",
                          "{\"rank_data\":{\"schema\":\"other\"}}"}) {
    CAPTURE(bad);
    Result<RankData> refused = read_rank_data(bad);
    CHECK_FALSE(refused.is_ok());
    CHECK(!refused.status().message().empty());
  }
  // An index past the names is refused, not followed.
  std::string s = w.str();
  size_t k = s.find("\"kind\":");
  REQUIRE(k != std::string::npos);
  s.replace(k, 8, "\"kind\":9");
  CHECK_FALSE(read_rank_data(s).is_ok());
  // Damaged anywhere, a summary is read or refused, never followed off its end.
  const std::string good = w.str();
  uint64_t seed = 7;
  for (int i = 0; i < 2000; ++i) {
    std::string d = good;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t at = size_t(seed >> 33) % d.size();
    const char junk[] = {'"', '{', '}', '[', ']', ',', ':', '9', '-', 'x', '\0'};
    if (i % 3 == 0) d.erase(at);
    else d[at] = junk[(seed >> 20) % sizeof junk];
    (void)read_rank_data(d);
  }
}

TEST_CASE("job: no shared collectives leaves the clocks and says so") {
  std::vector<RankData> ranks;
  ranks.push_back(synthetic_rank(0, 0, 2));
  RankData other = synthetic_rank(1, 50'000'000, 2);
  other.names[other.collectives[0].group] = "another group";
  ranks.push_back(other);
  JobAnalysis j = analyze_job(ranks);
  CHECK(j.clock_offset[1] == 0);
  CHECK(j.stragglers.empty());
  CHECK(!j.notes.empty());
}
