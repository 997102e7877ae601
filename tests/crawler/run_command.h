// Runs a shell command for a test and captures its exit code and output
// (stdout and stderr together).
#ifndef TESTS_CRAWLER_RUN_COMMAND_H_
#define TESTS_CRAWLER_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

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

}  // namespace crawler::testing

#endif  // TESTS_CRAWLER_RUN_COMMAND_H_
