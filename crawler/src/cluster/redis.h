// A small synchronous Redis client over hiredis (Debian's libhiredis 0.14:
// no TLS, so a cluster's Redis must be on a trusted network; AUTH is
// supported through the password in the URL). One connection per object,
// used by one thread at a time. Commands go as argument vectors (binary
// safe); Pipeline sends many and then reads every reply, which is what makes
// the URL exchange fast (crawler/src/cluster.h).
#ifndef CRAWLER_REDIS_H_
#define CRAWLER_REDIS_H_

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace crawler::engine {

// redis://HOST[:PORT] (default port 6379). The password, if the server wants
// one, is read from the environment (kRedisPasswordEnv, base/secret.h): a URL
// with a password in it is refused, since it would be written to
// OUT/start-config.toml, every checkpoint, the logs and argv.
struct RedisAddress {
  std::string host;
  int port = 6379;
  std::string password;  // never logged: Text() is host:port
  std::string Text() const { return host + ":" + std::to_string(port); }
};
// `what` names where the URL came from in an error ("cluster.redis", or
// cluster-stats's argument).
Result<RedisAddress> ParseRedisUrl(const std::string& url,
                                   std::string_view what = "cluster.redis");

// One reply (owns the hiredis object; elements are views into it).
class RedisReply {
 public:
  RedisReply() = default;
  explicit RedisReply(redisReply* r) : r_(r, &freeReplyObject) {}

  bool IsError() const { return r_ && r_->type == REDIS_REPLY_ERROR; }
  bool IsNil() const { return !r_ || r_->type == REDIS_REPLY_NIL; }
  const redisReply* raw() const { return r_.get(); }
  // The error text or status/string value ("" for other types).
  std::string Str() const { return StrOf(r_.get()); }
  static std::string StrOf(const redisReply* r) {
    if (r == nullptr) return "";
    switch (r->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
      case REDIS_REPLY_ERROR:
        return std::string(r->str, r->len);
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      default:
        return "";
    }
  }
  long long Int() const {
    if (!r_) return 0;
    if (r_->type == REDIS_REPLY_INTEGER) return r_->integer;
    if (r_->type == REDIS_REPLY_STRING) return std::atoll(Str().c_str());
    return 0;
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
  static Result<std::unique_ptr<Redis>> Connect(const RedisAddress& address,
                                                double timeout_s);
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
  Result<RedisReply> Command(const std::vector<std::string>& args);
  Result<std::vector<RedisReply>> Pipeline(
      const std::vector<std::vector<std::string>>& commands);

  const RedisAddress& address() const { return address_; }

 private:
  Redis(RedisAddress address, redisContext* c) : address_(std::move(address)), c_(c) {}
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

}  // namespace crawler::engine

#endif  // CRAWLER_REDIS_H_
