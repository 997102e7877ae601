#include "browser/devtools.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace crawler::browser {
namespace {

using Clock = std::chrono::steady_clock;

Status Failed(const std::string& what) {
  return Status::Error(Status::Code::kIoError, "browser: " + what);
}

// A message of Failed's without its "browser: ", to be nested in another.
std::string Inner(const Status& st) {
  const std::string& m = st.message();
  return m.rfind("browser: ", 0) == 0 ? m.substr(9) : m;
}

// The executable for name: itself if it has a slash, else the first match in
// PATH (looked up before fork: the child only calls what is safe there).
std::string FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(at, end - at) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return "";
}

// Chromium's switches: headless, the pipe, no network of its own (updates,
// metrics, sync, safe browsing: what Puppeteer turns off), a window whose
// scrolling is what a laptop's would be.
std::vector<std::string> Arguments(const LaunchOptions& o) {
  std::vector<std::string> a = {
      "chromium",
      "--headless",
      "--remote-debugging-pipe",
      "--user-data-dir=" + o.user_data_dir,
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-default-apps",
      "--disable-domain-reliability",
      "--disable-extensions",
      "--disable-sync",
      "--disable-breakpad",
      "--disable-client-side-phishing-detection",
      "--disable-features=Translate,OptimizationHints,MediaRouter",
      "--metrics-recording-only",
      "--no-pings",
      "--password-store=basic",
      "--use-mock-keychain",
      "--mute-audio",
      "--hide-scrollbars",
      "--disable-dev-shm-usage",
      // A tab is not in front: its timers, animation frames and scroll
      // events must run all the same.
      "--disable-background-timer-throttling",
      "--disable-backgrounding-occluded-windows",
      "--disable-renderer-backgrounding",
      "--window-size=1280,800",
  };
  // Chromium refuses to start as root with its sandbox on.
  if (::geteuid() == 0) a.push_back("--no-sandbox");
  for (const std::string& e : o.extra_args) a.push_back(e);
  a.push_back("about:blank");
  return a;
}

}  // namespace

Result<std::unique_ptr<DevTools>> DevTools::Launch(const LaunchOptions& options,
                                                   int timeout_ms) {
  const std::string exe = FindExecutable(options.chromium);
  if (exe.empty()) {
    return Failed(options.chromium + ": not found" +
                  (options.chromium.find('/') == std::string::npos
                       ? " in PATH"
                       : " or not executable"));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.user_data_dir, ec);
  if (ec) return Failed(options.user_data_dir + ": " + ec.message());
  // [0]: ours, [1]: the browser's. to: it reads fd 3; from: it writes fd 4.
  int to[2], from[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to) != 0) {
    return Failed(std::string("socketpair: ") + std::strerror(errno));
  }
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, from) != 0) {
    const int e = errno;
    ::close(to[0]);
    ::close(to[1]);
    return Failed(std::string("socketpair: ") + std::strerror(e));
  }
  std::vector<std::string> args = Arguments(options);
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string log = options.log_path.empty() ? "/dev/null" : options.log_path;
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {to[0], to[1], from[0], from[1]}) ::close(fd);
    return Failed(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only, until exec.
    ::setpgid(0, 0);
    const int in = ::fcntl(to[1], F_DUPFD, 10), out = ::fcntl(from[1], F_DUPFD, 10);
    const int null_in = ::open("/dev/null", O_RDONLY);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || null_in < 0 || log_fd < 0) ::_exit(127);
    ::dup2(null_in, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::dup2(in, 3);
    ::dup2(out, 4);
    ::close_range(5, ~0U, 0);  // none of the crawler's files or sockets
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  ::close(to[1]);
  ::close(from[1]);
  ::fcntl(to[0], F_SETFL, O_NONBLOCK);
  ::fcntl(from[0], F_SETFL, O_NONBLOCK);
  std::unique_ptr<DevTools> d(new DevTools(pid, to[0], from[0]));
  auto version = d->Call("Browser.getVersion", {}, "", timeout_ms);
  if (!version.ok()) {
    return Failed(exe + " did not start (" + Inner(version.status()) + ")" +
                  (options.log_path.empty() ? "" : "; its log: " + options.log_path));
  }
  if (const json::value* p = version->if_contains("product"); p && p->is_string()) {
    d->product_ = std::string(p->get_string());
  }
  return d;
}

DevTools::~DevTools() { Stop(); }

namespace {
// CPU seconds of the browsers stopped (GroupCpuSeconds before each kill).
std::atomic<double> g_stopped_cpu_s{0};
}  // namespace

double GroupCpuSeconds(pid_t group) {
  static const double kTick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  uint64_t ticks = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // gone meanwhile
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    // After the command: state ppid pgrp ... utime(14) stime cutime cstime.
    std::istringstream fields(line.substr(paren + 1));
    std::string state;
    long long ppid = 0, pgrp = 0, skip = 0;
    fields >> state >> ppid >> pgrp;
    for (int i = 0; i < 8; ++i) fields >> skip;  // session .. cmajflt
    unsigned long long utime = 0, stime = 0, cutime = 0, cstime = 0;
    fields >> utime >> stime >> cutime >> cstime;
    if (fields && pgrp == group) ticks += utime + stime + cutime + cstime;
  }
  return static_cast<double>(ticks) / kTick;
}

double StoppedBrowsersCpuSeconds() { return g_stopped_cpu_s.load(); }

void DevTools::Stop() {
  if (pid_ > 0) {
    g_stopped_cpu_s.fetch_add(GroupCpuSeconds(pid_));
    ::kill(-pid_, SIGKILL);  // the group: the browser and its helpers
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  for (int* fd : {&to_browser_, &from_browser_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  alive_ = false;
}

Status DevTools::Send(const std::string& message) {
  if (!alive_) return Failed("the browser is gone");
  std::string bytes = message;
  bytes.push_back('\0');
  size_t at = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (at < bytes.size()) {
    const ssize_t n =
        ::send(to_browser_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n > 0) {
      at += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      alive_ = false;
      return Failed(std::string("write: ") + std::strerror(errno));
    }
    if (Clock::now() >= deadline) return Failed("the browser reads nothing (30 s)");
    pollfd p{to_browser_, POLLOUT, 0};
    ::poll(&p, 1, 100);
  }
  return Status();
}

Status DevTools::Pump(int timeout_ms) {
  if (!alive_) return Failed("the browser is gone");
  pollfd p{from_browser_, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r < 0 && errno != EINTR)
    return Failed(std::string("poll: ") + std::strerror(errno));
  if (r <= 0) return Status();
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(from_browser_, chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    alive_ = false;  // 0: closed; or an error
    break;
  }
  size_t start = 0;
  for (size_t nul; (nul = buffer_.find('\0', start)) != std::string::npos;
       start = nul + 1) {
    boost::system::error_code ec;
    json::value v = json::parse(std::string_view(buffer_).substr(start, nul - start), ec);
    if (ec || !v.is_object()) continue;  // not a message: skipped
    json::object& o = v.as_object();
    if (const json::value* id = o.if_contains("id"); id && id->is_number()) {
      replies_[id->to_number<uint64_t>()] = std::move(o);
    } else if (const json::value* m = o.if_contains("method"); m && m->is_string()) {
      Event e{std::string(m->get_string()), {}, ""};
      if (json::value* params = o.if_contains("params"); params && params->is_object()) {
        e.params = std::move(params->as_object());
      }
      if (const json::value* s = o.if_contains("sessionId"); s && s->is_string()) {
        e.session = std::string(s->get_string());
      }
      events_.push_back(std::move(e));
    }
  }
  buffer_.erase(0, start);
  return alive_ ? Status() : Failed("the browser closed its connection");
}

Result<uint64_t> DevTools::Post(std::string_view method, json::object params,
                                std::string_view session) {
  const uint64_t id = next_id_++;
  json::object m{{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (!session.empty()) m["sessionId"] = session;
  if (Status st = Send(json::serialize(m)); !st.ok()) return st;
  return id;
}

std::optional<Result<json::object>> DevTools::Reply(uint64_t id,
                                                    std::string_view method) {
  auto it = replies_.find(id);
  if (it == replies_.end()) return std::nullopt;
  json::object reply = std::move(it->second);
  replies_.erase(it);
  if (const json::value* err = reply.if_contains("error"); err && err->is_object()) {
    const json::value* text = err->as_object().if_contains("message");
    return Result<json::object>(
        Failed(std::string(method) + ": " +
               (text && text->is_string() ? std::string(text->get_string())
                                          : json::serialize(*err))));
  }
  json::value* result = reply.if_contains("result");
  return Result<json::object>(
      result && result->is_object() ? std::move(result->as_object()) : json::object{});
}

Result<json::object> DevTools::Call(std::string_view method, json::object params,
                                    std::string_view session, int timeout_ms) {
  auto id = Post(method, std::move(params), session);
  if (!id.ok()) return id.status();
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto reply = Reply(*id, method)) return std::move(*reply);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Status::Error(Status::Code::kOutOfRange,
                           "browser: " + std::string(method) + ": no reply in " +
                               std::to_string(timeout_ms) + " ms");
    }
    if (Status st = Pump(static_cast<int>(left.count())); !st.ok()) {
      return Failed(std::string(method) + ": " + Inner(st));
    }
  }
}

Result<std::optional<Event>> DevTools::NextEvent(int timeout_ms) {
  if (events_.empty()) {
    if (Status st = Pump(timeout_ms); !st.ok() && events_.empty()) return st;
  }
  if (events_.empty()) return std::optional<Event>();
  Event e = std::move(events_.front());
  events_.pop_front();
  return std::optional<Event>(std::move(e));
}

}  // namespace crawler::browser
