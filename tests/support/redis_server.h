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

// Runs scripts/redis-local.sh `verb_args` ("start PORT DIR ..." or
// "sentinel PORT DIR ...") in the foreground: the server is the test's
// child (Spawn: killed with it, however the test ends). Waits for PONG on
// `port` as long as a busy machine takes (60 s: then it throws, with the
// server's log); its stdout goes to `log`.
inline pid_t StartLocalRedis(const std::string& verb_args, unsigned port,
                             const std::string& log, const std::string& server_log) {
  const pid_t pid = Spawn("env REDIS_LOCAL_FOREGROUND=1 bash " CRAWLER_SOURCE_DIR
                          "/scripts/redis-local.sh " +
                              verb_args,
                          log);
  const std::string ping = "redis-cli -p " + std::to_string(port) + " ping";
  bool exited = false;
  const bool up = WaitFor(
      [&] {
        exited = ::waitpid(pid, nullptr, WNOHANG) != 0;
        return exited || RunCommand(ping).output == "PONG\n";
      },
      60);
  if (up && !exited) return pid;
  KillIfRunning(pid);
  throw std::runtime_error("redis-local.sh " + verb_args + " did not answer PONG" +
                           (exited ? " (it exited)" : " in 60 s") + ": " + ReadText(log) +
                           ReadText(server_log));
}

// SHUTDOWN NOSAVE for a StartLocalRedis server, then waits for it to exit
// (SIGKILL after 10 s: a primary waits for lagging replicas, a replica may
// be mid-sync) and reaps it.
inline void StopLocalRedis(pid_t pid, unsigned port) {
  if (pid <= 0) return;
  (void)RunCommand("redis-cli -p " + std::to_string(port) + " shutdown nosave", 30);
  (void)WaitExitFor(pid, 10);
}

// redis-server through scripts/redis-local.sh (AOF, appendfsync always),
// the test's child process. `args` go to redis-server (as "--requirepass
// PW": redis-cli, here and in the script, then needs REDISCLI_AUTH in the
// environment).
class RedisServer {
 public:
  explicit RedisServer(std::string dir, std::string args = "")
      : dir_(std::move(dir)), args_(std::move(args)), port_(FreePort()) {
    Start();
  }
  ~RedisServer() { Stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  void Start() {
    std::filesystem::create_directories(dir_);
    const std::string name = dir_ + "/redis-" + std::to_string(port_);
    pid_ = StartLocalRedis("start " + std::to_string(port_) + " " + dir_ + " " + args_,
                           port_, name + ".out", name + ".log");
  }
  // Like a crash: SIGKILL, no shutdown save (the AOF is what survives).
  void Kill() {
    if (pid_ <= 0) return;  // (never waitpid(-1): that is any child)
    ::kill(pid_, SIGKILL);
    (void)WaitExitFor(pid_, 10);
    pid_ = -1;
  }
  // SHUTDOWN NOSAVE; returns once the process is gone (StopLocalRedis).
  void Stop() {
    StopLocalRedis(pid_, port_);
    pid_ = -1;
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
  pid_t pid_ = -1;
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
