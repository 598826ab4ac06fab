// strata_fake_agent: a process that answers the control protocol the way libstrata_agent.so
// does, without CUDA, so attaching (the client, the viewer's Attach dialog and its live
// view) can be tried and tested on a machine with no GPU.
//
//   strata_fake_agent [--command TEXT] [--gpu TEXT] [--lifetime S] [--die-after-ms N]
//
// It listens on <socket dir>/<pid>.sock, prints "listening PID" when ready, answers
// status / start / stop / detach, and while recording writes a Kineto-style trace through
// the agent's own streaming writer: one 100 ms training iteration (NVTX ranges, runtime
// launches, kernels, a copy, flows) every 100 ms of wall time, flushed after each, so the
// file grows line by line. --die-after-ms exits abruptly that long into a recording (a job
// that crashed); --lifetime (default 120 s) bounds how long it stays up.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "protocol/control_socket.h"
#include "protocol/message.h"
#include "trace/chrome_writer.h"
#include "trace/trace_sink.h"

namespace sc = strata::collector;

namespace {

constexpr uint64_t kIterationNs = 100'000'000;
constexpr uint32_t kStream = 7;

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

struct Recording {
  std::string output;
  sc::FileSink sink;
  std::unique_ptr<sc::ChromeTraceWriter> writer;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;    // 0: until stopped (or iterations)
  uint64_t iterations = 0;     // 0: by duration
  uint64_t done = 0;           // iterations written
  uint64_t records = 0;
};

struct Agent {
  std::string command = "python train.py --fake";
  std::string gpu_name = "Fake GPU 0 (no CUDA)";
  uint64_t die_after_ns = 0;
  uint32_t pid = static_cast<uint32_t>(::getpid());
  uint32_t range_id = 0, correlation = 0;
  uint64_t finished = 0;
  std::unique_ptr<Recording> rec;
  std::string last_output;
  uint64_t last_events = 0;

  void add(sc::Record r) {
    rec->writer->add(r);
    ++rec->records;
  }

  void range(uint64_t start, uint64_t end, const char* name) {
    sc::Record b;
    b.kind = sc::RecordKind::RangeStart;
    b.start = start;
    b.pid = pid;
    b.tid = pid;
    b.range_id = ++range_id;
    b.name = name;
    add(b);
    sc::Record e = b;
    e.kind = sc::RecordKind::RangeEnd;
    e.start = e.end = end;
    add(e);
  }

  // A runtime call on the job's main thread and the GPU op it starts, `dur` long.
  void launch(uint64_t& cpu, uint64_t& gpu, const char* api, sc::RecordKind kind, const char* name, uint64_t dur) {
    sc::Record call;
    call.kind = sc::RecordKind::Runtime;
    call.start = cpu;
    call.end = cpu + 6'000;
    call.pid = pid;
    call.tid = pid;
    call.cbid = 211;
    call.correlation = ++correlation;
    call.name = api;
    add(call);
    sc::Record op;
    op.kind = kind;
    op.start = std::max(gpu, call.end + 4'000);
    op.end = op.start + dur;
    op.device = 0;
    op.context = 1;
    op.stream = kStream;
    op.correlation = call.correlation;
    op.name = name;
    op.bytes = 64u << 20;
    op.sub_kind = 1;  // HtoD
    op.src_kind = 2;  // pinned
    op.dst_kind = 3;  // device
    for (int k = 0; k < 3; ++k) op.grid[k] = op.block[k] = 1;
    op.grid[0] = 264;
    op.block[0] = 256;
    op.registers = 64;
    add(op);
    cpu = call.end + 2'000;
    gpu = op.end + 1'000;
  }

  // One iteration in [t, t + 100 ms): data copy, forward, backward, optimizer.
  void iteration(uint64_t t) {
    static constexpr const char* kForward[] = {"volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<relu>",
                                               "void cudnn::bn_fw_tr_1C11_kernel_NCHW"};
    static constexpr const char* kBackward[] = {"volta_sgemm_64x64_nt", "void at::native::threshold_backward_kernel",
                                                "void cudnn::bn_bw_1C11_kernel_new", "volta_sgemm_128x64_tn"};
    range(t, t + kIterationNs - 2'000'000, "iteration");
    uint64_t cpu = t + 200'000, gpu = cpu;
    launch(cpu, gpu, "cudaMemcpyAsync", sc::RecordKind::Memcpy, "", 3'000'000);
    const uint64_t fwd = t + 4'000'000, bwd = t + 44'000'000, opt = t + 88'000'000;
    range(fwd, bwd - 500'000, "forward");
    cpu = fwd + 100'000;
    for (int i = 0; i < 12; ++i) launch(cpu, gpu, "cudaLaunchKernel", sc::RecordKind::Kernel, kForward[i % 3], 2'600'000);
    range(bwd, opt - 500'000, "backward");
    cpu = bwd + 100'000;
    for (int i = 0; i < 16; ++i) launch(cpu, gpu, "cudaLaunchKernel", sc::RecordKind::Kernel, kBackward[i % 4], 2'300'000);
    range(opt, opt + 9'000'000, "optimizer");
    cpu = opt + 100'000;
    for (int i = 0; i < 4; ++i)
      launch(cpu, gpu, "cudaLaunchKernel", sc::RecordKind::Kernel, "void at::native::multi_tensor_apply_kernel", 1'800'000);
    ++rec->done;
  }

  sc::Message status() const {
    sc::Message m;
    m.verb = "ok";
    m.set("pid", std::to_string(pid)).set("command", command).set("gpu", gpu_name);
    m.set("state", rec ? "recording" : "dormant").set("nvtx", "on");
    m.set("recordings", std::to_string(finished)).set("buffers_refused", "0");
    if (rec) {
      m.set("kinds", "kernel,memcpy,runtime-all,nvtx").set("output", rec->output);
      m.set("records", std::to_string(rec->records)).set("iterations_done", std::to_string(rec->done));
    } else if (!last_output.empty()) {
      m.set("output", last_output).set("events", std::to_string(last_events)).set("dropped", "0");
    }
    return m;
  }

  sc::Message start(const sc::Message& req) {
    if (rec) return sc::error_reply("already recording (state recording)");
    bool bad = false;
    const auto duration = sc::get_uint(req, "duration_ms", &bad);
    const auto iterations = sc::get_uint(req, "iterations", &bad);
    if (bad) return sc::error_reply("duration_ms, iterations and delay_ms take whole numbers");
    const std::string* output = req.get("output");
    if (output == nullptr || output->empty() || (*output)[0] != '/') return sc::error_reply("output must be an absolute path");
    auto r = std::make_unique<Recording>();
    r->output = *output;
    if (!r->sink.open(r->output, false)) return sc::error_reply(r->sink.status().message());
    r->writer = std::make_unique<sc::ChromeTraceWriter>(r->sink);
    r->start_ns = now_ns();
    r->duration_ns = duration.value_or(0) * 1'000'000;
    r->iterations = iterations.value_or(0);
    sc::TraceHeader h;
    sc::DeviceRecord d;
    d.name = gpu_name;
    d.total_global_mem = 80ull << 30;
    d.compute_major = 9;
    d.num_sms = 132;
    d.max_threads_per_block = 1024;
    h.devices.push_back(d);
    h.base_ns = r->start_ns;
    h.pid = pid;
    h.command = command;
    r->writer->begin(h);
    r->sink.flush();
    rec = std::move(r);
    sc::Message ok;
    ok.verb = "ok";
    ok.set("output", rec->output);
    return ok;
  }

  void finish() {
    rec->writer->finish(sc::TraceStats{rec->records, 0});
    const bool ok = rec->sink.close();
    if (!ok) std::fprintf(stderr, "fake agent: %s\n", rec->sink.status().message().c_str());
    last_output = rec->output;
    last_events = rec->writer->events_written();
    rec.reset();
    ++finished;
  }

  // Writes the iterations whose time has passed; ends the recording when it is due.
  void advance() {
    if (!rec) return;
    const uint64_t now = now_ns();
    if (die_after_ns != 0 && now - rec->start_ns >= die_after_ns) ::_exit(3);  // the job crashed
    bool wrote = false;
    while (rec->start_ns + (rec->done + 1) * kIterationNs <= now &&
           (rec->iterations == 0 || rec->done < rec->iterations) &&
           (rec->duration_ns == 0 || (rec->done + 1) * kIterationNs <= rec->duration_ns)) {
      iteration(rec->start_ns + rec->done * kIterationNs);
      wrote = true;
    }
    if (wrote) rec->sink.flush();
    const bool all_iterations = rec->iterations != 0 && rec->done >= rec->iterations;
    const bool time_up = rec->duration_ns != 0 && now - rec->start_ns >= rec->duration_ns;
    if (all_iterations || time_up) finish();
  }

  // One request; sets `running` false on detach.
  sc::Message handle(const sc::Message& req, bool& running) {
    if (req.verb == "status") return status();
    if (req.verb == "start") return start(req);
    if (req.verb == "stop") {
      if (!rec) return sc::error_reply("not recording");
      finish();
      return status();
    }
    if (req.verb == "detach") {
      if (rec) finish();
      running = false;
      sc::Message ok;
      ok.verb = "ok";
      return ok;
    }
    return sc::error_reply("unknown command '" + req.verb + "' (status, start, stop, detach)");
  }
};

}  // namespace

int main(int argc, char** argv) {
  Agent agent;
  double lifetime_s = 120;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--command") agent.command = argv[i + 1];
    else if (a == "--gpu") agent.gpu_name = argv[i + 1];
    else if (a == "--lifetime") lifetime_s = std::atof(argv[i + 1]);
    else if (a == "--die-after-ms") agent.die_after_ns = std::strtoull(argv[i + 1], nullptr, 10) * 1'000'000;
    else return std::fprintf(stderr, "fake agent: unknown option %s\n", argv[i]), 2;
  }
  const std::string dir = sc::socket_dir();
  sc::ControlServer server;
  strata::Status st = sc::ensure_private_dir(dir);
  if (st.is_ok()) st = server.listen(sc::agent_socket_path(dir, ::getpid()), ::getuid());
  if (!st.is_ok()) {
    std::fprintf(stderr, "fake agent: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("listening %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  const uint64_t end = now_ns() + static_cast<uint64_t>(lifetime_s * 1e9);
  bool running = true;
  while (running && now_ns() < end) {
    server.serve(-1, 10, [&](const sc::Message& req) { return agent.handle(req, running); });
    agent.advance();
  }
  if (agent.rec) agent.finish();
  server.close();
  return 0;
}
