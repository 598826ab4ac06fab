#include "kineto_ipc.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace strata::collector::kineto {

namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// resize + memcpy rather than insert(): g++ 12 warns falsely on small inserts at -O3.
void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  if (n == 0) return;
  const size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof v);
}

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::vector<uint8_t> encode(std::string_view type, const void* payload, size_t size) {
  std::vector<uint8_t> out;
  put<uint64_t>(out, size);
  char name[kTypeBytes] = {};
  std::memcpy(name, type.data(), std::min(type.size(), kTypeBytes - 1));
  put_bytes(out, name, kTypeBytes);
  put_bytes(out, payload, size);
  return out;
}

std::optional<Datagram> decode(const uint8_t* data, size_t size, std::string* error) {
  if (size < kHeaderBytes) {
    *error = "datagram shorter than the 40-byte header";
    return std::nullopt;
  }
  const uint64_t n = get<uint64_t>(data);
  if (n != size - kHeaderBytes) {
    *error = "payload size field " + std::to_string(n) + " does not match the " +
             std::to_string(size - kHeaderBytes) + " bytes received";
    return std::nullopt;
  }
  const char* type = reinterpret_cast<const char*>(data + 8);
  Datagram d;
  d.type.assign(type, strnlen(type, kTypeBytes));
  d.payload.assign(data + kHeaderBytes, data + size);
  return d;
}

std::vector<uint8_t> encode_context(const Context& c) {
  std::vector<uint8_t> out;
  put(out, c.gpu);
  put(out, c.pid);
  put(out, c.jobid);
  return out;
}

std::vector<uint8_t> encode_request(const Request& r) {
  std::vector<uint8_t> out;
  put(out, r.type);
  put(out, static_cast<int32_t>(r.pids.size()));
  put(out, r.jobid);
  for (int32_t pid : r.pids) put(out, pid);
  return out;
}

std::optional<Context> decode_context(const std::vector<uint8_t>& payload) {
  if (payload.size() != 16) return std::nullopt;
  return Context{get<int32_t>(payload.data()), get<int32_t>(payload.data() + 4), get<int64_t>(payload.data() + 8)};
}

std::optional<Request> decode_request(const std::vector<uint8_t>& payload) {
  if (payload.size() < 16) return std::nullopt;
  Request r;
  r.type = get<int32_t>(payload.data());
  const int32_t n = get<int32_t>(payload.data() + 4);
  r.jobid = get<int64_t>(payload.data() + 8);
  if (n < 0 || payload.size() != 16 + 4 * static_cast<size_t>(n)) return std::nullopt;
  for (int32_t i = 0; i < n; ++i) r.pids.push_back(get<int32_t>(payload.data() + 16 + 4 * static_cast<size_t>(i)));
  return r;
}

std::string trace_config(uint64_t duration_ms, uint32_t iterations, const std::string& log_file, uint32_t warmup_s) {
  std::string c = "ACTIVITIES_LOG_FILE=" + log_file + "\n";
  if (iterations > 0) {
    c += "PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=1\n";
    c += "ACTIVITIES_ITERATIONS=" + std::to_string(iterations) + "\n";
  } else {
    c += "PROFILE_START_TIME=0\n";
    c += "ACTIVITIES_DURATION_MSECS=" + std::to_string(duration_ms) + "\n";
  }
  c += "ACTIVITIES_WARMUP_PERIOD_SECS=" + std::to_string(warmup_s) + "\n";
  return c;
}

size_t endpoint_address(const std::string& name, void* out) {
  auto* addr = static_cast<sockaddr_un*>(out);
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  const char* dir = std::getenv("KINETO_IPC_SOCKET_DIR");
  if (dir != nullptr && *dir != '\0') {
    const std::string path = std::string(dir) + "/" + name;
    const size_t n = std::min(path.size(), sizeof addr->sun_path - 1);
    std::memcpy(addr->sun_path, path.data(), n);
    return sizeof(sa_family_t) + n + 1;
  }
  // Abstract: a leading NUL, the name, and a trailing NUL that is part of the address.
  const size_t n = std::min(name.size(), sizeof addr->sun_path - 2);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return sizeof(sa_family_t) + n + 2;
}

Daemon::~Daemon() {
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

bool Daemon::bind(const std::string& name, std::string* error) {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_un addr{};
  const auto len = static_cast<socklen_t>(endpoint_address(name, &addr));
  if (addr.sun_path[0] != '\0') {
    path_ = addr.sun_path;
    ::unlink(path_.c_str());
  }
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    *error = errno == EADDRINUSE ? "the ipcfabric endpoint '" + name +
                                       "' is taken: is a dynolog daemon running? Use `dyno gputrace` with it instead"
                                 : std::string("bind: ") + std::strerror(errno);
    path_.clear();
    return false;
  }
  return true;
}

bool Daemon::deliver(pid_t pid, const std::string& config, int timeout_ms,
                     const std::function<void(const std::string&)>& log, std::string* error) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::vector<uint8_t> buf(1 << 16);
  while (now_ms() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, deadline - now_ms()))) <= 0) continue;
    sockaddr_un from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) continue;
    std::string why;
    auto msg = decode(buf.data(), static_cast<size_t>(n), &why);
    if (!msg) {
      if (log) log("ignored a malformed datagram: " + why);
      continue;
    }
    std::vector<uint8_t> reply;
    bool delivered = false;
    if (msg->type == "ctxt") {
      auto ctx = decode_context(msg->payload);
      if (ctx && log) log("job pid " + std::to_string(ctx->pid) + " registered (gpu " + std::to_string(ctx->gpu) + ")");
      const int32_t count = 1;
      reply = encode("ctxt", &count, sizeof count);
    } else if (msg->type == "req") {
      auto req = decode_request(msg->payload);
      const bool wanted = req && (req->type & kConfigActivities) != 0 &&
                          std::find(req->pids.begin(), req->pids.end(), pid) != req->pids.end();
      const std::string& text = wanted ? config : std::string();
      reply = encode("req", text.data(), text.size());
      delivered = wanted;
    } else {
      if (log) log("ignored a datagram of unknown type '" + msg->type + "'");
      continue;
    }
    if (::sendto(fd_, reply.data(), reply.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&from), from_len) < 0) {
      if (log) log(std::string("reply failed: ") + std::strerror(errno));
      continue;
    }
    if (delivered) return true;
  }
  *error = "pid " + std::to_string(pid) +
           " did not ask for a config in time: start it with KINETO_USE_DAEMON=1 and a Kineto config holding "
           "ENABLE_IPC_FABRIC=true (KINETO_CONFIG=FILE or /etc/libkineto.conf); Kineto polls every few seconds";
  return false;
}

std::vector<std::string> written_names(const std::string& requested, pid_t pid) {
  std::vector<std::string> out = {requested};
  for (const char* suffix : {".pt.trace.json", ".json"}) {
    const size_t at = requested.find(suffix);
    if (at == std::string::npos) continue;
    out.push_back(requested.substr(0, at) + "_" + std::to_string(pid) + requested.substr(at));
    break;
  }
  return out;
}

namespace {
// True when `path` holds a finished JSON document (last non-blank byte is '}').
bool looks_complete(const std::string& path, off_t size) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(-std::min<off_t>(size, 16), std::ios::end);
  const std::string tail((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t last = tail.find_last_not_of(" \r\n\t");
  return last != std::string::npos && tail[last] == '}';
}
}  // namespace

std::string wait_for_trace(const std::vector<std::string>& paths, int timeout_ms, std::string* error) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::vector<off_t> last(paths.size(), -1);
  while (now_ms() < deadline) {
    for (size_t i = 0; i < paths.size(); ++i) {
      struct stat st {};
      if (::stat(paths[i].c_str(), &st) != 0 || st.st_size == 0) continue;
      const bool stable = st.st_size == last[i];
      last[i] = st.st_size;
      if (stable && looks_complete(paths[i], st.st_size)) return paths[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  *error = "no complete trace at " + paths.front() + " in time (Kineto writes it after the trace window ends)";
  return "";
}

}  // namespace strata::collector::kineto
