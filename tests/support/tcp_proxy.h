// A TCP proxy on 127.0.0.1 for fault tests: a network partition made of real
// sockets. Every connection to port() is forwarded to 127.0.0.1:target. Cut()
// stops forwarding in both directions without closing anything: the peers see
// silence, as behind a dead switch, not a reset (which SIGSTOP of a process
// cannot show: its kernel still answers). Heal() forwards again, what was sent
// meanwhile included. A connection one side closes is closed on the other.
#ifndef CRAWLER_TESTS_TCP_PROXY_H_
#define CRAWLER_TESTS_TCP_PROXY_H_

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loopback.h"

namespace crawler::testing {

class TcpProxy {
 public:
  explicit TcpProxy(unsigned target) : target_(target) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("TcpProxy: cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    thread_.join();
    for (auto [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    ::close(listen_fd_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  unsigned port() const { return port_; }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void Cut() { cut_ = true; }
  void Heal() { cut_ = false; }
  // Bytes forwarded so far (both directions).
  uint64_t forwarded() const { return forwarded_.load(); }

 private:
  // Copies what `from` has to `to`; false when either side is done.
  bool Pump(int from, int to) {
    char buf[16384];
    ssize_t n = ::recv(from, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      ssize_t w = ::send(to, buf + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      sent += w;
    }
    forwarded_ += static_cast<uint64_t>(n);
    return true;
  }

  void Loop() {
    while (!stop_.load()) {
      const bool cut = cut_.load();
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      if (!cut) {
        for (auto [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::vector<std::pair<int, int>> keep;
      for (size_t i = 0; !cut && i < pairs_.size(); ++i) {
        auto [a, b] = pairs_[i];
        const pollfd& pa = fds[1 + 2 * i];
        const pollfd& pb = fds[2 + 2 * i];
        bool ok = true;
        if (pa.revents & (POLLIN | POLLHUP | POLLERR)) ok = Pump(a, b);
        if (ok && (pb.revents & (POLLIN | POLLHUP | POLLERR))) ok = Pump(b, a);
        if (ok) {
          keep.emplace_back(a, b);
        } else {
          ::close(a);
          ::close(b);
        }
      }
      if (!cut) pairs_ = std::move(keep);
      if (fds[0].revents & POLLIN) {
        // Accepted even while cut (the kernel completes the handshake of a
        // listening socket anyway); nothing passes until Heal.
        int client = ::accept(listen_fd_, nullptr, nullptr);
        int upstream = client >= 0 ? ConnectLoopback(target_) : -1;
        if (upstream >= 0) {
          pairs_.emplace_back(client, upstream);
        } else if (client >= 0) {
          ::close(client);
        }
      }
    }
  }

  const unsigned target_;
  int listen_fd_ = -1;
  unsigned port_ = 0;
  std::atomic<bool> stop_{false}, cut_{false};
  std::atomic<uint64_t> forwarded_{0};
  std::vector<std::pair<int, int>> pairs_;  // client, upstream (the thread's)
  std::thread thread_;
};

}  // namespace crawler::testing

#endif  // CRAWLER_TESTS_TCP_PROXY_H_
