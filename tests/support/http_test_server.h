// A small HTTP/1.1 server on 127.0.0.1 for tests: real sockets, keep-alive,
// one thread per connection, requests parsed by Boost.Beast, responses from a handler
// (status, headers, body, a delay, or raw bytes / a silent close to test broken servers).
// Counts the connections and requests it served. Stops and joins in its destructor.
#ifndef TESTS_SUPPORT_HTTP_TEST_SERVER_H_
#define TESTS_SUPPORT_HTTP_TEST_SERVER_H_

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

#include "../testsite/http_connection.h"

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

  void Serve(int fd) {
    HttpConnection conn(fd);
    HttpRequest req;
    while (!stop_ && conn.Read(&req)) {
      ++requests_;
      Response r = handler_(req.target);
      for (int waited = 0; waited < r.delay_ms && !stop_; waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (r.close_without_reply) {
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      if (!r.raw.empty()) {
        conn.WriteRaw(r.raw);
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
      for (const auto& [k, v] : r.headers) res.set(k, v);
      res.body() = r.body;
      if (!conn.Write(res) || !req.keep_alive) return;
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

#endif  // TESTS_SUPPORT_HTTP_TEST_SERVER_H_
