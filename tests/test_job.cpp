// Jobs: ranks from file names, the job's analyses on hand-made rank data (offsets, waits,
// stragglers, clocks already aligned), communication per layer (made-up DDP buckets, real DDP
// traces), rank data through JSON and back, and bad summaries.
#include "core/job/job.h"
#include "core/json_writer.h"
#include "core/text_format.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <mutex>

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

constexpr Ns kMs = 1'000'000;

// A DDP rank of one step: forward runs layers L0…L8 (1 ms each, from 0), backward runs them
// back from L8 (0.9 ms each, 1 ms apart, from 10 ms), each with its own GPU time, after a
// "Loss" layer that differentiates no layer. Three gradient buckets are launched in backward:
// after L7's backward (3 ms long: L8, L7), during L3's (2 ms: L6…L3), and after L0's (1 ms:
// L2…L0). Besides: an all-gather launched inside L4's forward, one launched between L5's and
// L6's, and an all-reduce in the optimizer step.
RankData ddp_rank() {
  RankData r;
  r.rank = 0;
  r.file = "ddp.json";
  const uint32_t allreduce = r.intern("allreduce"), allgather = r.intern("allgather"), group = r.intern("0");
  r.iterations.push_back({1, 0, 40 * kMs, false});
  r.phases = {{1, PhaseKind::Forward, 0, 9 * kMs + kMs / 2},
              {1, PhaseKind::Backward, 9 * kMs + kMs / 2, 20 * kMs},
              {1, PhaseKind::Optimizer, 20 * kMs, 40 * kMs}};
  std::vector<LayerSpan> spans;
  for (int k = 0; k < 9; ++k) {
    const uint32_t name = r.intern("Net/L" + std::to_string(k));
    const Ns back = 10 * kMs + Ns(8 - k) * kMs;
    spans.push_back({name, PhaseKind::Forward, Ns(k) * kMs, Ns(k) * kMs + kMs * 9 / 10, 50'000, false});
    spans.push_back({name, PhaseKind::Backward, back, back + kMs * 9 / 10, Ns(k + 1) * 100'000, true});
  }
  spans.push_back({r.intern("Loss"), PhaseKind::Backward, 9 * kMs + kMs * 6 / 10, 9 * kMs + kMs * 8 / 10, 40'000, false});
  auto collective = [&](uint32_t kind, PhaseKind phase, Ns launch, Ns dur, int64_t bytes) {
    RankData::Collective c;
    c.kind = kind;
    c.group = group;
    c.step = 1;
    c.index = uint32_t(r.collectives.size());
    c.launch = launch;
    c.start = launch + 10'000;
    c.end = c.start + dur;
    c.bytes = bytes;
    c.phase = phase;
    c.exposed = dur / 2;
    r.collectives.push_back(c);
  };
  collective(allgather, PhaseKind::Forward, 4 * kMs + kMs / 2, 300'000, 4096);   // inside L4's forward
  collective(allgather, PhaseKind::Forward, 5 * kMs + kMs * 95 / 100, 200'000, 4096);  // before L6's
  collective(allreduce, PhaseKind::Backward, 11 * kMs + kMs * 95 / 100, 3 * kMs, 17'000);  // after L7's backward
  collective(allreduce, PhaseKind::Backward, 15 * kMs + kMs / 2, 2 * kMs, 18'000);  // during L3's
  collective(allreduce, PhaseKind::Backward, 19 * kMs, 1 * kMs, 6'000);   // after L0's
  collective(allreduce, PhaseKind::Optimizer, 21 * kMs, 500'000, 8);
  attribute_collectives(r, spans);
  return r;
}

// The job's communication rows by name.
std::map<std::string, JobAnalysis::Comm> comm_by_name(const JobAnalysis& j) {
  std::map<std::string, JobAnalysis::Comm> out;
  for (const JobAnalysis::Comm& c : j.comm_layers) out[c.name] = c;
  return out;
}

Ns total_time(const std::vector<JobAnalysis::Comm>& rows) {
  Ns sum = 0;
  for (const JobAnalysis::Comm& c : rows) sum += c.time;
  return sum;
}

}  // namespace

TEST_CASE("job: each DDP bucket's time goes to exactly the layers it carries") {
  RankData r = ddp_rank();
  const std::vector<std::vector<int>> buckets = {{8, 7}, {6, 5, 4, 3}, {2, 1, 0}};
  const std::vector<Ns> bucket_time = {3 * kMs, 2 * kMs, 1 * kMs};
  const std::vector<int64_t> bucket_bytes = {17'000, 18'000, 6'000};
  for (size_t b = 0; b < buckets.size(); ++b) {
    const RankData::Collective& c = r.collectives[2 + b];
    CAPTURE(b);
    CHECK(c.attribution == CommAttribution::Bucket);
    CHECK(c.estimated);
    REQUIRE(c.layers.size() == buckets[b].size());
    for (size_t k = 0; k < c.layers.size(); ++k) CHECK(r.names[c.layers[k].name] == "Net/L" + std::to_string(buckets[b][k]));
  }
  CHECK(r.collectives[0].attribution == CommAttribution::Overlap);
  CHECK(r.collectives[1].attribution == CommAttribution::NextLayer);
  CHECK(r.collectives[5].attribution == CommAttribution::Phase);
  CHECK(r.collectives[5].layers.empty());

  JobAnalysis j = analyze_job({r});
  auto rows = comm_by_name(j);
  CHECK(rows.count("Loss") == 0);  // it differentiates no layer: no gradient
  // Each layer's part of its bucket: the bucket's time by the layer's backward GPU time
  // ((k + 1) × 0.1 ms), to the nanosecond.
  for (size_t b = 0; b < buckets.size(); ++b) {
    Ns weights = 0;
    for (int k : buckets[b]) weights += k + 1;
    for (int k : buckets[b]) {
      const std::string name = "Net/L" + std::to_string(k);
      CAPTURE(name);
      REQUIRE(rows.count(name) == 1);
      const JobAnalysis::Comm& c = rows[name];
      Ns expect = bucket_time[b] * (k + 1) / weights, bytes = bucket_bytes[b] * (k + 1) / weights;
      if (k == 4) expect += 300'000, bytes += 4096;  // and the all-gather launched inside its forward
      if (k == 6) expect += 200'000, bytes += 4096;  // and the one launched just before it
      CHECK(std::abs(c.time - expect) <= 1);
      CHECK(std::abs(c.bytes - bytes) <= 1);
      CHECK(c.estimated);
      const uint8_t bucket = 1u << unsigned(CommAttribution::Bucket);
      CHECK(c.attributions == (k == 4 ? bucket | 1u << unsigned(CommAttribution::Overlap)
                               : k == 6 ? bucket | 1u << unsigned(CommAttribution::NextLayer)
                                        : bucket));
    }
  }
  // The optimizer's all-reduce goes to its phase; every collective's time is somewhere.
  REQUIRE(rows.count("Optimizer step") == 1);
  CHECK(rows["Optimizer step"].time == 500'000);
  CHECK(rows["Optimizer step"].attributions == 1u << unsigned(CommAttribution::Phase));
  CHECK(total_time(j.comm_layers) == total_time(j.comm_kinds));
  // No tie: L8 takes the most of the largest bucket.
  REQUIRE(j.comm_layers.size() >= 2);
  CHECK(j.comm_layers[0].name == "Net/L8");
  CHECK(j.comm_layers[0].time > j.comm_layers[1].time);

  const std::string text = job_summary_text({r}, j);
  CHECK(text.find("bucket (gradient-ready order), estimated") != std::string::npos);
  const std::string json = job_summary_json({r}, j);
  CHECK(json.find("\"attribution\":\"bucket (gradient-ready order) + overlap\",\"estimated\":true") != std::string::npos);
}

TEST_CASE("job: one layer's gradients over several buckets, and no layer at all") {
  RankData r = ddp_rank();
  // One backward layer runs the whole backward: every bucket is launched inside it.
  const uint32_t big = r.intern("Net/Big");
  attribute_collectives(r, {{big, PhaseKind::Backward, 10 * kMs, 19 * kMs + kMs / 2, kMs, true}});
  for (size_t b = 2; b < 5; ++b) {
    REQUIRE(r.collectives[b].layers.size() == 1);
    CHECK(r.collectives[b].layers[0].name == big);
    CHECK(r.collectives[b].layers[0].share == 1.0);
    CHECK_FALSE(r.collectives[b].estimated);
  }
  // No layers: every collective goes to its phase.
  attribute_collectives(r, {});
  for (const RankData::Collective& c : r.collectives) CHECK(c.attribution == CommAttribution::Phase);
  JobAnalysis j = analyze_job({r});
  CHECK(total_time(j.comm_layers) == total_time(j.comm_kinds));
}

// Real DDP traces: the buckets' layers are told apart (no tie at the top), the layers'
// communication adds up to the collectives', and the rank's summary has its exposed part.
TEST_CASE("job: communication per layer on real DDP traces") {
  for (const char* name : {"hta-a100-8ranks.pt.trace.json.gz", "tracelens-resnet18-actckpt-ddp-train-mi300x.json.gz"}) {
    CAPTURE(name);
    STRATA_REQUIRE_TRACE(path, name);
    LoadResult loaded = load_trace(path);
    REQUIRE(loaded.model);
    const Annotation a = annotate(*loaded.model);
    const RankData r = rank_data(*loaded.model, a, 0);
    size_t buckets = 0;
    for (const RankData::Collective& c : r.collectives) buckets += c.attribution == CommAttribution::Bucket;
    CHECK(buckets >= 3);
    const JobAnalysis j = analyze_job({r});
    REQUIRE(j.comm_layers.size() >= 3);
    CHECK(total_time(j.comm_layers) == total_time(j.comm_kinds));
    CHECK(j.comm_layers[0].time > j.comm_layers[2].time);  // at most two share the top
    for (const JobAnalysis::Comm& c : j.comm_layers) CHECK(c.attributions != 0);
    // The rank's own summary says how much of its communication is exposed: what no compute
    // hides, so the part that is not overlapped.
    const Ns exposed = a.analyses.communication - a.analyses.compute_comm_overlap;
    CHECK(exposed > 0);
    CHECK(rank_summary_json(*loaded.model, a, r).find("\"exposed_communication_ns\":" + std::to_string(exposed)) != std::string::npos);
    CHECK(summary_text(*loaded.model, a).find(", exposed " + format_duration(exposed) + ")") != std::string::npos);
  }
}

TEST_CASE("job: each rank's summary is handed over as it is made, once per rank") {
  STRATA_REQUIRE_TRACE(dir, "param-dlrm-torchrec-v100-8ranks");
  Result<std::vector<JobFile>> files = job_files({dir});
  REQUIRE(files.is_ok());
  std::mutex m;
  std::vector<int64_t> arrived;
  size_t with_iterations = 0;
  JobOptions options;
  options.on_rank = [&](const RankData& d) {
    const std::lock_guard<std::mutex> lock(m);
    arrived.push_back(d.rank);
    with_iterations += !d.iterations.empty();
  };
  const Job job = load_job(files.value(), options);
  std::sort(arrived.begin(), arrived.end());
  std::vector<int64_t> loaded;
  for (const RankData& d : job.data) loaded.push_back(d.rank);
  std::sort(loaded.begin(), loaded.end());
  CHECK(arrived.size() == files->size());
  CHECK(arrived == loaded);
  CHECK(with_iterations == arrived.size());
}

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
  r.collectives[1].layers = {{r.intern("block_1/conv_2"), 0.25}, {r.intern("block_1/conv_1"), 0.75}};
  r.collectives[1].attribution = CommAttribution::Bucket;
  r.collectives[1].estimated = true;
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
  CHECK(back.collectives[1].attribution == CommAttribution::Bucket);
  CHECK(back.collectives[1].estimated);
  CHECK(back.collectives[0].attribution == CommAttribution::Phase);
  CHECK(back.collectives[1].before.layers.size() == 1);
  CHECK(back.collectives[1].before.layers[0].gpu == 900);
  CHECK(back.collectives[1].before.idle[size_t(IdleCause::Launch)] == 42);
  CHECK(back.collectives[2].end == r.collectives[2].end);

  for (const char* bad : {"", "{", "[]", "{\"file\":\"x\"}", "{\"rank_data\":{\"schema\":\"strata.rank/2\"}}", "{\"rank_data\":{\"schema\":\"strata.rank/1\"}}",
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
