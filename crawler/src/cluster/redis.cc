// See redis.h.
#include "cluster/redis.h"

#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "base/secret.h"

namespace crawler::engine {
namespace {

timeval Timeval(double s) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(s);
  tv.tv_usec = static_cast<suseconds_t>((s - std::floor(s)) * 1e6);
  return tv;
}

void Argv(const std::vector<std::string>& args, std::vector<const char*>* argv,
          std::vector<size_t>* lens) {
  argv->clear();
  lens->clear();
  for (const std::string& a : args) {
    argv->push_back(a.data());
    lens->push_back(a.size());
  }
}

}  // namespace

Result<RedisAddress> ParseRedisUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return Status::Error(Status::Code::kInvalidArgument,
                         "cluster.redis '" + WithoutUserinfo(url) + "': " + why +
                             " (expected redis://HOST[:PORT])");
  };
  constexpr std::string_view kScheme = "redis://";
  if (url.rfind(kScheme, 0) != 0) return bad("not a redis:// URL");
  std::string rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('@') != std::string::npos)
    return bad(
        std::string("a password in the URL would be written to files and logs; set ") +
        kRedisPasswordEnv + " in the environment instead");
  RedisAddress a;
  if (const char* pw = std::getenv(kRedisPasswordEnv); pw != nullptr) a.password = pw;
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']') == std::string::npos) {
    std::string port = rest.substr(colon + 1);
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p <= 0 || p > 65535)
      return bad("bad port '" + port + "'");
    a.port = p;
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad("no host");
  a.host = rest;
  return a;
}

std::string RefusalOf(const std::string& error) {
  // A script's error keeps the code of the command that failed in it.
  if (error.rfind("OOM", 0) == 0) return "full (maxmemory reached, OOM)";
  if (error.rfind("READONLY", 0) == 0)
    return "a read-only replica (READONLY): cluster.redis must name the primary";
  if (error.rfind("MISCONF", 0) == 0)
    return "unable to persist to disk (MISCONF): see redis-server's log";
  return "";
}

Result<std::unique_ptr<Redis>> Redis::Connect(const RedisAddress& address,
                                              double timeout_s) {
  redisContext* c =
      redisConnectWithTimeout(address.host.c_str(), address.port, Timeval(timeout_s));
  if (c == nullptr || c->err) {
    std::string why = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return Status::Error(Status::Code::kIoError,
                         "redis " + address.Text() + ": cannot connect: " + why);
  }
  redisSetTimeout(c, Timeval(std::max(timeout_s, 5.0)));
  std::unique_ptr<Redis> r(new Redis(address, c));
  if (!address.password.empty()) {
    auto reply = r->Command({"AUTH", address.password});
    if (!reply.ok()) return reply.status();
    if (reply->IsError())
      return Status::Error(Status::Code::kIoError,
                           "redis " + address.Text() + ": AUTH refused: " + reply->Str());
  }
  return r;
}

Result<std::unique_ptr<Redis>> Redis::ConnectWaiting(const RedisAddress& address,
                                                     double timeout_s, double wait_s) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  for (bool logged = false;; logged = true) {
    auto r = Connect(address, timeout_s);
    if (r.ok() || std::chrono::steady_clock::now() >= until) return r;
    if (!logged)
      spdlog::warn("{}; trying again for up to {:.0f} s", r.status().message(), wait_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Redis::~Redis() { redisFree(c_); }

Status Redis::Broken(const char* what) {
  return Status::Error(Status::Code::kIoError, "redis " + address_.Text() + ": " + what +
                                                   ": " + std::string(c_->errstr));
}

Result<RedisReply> Redis::Command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  Argv(args, &argv, &lens);
  void* r = redisCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (r == nullptr) return Broken(args.empty() ? "command" : args[0].c_str());
  return RedisReply(static_cast<redisReply*>(r));
}

Result<std::vector<RedisReply>> Redis::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& args : commands) {
    Argv(args, &argv, &lens);
    if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(),
                               lens.data()) != REDIS_OK) {
      return Broken("pipeline");
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) return Broken("pipeline");
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  return replies;
}

}  // namespace crawler::engine
