// One headless Chromium and its DevTools connection over a pipe
// (--remote-debugging-pipe, what Puppeteer uses): JSON messages, each ended
// by a NUL byte, written to the browser's fd 3 and read from its fd 4.
// Here the two "pipes" are socket pairs, so a write to a browser that died
// fails with EPIPE instead of raising SIGPIPE in the crawler.
//
// A DevTools is used by one thread at a time (the renderer that owns it).
// Call sends a command and waits for its reply; the events that arrive
// meanwhile are queued for NextEvent. Chromium runs in a process group of its
// own, so its helpers (zygote, renderers) are killed with it: the destructor
// asks it to close, then kills the group and reaps it.
#ifndef CRAWLER_BROWSER_DEVTOOLS_H_
#define CRAWLER_BROWSER_DEVTOOLS_H_

#include <sys/types.h>

#include <boost/json.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawler::browser {

namespace json = boost::json;

struct LaunchOptions {
  std::string chromium = "chromium";  // a path, or a name looked up in PATH
  std::string user_data_dir;          // the profile; created if missing
  // Written by Chromium's stdout and stderr (empty: /dev/null).
  std::string log_path;
  std::vector<std::string> extra_args;  // after ours, e.g. --host-resolver-rules=...
};

// A DevTools event: "method", "params", and the session it belongs to
// ("" for the browser's own).
struct Event {
  std::string method;
  json::object params;
  std::string session;
};

// CPU seconds (user and system, their reaped children's included) of the
// processes in process group `group` now: a browser and its helpers (each
// browser is the leader of a group of its own). Read from /proc.
double GroupCpuSeconds(pid_t group);
// CPU seconds of the browsers stopped so far in this process, each read
// just before it was killed.
double StoppedBrowsersCpuSeconds();

class DevTools {
 public:
  // Starts Chromium headless and checks it answers (Browser.getVersion).
  // Fails naming why: not found, did not start, no answer in timeout_ms.
  static Result<std::unique_ptr<DevTools>> Launch(const LaunchOptions& options,
                                                  int timeout_ms = 30000);
  ~DevTools();
  DevTools(const DevTools&) = delete;
  DevTools& operator=(const DevTools&) = delete;

  // Sends method(params) in session ("" for the browser) and waits up to
  // timeout_ms for its reply's "result". An error reply, a timeout (code
  // kOutOfRange: the page or the browser hangs) or a browser gone is an
  // error naming the method.
  Result<json::object> Call(std::string_view method, json::object params,
                            std::string_view session, int timeout_ms);
  // Sends it and returns at once: its id, for Reply. For a command whose
  // reply waits on events the caller must answer first (Page.navigate
  // while the Fetch domain holds the document).
  Result<uint64_t> Post(std::string_view method, json::object params,
                        std::string_view session);
  // The reply to Post's id if it came (read by NextEvent or Call), as
  // Call returns it; nullopt if not yet.
  std::optional<Result<json::object>> Reply(uint64_t id, std::string_view method);
  // The next event, waiting up to timeout_ms; nullopt when none came. An
  // error when the browser is gone.
  Result<std::optional<Event>> NextEvent(int timeout_ms);

  pid_t pid() const { return pid_; }
  // Whether the browser's connection is still open (false once it died).
  bool alive() const { return alive_; }
  std::string product() const { return product_; }

 private:
  DevTools(pid_t pid, int to_browser, int from_browser)
      : pid_(pid), to_browser_(to_browser), from_browser_(from_browser) {}
  // Reads what the browser sent within timeout_ms (0: what is there) and
  // files each whole message as a reply or an event.
  Status Pump(int timeout_ms);
  Status Send(const std::string& message);
  void Stop();

  pid_t pid_;
  int to_browser_;
  int from_browser_;
  bool alive_ = true;
  uint64_t next_id_ = 1;
  std::string buffer_;  // bytes read, not yet a whole message
  std::map<uint64_t, json::object> replies_;
  std::deque<Event> events_;
  std::string product_;
};

}  // namespace crawler::browser

#endif  // CRAWLER_BROWSER_DEVTOOLS_H_
