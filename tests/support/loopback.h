// Sockets on 127.0.0.1 for the tests: a free port, a connection.
#ifndef CRAWLER_TESTS_LOOPBACK_H_
#define CRAWLER_TESTS_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace crawler::testing {

// A port of 127.0.0.1 nobody listens on now (bound, read back, closed).
inline unsigned FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A socket connected to 127.0.0.1:port, or -1.
inline int ConnectLoopback(unsigned port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0)
    return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// A port of 127.0.0.1 where connections are refused, for as long as this
// object lives: a socket bound to it and not listening (a connect gets a
// reset, ECONNREFUSED), which no other process can take meanwhile. (A port
// bound and closed again is free for anyone: a test beside another once
// found a server there, and its "refused" host answered.)
class RefusedPort {
 public:
  RefusedPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~RefusedPort() { ::close(fd_); }
  RefusedPort(const RefusedPort&) = delete;
  RefusedPort& operator=(const RefusedPort&) = delete;
  unsigned port() const { return port_; }

 private:
  int fd_;
  unsigned port_ = 0;
};

}  // namespace crawler::testing

#endif  // CRAWLER_TESTS_LOOPBACK_H_
