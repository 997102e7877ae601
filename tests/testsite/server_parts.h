// What the testsite's two servers (testsite.cc's web of a few hosts,
// web_main.cc's synthetic internet) and its DNS share: a socket bound on
// 127.0.0.1, and the threads of their open connections.
#ifndef TESTS_TESTSITE_SERVER_PARTS_H_
#define TESTS_TESTSITE_SERVER_PARTS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace crawler::testsite {

// A socket of `type` bound to 127.0.0.1:port (a stream socket with
// SO_REUSEADDR), not listening; -1 if the port is taken.
inline int BindLoopback(int type, uint16_t port) {
  int fd = ::socket(AF_INET, type, 0);
  int one = 1;
  if (type == SOCK_STREAM) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// --log PATH opened for writing into *log (PATH empty: none, null). False,
// said on stderr, if it cannot be.
inline bool OpenLog(const std::string& path, std::FILE** log) {
  *log = nullptr;
  if (path.empty()) return true;
  *log = std::fopen(path.c_str(), "w");
  if (*log == nullptr)
    std::fprintf(stderr, "crawler-testsite: %s: %s\n", path.c_str(),
                 std::strerror(errno));
  return *log != nullptr;
}

// A real image (1x1, transparent), so a replay shows no broken image.
inline std::string OnePixelPng() {
  static const unsigned char kPng[] = {
      0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48,
      0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
      0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78,
      0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00,
      0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82};
  return std::string(reinterpret_cast<const char*>(kPng), sizeof(kPng));
}

// Open connections, each served by a detached thread of its own (a long
// crawl makes tens of thousands), tagged (by listener) so that some can be
// cut off.
class ConnectionThreads {
 public:
  // Serves `fd` on a new thread (serve(fd)), then shuts it down and closes it.
  template <typename Serve>
  void Start(int fd, uint32_t tag, Serve serve) {
    std::lock_guard<std::mutex> lock(mu_);
    fds_[fd] = tag;
    std::thread([this, fd, serve = std::move(serve)] {
      serve(fd);
      std::lock_guard<std::mutex> done(mu_);
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      fds_.erase(fd);
      cv_.notify_all();
    }).detach();
  }
  // Wakes the connections tagged `tag` (all: none given): their reads end.
  void Shutdown(std::optional<uint32_t> tag = std::nullopt) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [fd, t] : fds_)
      if (!tag || t == *tag) ::shutdown(fd, SHUT_RDWR);
  }
  // Wakes them all, then waits for the last to end.
  void StopAll() {
    Shutdown();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return fds_.empty(); });
  }

 private:
  std::mutex mu_;
  std::map<int, uint32_t> fds_;  // open connections: fd -> tag
  std::condition_variable cv_;   // a connection ended
};

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_SERVER_PARTS_H_
