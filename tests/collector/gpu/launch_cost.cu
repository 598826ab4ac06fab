// CPU cost of one kernel launch, with and without the agent recording each kind.
// Run under `strata record --dormant` with STRATA_SOCKET_DIR set: the program asks its
// own agent over the control socket to start/stop recordings with `kinds=...`, so every
// variant is measured in the same process, interleaved over rounds. Without the agent,
// only "off" is measured. Each sample times a batch of 256 launches (each with the
// cudaGetDevice / cudaGetLastError calls PyTorch makes around a launch) without waiting
// for the GPU, then synchronizes outside the timed region; the minimum and the median
// over 150 batches are robust to the machine's scheduling noise.
//   launch_cost ROUNDS "off;kernel;kernel,runtime;default;..."
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void empty_kernel() {}

static std::string request(const std::string& line) {
  const char* dir = std::getenv("STRATA_SOCKET_DIR");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s/%d.sock", dir ? dir : "/tmp", getpid());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) { perror("connect"); std::exit(1); }
  std::string msg = line + "\n";
  if (write(fd, msg.data(), msg.size()) < 0) std::exit(1);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while (reply.empty() || reply.back() != '\n') {
    if ((n = read(fd, buf, sizeof buf)) <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (reply.rfind("ok", 0) != 0) { std::fprintf(stderr, "%s -> %s", line.c_str(), reply.c_str()); std::exit(1); }
  return reply;
}

static void measure(cudaStream_t s, double* min_us, double* med_us) {
  constexpr int kBatches = 150, kPer = 256;
  std::vector<double> v;
  for (int b = 0; b < kBatches; ++b) {
    nvtxRangePushA("batch");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPer; ++i) {
      int d = 0;
      cudaGetDevice(&d);
      empty_kernel<<<1, 1, 0, s>>>();
      (void)cudaGetLastError();
    }
    const auto t1 = std::chrono::steady_clock::now();
    nvtxRangePop();
    cudaStreamSynchronize(s);
    v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kPer);
  }
  std::sort(v.begin(), v.end());
  *min_us = v.front();
  *med_us = v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  std::vector<std::string> variants;
  for (std::string rest = argc > 2 ? argv[2] : "off"; !rest.empty();) {
    const size_t k = rest.find(';');
    if (!rest.substr(0, k).empty()) variants.push_back(rest.substr(0, k));
    rest = k == std::string::npos ? "" : rest.substr(k + 1);
  }
  const char* tag = argc > 3 ? argv[3] : "run";
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  double mn, md;
  measure(s, &mn, &md);  // warm-up
  measure(s, &mn, &md);
  std::printf("{\"tag\": \"%s\", \"round\": -1, \"variant\": \"pre\", \"min_us\": %.3f, \"med_us\": %.3f}\n", tag, mn, md);
  int n = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < variants.size(); ++j) {
      const std::string v = variants[(j + static_cast<size_t>(r)) % variants.size()];
      const std::string& kinds = v;
      const std::string out = "/tmp/launch-cost-" + std::to_string(getpid()) + "-" + std::to_string(++n) + ".json";
      if (kinds != "off") request("start output=" + out + " kinds=" + kinds);
      measure(s, &mn, &md);
      std::string events;
      if (kinds != "off") {
        const std::string reply = request("stop");
        const size_t e = reply.find(" events=");
        if (e != std::string::npos) events = reply.substr(e + 8, reply.find(' ', e + 8) - e - 8);
        unlink(out.c_str());
      }
      std::printf("{\"tag\": \"%s\", \"round\": %d, \"variant\": \"%s\", \"min_us\": %.3f, \"med_us\": %.3f, \"events\": \"%s\"}\n",
                  tag, r, v.c_str(), mn, md, events.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
