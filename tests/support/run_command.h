// Runs a shell command for a test and captures its exit code and output
// (stdout and stderr together).
#ifndef TESTS_SUPPORT_RUN_COMMAND_H_
#define TESTS_SUPPORT_RUN_COMMAND_H_

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

namespace crawler::testing {

struct CommandResult {
  int exit_code = -1;  // -1: could not run, or killed by a signal
  std::string output;
};

// `s` quoted for sh: one word, whatever it holds.
inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` under sh, killed (TERM, then KILL 10 s later) after
// `timeout_s`: a command that hangs fails its test (exit code 124, the
// output so far) instead of holding ctest until the entry's TIMEOUT.
inline CommandResult RunCommand(const std::string& command, double timeout_s = 1200) {
  CommandResult r;
  const std::string run = "timeout -k 10 " + std::to_string(timeout_s) + " sh -c " +
                          ShellQuote(command) + " 2>&1";
  std::FILE* p = ::popen(run.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

// Starts `command` (via sh, output appended to `log`) and returns its pid.
inline pid_t Spawn(const std::string& command, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = "exec " + command + " >> " + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// The exit code of `pid` (-1: killed by a signal).
inline int WaitExit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The same, but after `timeout_s` the process is killed (-9) and -2 returned.
inline int WaitExitFor(pid_t pid, double timeout_s) {
  auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Kills and reaps `pid` at scope exit (a REQUIRE that failed, a throw) if it
// is still this process's unreaped child: waitpid(WNOHANG) first, so a pid
// already reaped (and perhaps reused) is never signalled. For every process
// a test starts with Spawn.
inline void KillIfRunning(pid_t pid) {
  if (pid <= 0 || ::waitpid(pid, nullptr, WNOHANG) != 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}
class Reaper {
 public:
  explicit Reaper(const pid_t& pid) : pid_(pid) {}
  ~Reaper() { KillIfRunning(pid_); }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

 private:
  const pid_t& pid_;  // the test's variable: it may start another process
};

// The random seed of a torture: $CRAWLER_TORTURE_SEED if set (to replay a
// failed run), else `fixed` if not 0, else a fresh one; printed either way,
// so that ctest's output of a failure names it.
inline unsigned TortureSeed(const char* what, unsigned fixed = 0) {
  const char* env = std::getenv("CRAWLER_TORTURE_SEED");
  const unsigned seed = env != nullptr && *env != 0
                            ? static_cast<unsigned>(std::strtoul(env, nullptr, 10))
                        : fixed != 0 ? fixed
                                     : std::random_device{}();
  std::fprintf(stderr, "%s: seed %u (CRAWLER_TORTURE_SEED=%u runs it again)\n", what,
               seed, seed);
  return seed;
}

// Polls `done` (observable state: a file, a manifest, a counter) every 20 ms
// until it holds or `seconds` pass; whether it held. A test REQUIREs the
// answer: a wait that ran out is a failure, not a pass.
template <typename Done>
bool WaitFor(Done done, double seconds) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_RUN_COMMAND_H_
