// A small synchronous Redis client over hiredis (Debian's libhiredis 0.14:
// no TLS, so a cluster's Redis must be on a trusted network; AUTH is
// supported through the password in the URL). One connection per object,
// used by one thread at a time. Commands go as argument vectors (binary
// safe); Pipeline sends many and then reads every reply, which is what makes
// the URL exchange fast (crawler/src/cluster.h).
#ifndef CRAWLER_REDIS_H_
#define CRAWLER_REDIS_H_

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "crawler/config.h"

namespace crawler::cluster {

// redis://HOST[:PORT] (default port 6379). The password, if the server wants
// one, is read from the environment (kRedisPasswordEnv, base/secret.h): a URL
// with a password in it is refused, since it would be written to
// OUT/start-config.toml, every checkpoint, the logs and argv.
//
// Behind Sentinel, `master` names the primary the `sentinels` watch: a
// connect asks them (in order, the first that answers) where it is, then
// checks that the server there is a primary (ROLE). host:port are then the
// primary's, as this connect found it. The sentinels are asked without a
// password.
//
// wait_replicas > 0: every pipeline (and command) that writes ends with
// WAIT wait_replicas wait_timeout_ms, and fewer copies than that in time
// fail it like a lost connection (kIoError): its writes count as not made.
struct RedisAddress {
  std::string host;
  int port = 6379;
  std::string password;  // never logged: Text() is host:port
  std::vector<std::pair<std::string, int>> sentinels;
  std::string master;
  uint32_t wait_replicas = 0;
  uint32_t wait_timeout_ms = 1000;
  std::string Text() const {
    if (master.empty()) return host + ":" + std::to_string(port);
    const std::string via = "sentinel master '" + master + "'";
    return host.empty() ? via : host + ":" + std::to_string(port) + " (" + via + ")";
  }
};
// `what` names where the URL came from in an error ("cluster.redis", or
// cluster-stats's argument).
Result<RedisAddress> ParseRedisUrl(const std::string& url,
                                   std::string_view what = "cluster.redis");
// A cluster config's Redis: cluster.redis, or cluster.sentinels with
// cluster.sentinel_master; with cluster.wait_replicas. Errors name the key.
Result<RedisAddress> ClusterRedisAddress(const engine::ClusterConfig& c);

// A typed, null-safe view of one reply or of one of its elements: how every
// reply is read. A missing element (past the end, or of a reply that is not
// an array) is an empty view: nil, no elements, "" and no integer. Views
// point into the RedisReply that owns the hiredis object: they live no
// longer than it.
class ReplyView {
 public:
  ReplyView() = default;
  explicit ReplyView(const redisReply* r) : r_(r) {}

  bool nil() const { return r_ == nullptr || r_->type == REDIS_REPLY_NIL; }
  bool error() const { return r_ != nullptr && r_->type == REDIS_REPLY_ERROR; }
  bool array() const { return r_ != nullptr && r_->type == REDIS_REPLY_ARRAY; }
  bool string() const { return r_ != nullptr && r_->type == REDIS_REPLY_STRING; }
  // An array's elements (0 for any other reply).
  size_t size() const { return array() ? r_->elements : 0; }
  ReplyView operator[](size_t i) const {
    return ReplyView(i < size() ? r_->element[i] : nullptr);
  }
  ReplyView back() const { return size() == 0 ? ReplyView() : (*this)[size() - 1]; }
  // The text of a string, status or error; an integer as text; else "".
  std::string str() const {
    if (r_ == nullptr) return "";
    switch (r_->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
      case REDIS_REPLY_ERROR:
        return std::string(r_->str, r_->len);
      case REDIS_REPLY_INTEGER:
        return std::to_string(r_->integer);
      default:
        return "";
    }
  }
  // An integer reply's value (nullopt for any other reply).
  std::optional<long long> integer() const {
    if (r_ == nullptr || r_->type != REDIS_REPLY_INTEGER) return std::nullopt;
    return r_->integer;
  }
  // An integer reply as a count: a negative one or another reply is 0.
  uint64_t count() const {
    return static_cast<uint64_t>(std::max<long long>(0, integer().value_or(0)));
  }
  // Each element's str().
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < size(); ++i) out.push_back((*this)[i].str());
    return out;
  }
  // A flat array of pairs (HGETALL, an XADD's fields): f(first, second)
  // for each whole pair.
  template <typename F>
  void ForEachPair(F&& f) const {
    for (size_t i = 0; i + 1 < size(); i += 2) f((*this)[i], (*this)[i + 1]);
  }

 private:
  const redisReply* r_ = nullptr;
};

// One reply (owns the hiredis object; views() read into it).
class RedisReply {
 public:
  RedisReply() = default;
  explicit RedisReply(redisReply* r) : r_(r, &freeReplyObject) {}

  ReplyView view() const { return ReplyView(r_.get()); }
  ReplyView operator[](size_t i) const { return view()[i]; }
  bool IsError() const { return view().error(); }
  bool IsNil() const { return view().nil(); }
  // The error text or status/string value (an integer as text; "" else).
  std::string Str() const { return view().str(); }
  // An integer reply, or a string holding one; else 0.
  long long Int() const {
    if (auto i = view().integer()) return *i;
    return view().string() ? std::atoll(Str().c_str()) : 0;
  }

 private:
  std::shared_ptr<redisReply> r_;
};

// What an error reply means when Redis refuses writes for now while the
// connection is fine: full (OOM: maxmemory reached with noeviction), a
// replica (READONLY), unable to persist (MISCONF). "" for any other error.
// Such a refusal is waited out with back-off, never handled as a lost
// connection (a reconnect would meet the same refusal at once).
std::string RefusalOf(const std::string& error);

class Redis {
 public:
  // Connects (and AUTHs). Errors (kIoError) name the address.
  // `command_timeout_s`: how long each command of the connection waits for
  // its reply, those of the connect itself included (AUTH, and behind
  // Sentinel its question and ROLE); 0: max(timeout_s, 5 s). A worker's
  // caller passes its own, so no step waits longer than it allows.
  static Result<std::unique_ptr<Redis>> Connect(const RedisAddress& address,
                                                double timeout_s,
                                                double command_timeout_s = 0);
  // Connect, tried again every 200 ms for up to `wait_s` (a resumed node
  // whose Redis is restarting too); logs once that it waits. A set `stop`
  // (a signal, before the node runs) ends the wait: StoppedWhile's error.
  static Result<std::unique_ptr<Redis>> ConnectWaiting(
      const RedisAddress& address, double timeout_s, double wait_s,
      const std::atomic<bool>* stop = nullptr);
  ~Redis();
  Redis(const Redis&) = delete;
  Redis& operator=(const Redis&) = delete;

  // A failed connection (kIoError) is a Status; a Redis error reply is a
  // reply (IsError): the caller decides.
  // Scripts: a command {"EVAL", SCRIPT, ...} is sent as EVALSHA with the
  // script's SHA-1; the script itself goes once per connection (SCRIPT LOAD
  // before its first use). A NOSCRIPT reply (the server's scripts were
  // flushed) loads it again and sends the command once more: its own
  // handling, not a lost connection.
  // The scripts are files beside the part that runs each (NAME.lua,
  // embedded at build time: crawler/CMakeLists.txt), over the shared
  // functions of redis/lib_*.lua ("-- include: lib_state.lua": a node's
  // state for the end test, the hash state and the set busy always written
  // together; lib_lag.lua: a stream's entries not yet delivered to the
  // group "owners"). The rule every script keeps: those that keep the job
  // going carry "#!lua flags=allow-oom" and run when Redis is full
  // (maxmemory with noeviction), so heartbeats, leases, reads, commits,
  // acknowledgements and trims go on and free memory; only sends
  // (send.lua, XADD) are refused then, their batches waiting in the outbox
  // (RAM, then spill files). Read-only scripts have no shebang (a flagged
  // script without allow-oom is refused when full, even one that only
  // reads).
  Result<RedisReply> Command(const std::vector<std::string>& args);
  Result<std::vector<RedisReply>> Pipeline(
      const std::vector<std::vector<std::string>>& commands);

  const RedisAddress& address() const { return address_; }
  // A reply not in within `s` seconds fails the command as a lost
  // connection (Connect sets its command_timeout_s).
  void SetCommandTimeout(double s);

 private:
  Redis(RedisAddress address, redisContext* c) : address_(std::move(address)), c_(c) {}
  // Connect to host:port itself (no sentinel asked).
  static Result<std::unique_ptr<Redis>> ConnectTo(const RedisAddress& address,
                                                  double timeout_s,
                                                  double command_timeout_s);
  // The primary's address, as the first sentinel that knows it says.
  static Result<RedisAddress> AskSentinels(const RedisAddress& address, double timeout_s,
                                           double command_timeout_s);
  // True if `commands` write (anything but the reads the cluster makes) and
  // the address asks for WAIT.
  bool Waits(const std::vector<std::vector<std::string>>& commands) const;
  // WAIT's reply: an error unless wait_replicas replicas had the writes.
  Status Confirmed(const RedisReply& wait) const;
  Status Broken(const char* what);
  Result<RedisReply> Send(const std::vector<std::string>& args);
  // `args` as sent: an EVAL as EVALSHA, its script loaded first if this
  // connection has not loaded it. An error reply of SCRIPT LOAD: *refused.
  Result<std::vector<std::string>> AsSent(const std::vector<std::string>& args,
                                          std::optional<RedisReply>* refused);
  std::set<std::string> loaded_;  // SHA-1s of the scripts this connection loaded
  const RedisAddress address_;
  redisContext* c_;
};

// A signal's stop flag, set (cli/main.cc) while a node still waits to join:
// true once set. nullptr: never.
inline bool StopSet(const std::atomic<bool>* stop) {
  return stop != nullptr && stop->load();
}
// The error of a wait a signal ended (kIoError: exit 1), `what` the wait.
inline Status StoppedWhile(const std::string& what) {
  return Status::Error(
      Status::Code::kIoError,
      "cluster: stopped by a signal while " + what + ": nothing of this run crawled");
}

}  // namespace crawler::cluster

#endif  // CRAWLER_REDIS_H_
