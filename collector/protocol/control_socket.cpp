#include "control_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

namespace strata::collector {

namespace {

constexpr int kAcceptPauseMs = 100;  // after an accept() failure that waiting may cure
constexpr size_t kAcceptsPerRound = 16;

Status errno_status(const std::string& what) { return Status::io(what + ": " + std::strerror(errno)); }

Status make_address(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Status::invalid("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return Status::ok();
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_fd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    const int64_t left = deadline_ms - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// The uid of the process that listens on the other end of a connected socket.
bool peer_uid(int fd, uid_t& uid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  uid = cred.uid;
  return true;
}

// One try to tell a peer why it is turned away; never waits, never raises SIGPIPE.
void refuse(int fd, const std::string& why) {
  const std::string line = encode_message(error_reply(why));
  [[maybe_unused]] ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

}  // namespace

std::string socket_dir() {
  if (const char* d = std::getenv("STRATA_SOCKET_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') return std::string(x) + "/strata";
  return "/tmp/strata-" + std::to_string(::getuid());
}

Status check_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return errno_status("cannot use " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
    return Status::invalid("refusing to use " + dir + ": it must be a directory owned by uid " + std::to_string(::getuid()) +
                           " with mode 0700 (it is " + (S_ISDIR(st.st_mode) ? "a directory" : "not a directory") +
                           " owned by uid " + std::to_string(st.st_uid) + ", mode " + std::to_string((st.st_mode >> 6) & 7) +
                           std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + ")");
  return Status::ok();
}

Status ensure_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return errno_status("cannot create " + dir);
  return check_private_dir(dir);
}

std::string agent_socket_path(const std::string& dir, pid_t pid) {
  return dir + "/" + std::to_string(pid) + ".sock";
}

Status ControlServer::listen(const std::string& path, uid_t allowed_uid) {
  sockaddr_un addr{};
  if (Status st = make_address(path, addr); !st.is_ok()) return st;
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return errno_status("socket");
  ::unlink(path.c_str());  // a leftover from a dead process that had our pid
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 64) != 0) {
    Status st = errno_status("cannot listen on " + path);
    ::close(fd_);
    fd_ = -1;
    return st;
  }
  path_ = path;
  allowed_uid_ = allowed_uid;
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return Status::ok();
}

bool ControlServer::serve(int wake_fd, int max_wait_ms, const Handler& handle) {
  int64_t now = now_ms();
  int wait = max_wait_ms;
  const auto wait_until = [&](int64_t at) {
    const int64_t left = std::max<int64_t>(0, at - now);
    if (wait < 0 || left < wait) wait = static_cast<int>(left);
  };
  const bool accepting = fd_ >= 0 && now >= accept_paused_until_;
  if (fd_ >= 0 && !accepting) wait_until(accept_paused_until_);
  fds_.clear();
  fds_.push_back({wake_fd, POLLIN, 0});
  fds_.push_back({accepting ? fd_ : -1, POLLIN, 0});
  for (const Client& c : clients_) {
    wait_until(c.deadline_ms);
    fds_.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
  }
  if (::poll(fds_.data(), fds_.size(), wait) < 0) return false;  // EINTR: the caller comes back
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& c = clients_[i];
    if (fds_[2 + i].revents == 0) continue;
    if (c.out.empty()) read_request(c, handle, now_ms());
    if (c.fd >= 0 && !c.out.empty() && send_reply(c)) {
      ::close(c.fd);
      c.fd = -1;
    }
  }
  now = now_ms();
  for (size_t i = clients_.size(); i-- > 0;) {
    Client& c = clients_[i];
    if (c.fd >= 0 && now >= c.deadline_ms) {
      if (c.out.empty()) refuse(c.fd, "bad request: timed out waiting for a request line");
      else ::close(c.fd);
      c.fd = -1;
    }
    if (c.fd < 0) clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  if ((fds_[1].revents & POLLIN) != 0) accept_clients(now);
  return (fds_[0].revents & POLLIN) != 0;
}

void ControlServer::accept_clients(int64_t now) {
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (size_t round = 0; round < kAcceptsPerRound; ++round) {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
        // Out of descriptors: the pending connection would wake poll() at once, forever.
        // Take it with the spare descriptor, say why, and keep the spare for next time.
        ::close(spare_fd_);
        c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0) refuse(c, "the job has run out of file descriptors; try again later");
        spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (c >= 0 && spare_fd_ >= 0) continue;
      }
      accept_paused_until_ = now + kAcceptPauseMs;  // give the job time to free some
      return;
    }
    uid_t uid = 0;
    if (!peer_uid(c, uid) || uid != allowed_uid_) {
      refuse(c, "permission denied: peer uid " + std::to_string(uid) + " is not the job's user");
      continue;
    }
    if (clients_.size() >= kMaxClients) {  // the oldest waiting client makes room
      const auto oldest = std::min_element(clients_.begin(), clients_.end(), [](const Client& a, const Client& b) {
        return a.deadline_ms < b.deadline_ms;
      });
      refuse(oldest->fd, "too many connections at once");
      clients_.erase(oldest);
    }
    Client client;
    client.fd = c;
    client.deadline_ms = now + kClientDeadlineMs;
    clients_.push_back(std::move(client));
  }
}

void ControlServer::read_request(Client& c, const Handler& handle, int64_t now) {
  char buf[1024];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {
      ::close(c.fd);
      c.fd = -1;
      return;
    }
    if (n == 0) return answer(c, error_reply("bad request: connection closed before a full line"), now);
    c.in.append(buf, static_cast<size_t>(n));
    const size_t end = c.in.find('\n');
    if (end != std::string::npos) {
      const Result<Message> req = decode_message(std::string_view(c.in).substr(0, end + 1));
      const Message reply = req.is_ok() ? handle(req.value()) : error_reply("bad request: " + req.status().message());
      return answer(c, reply, now_ms());  // the handler may have taken a while
    }
    if (c.in.size() > kMaxMessageBytes) return answer(c, error_reply("bad request: message too long"), now);
  }
}

void ControlServer::answer(Client& c, const Message& reply, int64_t now) {
  c.out = encode_message(reply);
  if (c.out.size() > kMaxMessageBytes) c.out = encode_message(error_reply("the reply would be too long"));
  c.sent = 0;
  c.deadline_ms = now + kClientDeadlineMs;
}

bool ControlServer::send_reply(Client& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));  // a peer gone is done with too
  }
  return true;
}

void ControlServer::close() {
  for (const Client& c : clients_) ::close(c.fd);
  clients_.clear();
  if (spare_fd_ >= 0) ::close(spare_fd_);
  spare_fd_ = -1;
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

void ControlServer::forget() {
  // Only the listener: the parent's thread may have been changing the client list at fork(),
  // and the other descriptors are harmless copies that close on exec.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<std::string> read_line(int fd, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxMessageBytes) return Status::invalid("message too long");
    if (!wait_fd(fd, POLLIN, deadline)) return Status::io("timed out waiting for a message");
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return n == 0 ? Status::io("connection closed before a full line") : errno_status("recv");
    line.append(buf, static_cast<size_t>(n));
  }
  line.resize(line.find('\n') + 1);
  return line;
}

bool write_all(int fd, std::string_view data, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  while (!data.empty()) {
    // MSG_NOSIGNAL: a peer that hung up must not SIGPIPE the job.
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(fd, POLLOUT, deadline)) continue;
    return false;
  }
  return true;
}

namespace {

// Connects without waiting past the deadline: a Unix socket whose queue is full answers a
// non-blocking connect() with EAGAIN (a blocking one would wait for as long as the server
// does not accept), so it is tried again until the deadline.
Status connect_by(int fd, const sockaddr_un& addr, const std::string& path, int64_t deadline) {
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return Status::ok();
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      const int64_t left = deadline - now_ms();
      if (left <= 0) return Status::io("cannot connect to " + path + ": its queue of connections is full (busy or stuck)");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 20)));
      continue;
    }
    if (errno == EINPROGRESS) {
      int err = 0;
      socklen_t len = sizeof err;
      if (wait_fd(fd, POLLOUT, deadline) && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
        return Status::ok();
      errno = err != 0 ? err : ETIMEDOUT;
    }
    return errno_status("cannot connect to " + path);
  }
}

}  // namespace

PendingRequest::PendingRequest(PendingRequest&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), deadline_(other.deadline_), sent_(other.sent_),
      path_(std::move(other.path_)), send_status_(std::move(other.send_status_)) {}

PendingRequest::~PendingRequest() {
  if (fd_ >= 0) ::close(fd_);
}

Status PendingRequest::connect(const std::string& path, int timeout_ms) {
  deadline_ = now_ms() + timeout_ms;
  path_ = path;
  sockaddr_un addr{};
  if (Status st = make_address(path, addr); !st.is_ok()) return st;
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return errno_status("socket");
  uid_t server = 0;
  Status st = connect_by(fd_, addr, path, deadline_);
  if (st.is_ok() && (!peer_uid(fd_, server) || server != ::getuid()))
    st = Status::invalid("refusing " + path + ": it is served by uid " + std::to_string(server) + ", not by this user");
  if (!st.is_ok()) {
    ::close(fd_);
    fd_ = -1;
  }
  return st;
}

void PendingRequest::send(const Message& req) {
  sent_ = write_all(fd_, encode_message(req), static_cast<int>(std::max<int64_t>(1, deadline_ - now_ms())));
  if (!sent_) send_status_ = errno_status("cannot send to " + path_);
}

Result<Message> PendingRequest::reply() {
  // Read even when sending failed: a server that refuses a peer replies and closes first.
  const int read_ms = static_cast<int>(std::max<int64_t>(sent_ ? deadline_ - now_ms() : 1000, 1));
  const Result<std::string> line = read_line(fd_, read_ms);
  ::close(fd_);
  fd_ = -1;
  if (line.is_ok()) return decode_message(line.value());
  return sent_ ? line.status() : send_status_;
}

Result<Message> request(const std::string& path, const Message& req, int timeout_ms) {
  PendingRequest pending;
  if (Status st = pending.connect(path, timeout_ms); !st.is_ok()) return st;
  pending.send(req);
  return pending.reply();
}

}  // namespace strata::collector
