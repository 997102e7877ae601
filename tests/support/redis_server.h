// A real redis-server on 127.0.0.1 for the cluster tests, started through
// scripts/redis-local.sh (AOF, appendfsync always) on a free port.
#ifndef CRAWLER_TESTS_REDIS_SERVER_H_
#define CRAWLER_TESTS_REDIS_SERVER_H_

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "loopback.h"
#include "run_command.h"

namespace crawler::testing {

// redis-server through scripts/redis-local.sh (AOF, appendfsync always).
// `args` go to redis-server (as "--requirepass PW": redis-cli, here and in
// the script, then needs REDISCLI_AUTH in the environment).
class RedisServer {
 public:
  explicit RedisServer(std::string dir, std::string args = "")
      : dir_(std::move(dir)), args_(std::move(args)), port_(FreePort()) {
    Start();
  }
  ~RedisServer() { Stop(); }
  void Start() {
    CommandResult r =
        RunCommand("bash " CRAWLER_SOURCE_DIR "/scripts/redis-local.sh start " +
                   std::to_string(port_) + " " + dir_ + " " + args_);
    if (r.exit_code != 0) throw std::runtime_error("redis-server: " + r.output);
  }
  // Like a crash: SIGKILL, no shutdown save (the AOF is what survives).
  void Kill() {
    std::string pid = ReadText(dir_ + "/redis-" + std::to_string(port_) + ".pid");
    if (!pid.empty()) ::kill(std::atoi(pid.c_str()), SIGKILL);
    for (int i = 0;
         i < 100 &&
         RunCommand("redis-cli -p " + std::to_string(port_) + " ping").exit_code == 0;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // SHUTDOWN NOSAVE, then waits for the process to be gone: SIGKILL if it
  // is still there after 10 s. A SHUTDOWN can fail or wait (a primary waits
  // for lagging replicas; a replica mid-sync); without the wait a replica
  // started mid-test outlived its test, its directory deleted under it.
  void Stop() {
    const std::string text = ReadText(dir_ + "/redis-" + std::to_string(port_) + ".pid");
    const pid_t pid = static_cast<pid_t>(std::atoi(text.c_str()));
    (void)RunCommand("bash " CRAWLER_SOURCE_DIR "/scripts/redis-local.sh stop " +
                     std::to_string(port_));
    if (pid <= 0) return;
    auto gone = [pid] { return ::kill(pid, 0) != 0; };
    for (int i = 0; i < 200 && !gone(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!gone()) ::kill(pid, SIGKILL);
    for (int i = 0; i < 200 && !gone(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  unsigned port() const { return port_; }
  // "redis-cli -p PORT ", to which a test appends its command.
  std::string CliPrefix() const { return "redis-cli -p " + std::to_string(port_) + " "; }
  // redis-cli's output for `args` ("" if it failed).
  std::string Cli(const std::string& args) const {
    CommandResult r = RunCommand(CliPrefix() + args);
    return r.exit_code == 0 ? r.output : std::string();
  }
  // Field `name` of INFO (`section`: "memory", "all", ...), as text ("" if
  // absent).
  std::string Info(const std::string& name, const std::string& section = "all") const {
    std::string info = Cli("INFO " + section);
    size_t at = info.find("\n" + name + ":");
    if (at == std::string::npos) return "";
    at += name.size() + 2;
    return info.substr(at, info.find_first_of("\r\n", at) - at);
  }
  // The same as a number (0 if absent).
  uint64_t InfoNumber(const std::string& name, const std::string& section = "all") const {
    return std::strtoull(Info(name, section).c_str(), nullptr, 10);
  }

 private:
  std::string dir_;
  std::string args_;
  unsigned port_;
};

// A part's test bench: a fresh directory (TMP/NAME-PID, emptied first,
// removed after; OUT in DIR/out) and a redis-server of its own (DIR/redis).
class ScratchRedis {
 public:
  explicit ScratchRedis(const std::string& name)
      : dir_(Fresh(name)), server_(std::make_unique<RedisServer>(dir_ + "/redis")) {}
  ~ScratchRedis() {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  ScratchRedis(const ScratchRedis&) = delete;
  ScratchRedis& operator=(const ScratchRedis&) = delete;
  const std::string& dir() const { return dir_; }
  RedisServer& server() { return *server_; }

 private:
  static std::string Fresh(const std::string& name) {
    const std::string dir = (std::filesystem::temp_directory_path() /
                             (name + "-" + std::to_string(::getpid())))
                                .string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/out");
    return dir;
  }
  std::string dir_;
  std::unique_ptr<RedisServer> server_;
};

}  // namespace crawler::testing

#endif  // CRAWLER_TESTS_REDIS_SERVER_H_
