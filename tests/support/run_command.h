// Runs a shell command for a test and captures its exit code and output
// (stdout and stderr together).
#ifndef TESTS_SUPPORT_RUN_COMMAND_H_
#define TESTS_SUPPORT_RUN_COMMAND_H_

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

namespace crawler::testing {

struct CommandResult {
  int exit_code = -1;  // -1: could not run, or killed by a signal
  std::string output;
};

inline CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
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
