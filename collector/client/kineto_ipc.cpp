#include "kineto_ipc.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/base/utf8.h"
#include "processes.h"

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

Result<Datagram> decode(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes) return Status::invalid("datagram shorter than the 40-byte header");
  const uint64_t n = get<uint64_t>(data);
  if (n != size - kHeaderBytes)
    return Status::invalid("payload size field " + std::to_string(n) + " does not match the " +
                           std::to_string(size - kHeaderBytes) + " bytes received");
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
    if (path.size() >= sizeof addr->sun_path) return 0;
    std::memcpy(addr->sun_path, path.data(), path.size());
    return sizeof(sa_family_t) + path.size() + 1;
  }
  // Abstract: a leading NUL, the name, and a trailing NUL that is part of the address.
  if (name.size() + 2 > sizeof addr->sun_path) return 0;
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return sizeof(sa_family_t) + name.size() + 2;
}

namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }
Status errno_status(const std::string& what) { return Status::io(errno_text(what)); }

// Whether a live process is bound to the datagram socket file at `path`.
bool socket_in_use(const sockaddr_un& addr, socklen_t len) {
  const int probe = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return true;  // cannot tell: leave it alone
  const bool refused = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), len) != 0 && errno == ECONNREFUSED;
  ::close(probe);
  return !refused;
}

}  // namespace

Daemon::~Daemon() {
  if (fd_ >= 0) ::close(fd_);
  struct stat st {};
  if (!path_.empty() && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());  // still the socket we bound, not one that replaced it
}

Status Daemon::bind(const std::string& name) {
  sockaddr_un addr{};
  const auto len = static_cast<socklen_t>(endpoint_address(name, &addr));
  if (len == 0)
    return Status::invalid("the ipcfabric endpoint '" + name + "' does not fit a socket address (KINETO_IPC_SOCKET_DIR too long?)");
  const std::string path = addr.sun_path[0] != '\0' ? std::string(addr.sun_path) : std::string();
  const std::string taken = "the ipcfabric endpoint " + (path.empty() ? "'" + name + "'" : path) +
                            " is held by a running process: is a dynolog daemon running? Use `dyno gputrace` with it instead";
  if (struct stat st {}; !path.empty() && ::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Status::invalid(path + " exists and is not a socket; not touching it");
    if (socket_in_use(addr, len)) return Status::io(taken);
    ::unlink(path.c_str());  // left by a process that is gone (connecting to it was refused)
  }
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return errno_status("socket");
  const int on = 1;
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
    Status failed = errno == EADDRINUSE ? Status::io(taken) : errno_status("bind");
    ::close(fd_);
    fd_ = -1;
    return failed;
  }
  struct stat st {};
  if (!path.empty() && ::lstat(path.c_str(), &st) == 0) {
    path_ = path;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  return Status::ok();
}

Status Daemon::deliver(pid_t pid, const std::string& config, int timeout_ms,
                       const std::function<void(const std::string&)>& log) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::vector<uint8_t> buf(1 << 16);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  while (now_ms() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, deadline - now_ms()))) <= 0) continue;
    sockaddr_un from{};
    iovec iov{buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n <= 0) continue;
    const cmsghdr* c = CMSG_FIRSTHDR(&msg);
    ucred sender{};
    const bool vouched = c != nullptr && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS;
    if (vouched) std::memcpy(&sender, CMSG_DATA(c), sizeof sender);
    if (!vouched || sender.uid != ::getuid() || !descends_from(sender.pid, pid)) {
      if (log)
        log("ignored a datagram from pid " + std::to_string(sender.pid) + " (uid " + std::to_string(sender.uid) +
            "): not pid " + std::to_string(pid) + " or a process it started, as this user");
      continue;
    }
    const Result<Datagram> datagram = decode(buf.data(), static_cast<size_t>(n));
    if (!datagram.is_ok()) {
      if (log) log("ignored a malformed datagram: " + datagram.status().message());
      continue;
    }
    std::vector<uint8_t> reply;
    bool delivered = false;
    if (datagram->type == "ctxt") {
      auto ctx = decode_context(datagram->payload);
      if (ctx && log) log("job pid " + std::to_string(ctx->pid) + " registered (gpu " + std::to_string(ctx->gpu) + ")");
      const int32_t count = 1;
      reply = encode("ctxt", &count, sizeof count);
    } else if (datagram->type == "req") {
      auto req = decode_request(datagram->payload);
      const bool wanted = req && (req->type & kConfigActivities) != 0 &&
                          std::find(req->pids.begin(), req->pids.end(), pid) != req->pids.end();
      const std::string& text = wanted ? config : std::string();
      reply = encode("req", text.data(), text.size());
      delivered = wanted;
    } else {
      if (log) log("ignored a datagram of unknown type '" + printable_text(datagram->type) + "'");
      continue;
    }
    if (::sendto(fd_, reply.data(), reply.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&from),
                 msg.msg_namelen) < 0) {
      if (log) log(errno_text("reply failed"));
      continue;
    }
    if (delivered) return Status::ok();
  }
  return Status::io("pid " + std::to_string(pid) +
                    " did not ask for a config in time: start it with KINETO_USE_DAEMON=1 and a Kineto config holding "
                    "ENABLE_IPC_FABRIC=true (KINETO_CONFIG=FILE or /etc/libkineto.conf); Kineto polls every few seconds");
}

TraceDir::~TraceDir() {
  if (path_.empty()) return;
  if (DIR* d = ::opendir(path_.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ::unlinkat(dirfd(d), e->d_name, 0);
    ::closedir(d);
  }
  ::rmdir(path_.c_str());
}

Status TraceDir::create() {
  const char* base = std::getenv("KINETO_ONDEMAND_TRACE_DIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/strata-kineto-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)  // mode 0700, a name nobody can guess
    return errno_status("cannot create a private directory for the trace under " + tmpl.substr(0, tmpl.rfind('/')));
  path_ = tmpl;
  return Status::ok();
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

// Opens a trace for reading only if it is a regular file of this user, without following a
// symlink or blocking on a FIFO; NotFound when there is none.
Result<int> open_own_file(const std::string& path, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return errno == ENOENT ? Status::not_found("the trace " + path + " is gone") : errno_status("refusing " + path);
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) {
    ::close(fd);
    return Status::invalid("refusing " + path + ": not a regular file of this user");
  }
  return fd;
}

// True when the file ends with '}' (after blanks): Kineto wrote the whole document.
bool looks_complete(int fd, off_t size) {
  char tail[16];
  const off_t n = std::min<off_t>(size, sizeof tail);
  if (::pread(fd, tail, static_cast<size_t>(n), size - n) != n) return false;
  const std::string_view text(tail, static_cast<size_t>(n));
  const size_t last = text.find_last_not_of(" \r\n\t");
  return last != std::string_view::npos && text[last] == '}';
}

}  // namespace

Result<std::string> wait_for_trace(const std::vector<std::string>& paths, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::vector<off_t> last(paths.size(), -1);
  while (now_ms() < deadline) {
    for (size_t i = 0; i < paths.size(); ++i) {
      struct stat st {};
      const Result<int> opened = open_own_file(paths[i], st);
      if (!opened.is_ok()) {
        if (opened.status().code() != StatusCode::NotFound) return opened.status();
        continue;
      }
      const int fd = opened.value();
      const bool stable = st.st_size > 0 && st.st_size == last[i];
      last[i] = st.st_size;
      const bool complete = stable && looks_complete(fd, st.st_size);
      ::close(fd);
      if (complete) return paths[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return Status::io("no complete trace at " + paths.front() + " in time (Kineto writes it after the trace window ends)");
}

Status move_trace(const std::string& from, const std::string& to) {
  struct stat st {};
  const Result<int> opened = open_own_file(from, st);
  if (!opened.is_ok()) return opened.status();
  const int in = opened.value();
  bool ok = from == to || std::rename(from.c_str(), to.c_str()) == 0;
  if (!ok && errno == EXDEV) {  // another file system: copy what was checked, then drop it
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    char buf[1 << 16];
    ssize_t n = 0;
    ok = out >= 0;
    while (ok && (n = ::read(in, buf, sizeof buf)) > 0) ok = ::write(out, buf, static_cast<size_t>(n)) == n;
    ok = ok && n == 0;
    if (out >= 0 && ::close(out) != 0) ok = false;
    if (ok) ::unlink(from.c_str());
  }
  Status moved = ok ? Status::ok() : errno_status("cannot move " + from + " to " + to);
  ::close(in);
  return moved;
}

}  // namespace strata::collector::kineto
