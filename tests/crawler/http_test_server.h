// A small HTTP/1.1 server on 127.0.0.1 for tests: real sockets, keep-alive,
// one thread per connection, responses from a handler (status, headers, body,
// a delay, or raw bytes / a silent close to test broken servers). Counts the
// connections and requests it served. Stops and joins in its destructor.
#ifndef TESTS_CRAWLER_HTTP_TEST_SERVER_H_
#define TESTS_CRAWLER_HTTP_TEST_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace crawler::testing {

class HttpTestServer {
 public:
  struct Response {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    int delay_ms = 0;  // before answering
    std::string raw;   // if set: sent as is instead of a response
    bool close_without_reply = false;
  };
  using Handler = std::function<Response(const std::string& path)>;

  explicit HttpTestServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
      throw std::runtime_error("test server: bind/listen failed");
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~HttpTestServer() {
    stop_ = true;
    accept_thread_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : conn_threads_) t.join();
    for (int fd : conn_fds_) ::close(fd);
  }

  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  uint16_t port() const { return port_; }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections_;
      std::lock_guard<std::mutex> lock(mu_);
      conn_fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  static bool SendAll(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  void Serve(int fd) {
    std::string buf;
    char chunk[8192];
    while (!stop_) {
      size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        buf.append(chunk, static_cast<size_t>(n));
        continue;
      }
      std::string request = buf.substr(0, end + 4);
      buf.erase(0, end + 4);
      ++requests_;
      size_t sp1 = request.find(' ');
      size_t sp2 = request.find(' ', sp1 + 1);
      Response r = handler_(request.substr(sp1 + 1, sp2 - sp1 - 1));
      if (r.delay_ms > 0) {
        for (int waited = 0; waited < r.delay_ms && !stop_; waited += 10) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
      if (r.close_without_reply) {
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      if (!r.raw.empty()) {
        SendAll(fd, r.raw);
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      std::string out = "HTTP/1.1 " + std::to_string(r.status) + " Status\r\n";
      for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
      out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
      if (!SendAll(fd, out)) return;
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> conn_fds_;              // GUARDED_BY(mu_)
  std::vector<std::thread> conn_threads_;  // GUARDED_BY(mu_)
};

}  // namespace crawler::testing

#endif  // TESTS_CRAWLER_HTTP_TEST_SERVER_H_
