// Runs a shell command for a test and captures its exit code and output
// (stdout and stderr together).
#ifndef TESTS_SUPPORT_RUN_COMMAND_H_
#define TESTS_SUPPORT_RUN_COMMAND_H_

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// Forks and runs `shell_command` under /bin/sh; stdout to `out_fd` if not
// -1. The child gets `death_signal` when the test process dies (a crash, an
// abort, ctest's kill at an entry's TIMEOUT), so nothing a test started
// outlives it, however it ends; destructors stop them on the ordinary
// paths. (The signal comes when the forking thread ends: tests start
// processes from their main thread only.)
inline pid_t ForkShell(const std::string& shell_command, int death_signal,
                       int out_fd = -1) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) ::_exit(127);  // the test died before prctl
    if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", shell_command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Runs `command` under sh, killed (TERM, then KILL 10 s later) after
// `timeout_s`: a command that hangs fails its test (exit code 124, the
// output so far) instead of holding ctest until the entry's TIMEOUT. If
// the test dies first, timeout gets TERM and passes it on.
inline CommandResult RunCommand(const std::string& command, double timeout_s = 1200) {
  CommandResult r;
  int out[2];  // close-on-exec: the child's stdout is its dup2 copy only
  if (::pipe2(out, O_CLOEXEC) != 0) return r;
  const std::string run = "exec timeout -k 10 " + std::to_string(timeout_s) + " sh -c " +
                          ShellQuote(command) + " 2>&1";
  const pid_t pid = ForkShell(run, SIGTERM, out[1]);
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    return r;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof(buf))) != 0) {
    if (n > 0)
      r.output.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

// Starts `command` (via sh, output appended to `log`) and returns its pid;
// it is killed (-9) if the test process dies first.
inline pid_t Spawn(const std::string& command, const std::string& log) {
  return ForkShell("exec " + command + " >> " + log + " 2>&1", SIGKILL);
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

// The state letter of process or thread `stat_path` (/proc/PID/stat or
// /proc/PID/task/TID/stat): R, S, T, Z, ...; 0 if it is gone.
inline char ProcState(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

// Whether `pid` is still: every thread of it stopped (SIGSTOP arrived) and
// every child it forked (a checkpoint writer, which SIGSTOP of its parent
// does not stop) ended, a zombie its stopped parent cannot reap. What it
// shows on disk then stays as it is until SIGCONT.
inline bool StoppedAndStill(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  bool any = false;
  for (const auto& task : std::filesystem::directory_iterator(proc + "/task", ec)) {
    const char state = ProcState(task.path().string() + "/stat");
    if (state != 'T' && state != 't' && state != 0) return false;
    std::ifstream children(task.path().string() + "/children");
    for (long child = 0; children >> child;) {
      const char c = ProcState("/proc/" + std::to_string(child) + "/stat");
      if (c != 'Z' && c != 0) return false;
    }
    any = true;
  }
  return any && !ec;
}

// SIGSTOP to `pid`, then waits (up to `seconds`) until StoppedAndStill:
// whether it came. Not a sleep: a checkpoint writer may take seconds on a
// busy machine.
inline bool StopStill(pid_t pid, double seconds) {
  ::kill(pid, SIGSTOP);
  return WaitFor([pid] { return StoppedAndStill(pid); }, seconds);
}

}  // namespace crawler::testing

#endif  // TESTS_SUPPORT_RUN_COMMAND_H_
