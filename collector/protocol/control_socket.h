// Unix-domain sockets of the control protocol: the per-user directory that holds one
// socket per agent (<dir>/<pid>.sock), the agent's server, and the client's one-shot request.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "message.h"

namespace strata::collector {

// $STRATA_SOCKET_DIR, else $XDG_RUNTIME_DIR/strata, else /tmp/strata-<uid>.
std::string socket_dir();
// Checks that `dir` is a directory (not a symlink) owned by this user with mode 0700: one that
// others created or can write to would let them plant fake agents.
Status check_private_dir(const std::string& dir);
// Creates the directory with mode 0700 if it is missing, then checks it as above.
Status ensure_private_dir(const std::string& dir);
std::string agent_socket_path(const std::string& dir, pid_t pid);

// The agent's side: many clients at once, none able to hold up the others or the thread that
// serves them. Every socket is non-blocking and each client has its own buffers and a deadline
// for its request line and for taking the reply; peers of another uid are refused at once.
// When the process runs out of file descriptors a spare one lets the server accept and refuse
// a connection instead of being woken again and again by it.
class ControlServer {
 public:
  using Handler = std::function<Message(const Message& request)>;
  static constexpr size_t kMaxClients = 32;     // past that, the oldest connection is dropped
  static constexpr int kClientDeadlineMs = 2000;

  ControlServer() = default;
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;
  ~ControlServer() { close(); }

  Status listen(const std::string& path, uid_t allowed_uid);
  bool listening() const { return fd_ >= 0; }
  // Waits up to `max_wait_ms` (-1: no limit) for clients or for `wake_fd` (-1: none), serves
  // what is ready with `handle`, and returns whether `wake_fd` is readable (it is not read).
  bool serve(int wake_fd, int max_wait_ms, const Handler& handle);
  void close();   // drops the clients, stops listening and removes the socket file
  void forget();  // after fork(): closes this process's listener, leaves the parent's file alone

 private:
  struct Client {
    int fd = -1;
    std::string in;     // the request line so far
    std::string out;    // the reply, once there is one
    size_t sent = 0;
    int64_t deadline_ms = 0;
  };
  void accept_clients(int64_t now);
  void read_request(Client& c, const Handler& handle, int64_t now);
  void answer(Client& c, const Message& reply, int64_t now);
  bool send_reply(Client& c);  // true when the client is done with

  int fd_ = -1;
  int spare_fd_ = -1;
  int64_t accept_paused_until_ = 0;
  uid_t allowed_uid_ = 0;
  std::string path_;
  std::vector<Client> clients_;
  std::vector<pollfd> fds_;
};

// Reads one '\n'-terminated line of at most kMaxMessageBytes before the deadline.
Result<std::string> read_line(int fd, int timeout_ms);
bool write_all(int fd, std::string_view data, int timeout_ms);

// One request in three steps, so that a client can reach many agents at once: connect to every
// one, then send every request back to back, then read the replies. Every step ends by the
// deadline connect() set; the server must be this user's.
class PendingRequest {
 public:
  PendingRequest() = default;
  PendingRequest(PendingRequest&& other) noexcept;
  PendingRequest& operator=(PendingRequest&&) = delete;
  ~PendingRequest();

  Status connect(const std::string& path, int timeout_ms);
  void send(const Message& req);  // after connect()
  Result<Message> reply();        // after send()

 private:
  int fd_ = -1;
  int64_t deadline_ = 0;
  bool sent_ = false;
  std::string path_;
  Status send_status_;  // why send() failed
};

// Connects to `path`, sends `req`, and returns the reply, or why there is none.
// Every step, the connection included, ends by `timeout_ms`; the server must be this user's.
Result<Message> request(const std::string& path, const Message& req, int timeout_ms);

}  // namespace strata::collector
