// See redis.h.
#include "cluster/redis/redis.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>
#include <thread>

#include "base/secret.h"
#include "base/sha1.h"

namespace crawler::cluster {
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

Result<RedisAddress> ParseRedisUrl(const std::string& url, std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Error(Status::Code::kInvalidArgument,
                         std::string(what) + " '" + WithoutUserinfo(url) + "': " + why +
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

Result<RedisAddress> ClusterRedisAddress(const engine::ClusterConfig& c) {
  RedisAddress a;
  if (c.sentinels.empty()) {
    auto parsed = ParseRedisUrl(c.redis);
    if (!parsed.ok()) return parsed.status();
    a = std::move(parsed).value();
  } else {
    a.master = c.sentinel_master;
    if (const char* pw = std::getenv(kRedisPasswordEnv); pw != nullptr) a.password = pw;
    for (const std::string& s : c.sentinels) {
      // HOST:PORT, checked when the config was read (config.cc).
      size_t colon = s.rfind(':');
      a.sentinels.emplace_back(s.substr(0, colon), std::atoi(s.c_str() + colon + 1));
    }
  }
  a.wait_replicas = c.wait_replicas;
  a.wait_timeout_ms = c.wait_timeout_ms;
  return a;
}

Result<std::unique_ptr<Redis>> Redis::Connect(const RedisAddress& address,
                                              double timeout_s,
                                              double command_timeout_s) {
  if (command_timeout_s <= 0) command_timeout_s = std::max(timeout_s, 5.0);
  if (address.master.empty()) return ConnectTo(address, timeout_s, command_timeout_s);
  auto primary = AskSentinels(address, timeout_s, command_timeout_s);
  if (!primary.ok()) return primary.status();
  auto r = ConnectTo(*primary, timeout_s, command_timeout_s);
  if (!r.ok()) return r;
  // Just after a failover a sentinel may still name the old primary, come
  // back as a replica: writes there would be refused (READONLY).
  auto role = (*r)->Command({"ROLE"});
  if (!role.ok()) return role.status();
  if ((*role)[0].str() != "master")
    return Status::Error(Status::Code::kIoError,
                         "redis " + primary->Text() + ": the sentinels name it the " +
                             "primary, but it is a " +
                             ((*role)[0].str().empty() ? role->Str() : (*role)[0].str()) +
                             " (a failover under way?)");
  return r;
}

Result<RedisAddress> Redis::AskSentinels(const RedisAddress& address, double timeout_s,
                                         double command_timeout_s) {
  std::string why;
  for (const auto& [host, port] : address.sentinels) {
    RedisAddress sentinel;
    sentinel.host = host;
    sentinel.port = port;
    auto c = ConnectTo(sentinel, std::min(timeout_s, 1.0), command_timeout_s);
    auto r = c.ok()
                 ? (*c)->Command({"SENTINEL", "get-master-addr-by-name", address.master})
                 : Result<RedisReply>(c.status());
    int p = 0;
    if (r.ok() && r->view().size() == 2) {
      const std::string ps = (*r)[1].str();
      auto [end, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
      if (ec == std::errc() && end == ps.data() + ps.size() && p > 0 && p <= 65535) {
        RedisAddress primary = address;
        primary.host = (*r)[0].str();
        primary.port = p;
        return primary;
      }
    }
    why += "; sentinel " + sentinel.Text() + ": ";
    if (!r.ok())
      why += r.status().message();
    else if (r->IsError())
      why += r->Str();
    else
      why += "knows no primary of that name";
  }
  return Status::Error(Status::Code::kIoError,
                       "redis: no sentinel named the primary '" + address.master + "'" +
                           (why.empty() ? std::string(": no sentinels") : why.substr(1)));
}

void Redis::SetCommandTimeout(double s) { redisSetTimeout(c_, Timeval(s)); }

Result<std::unique_ptr<Redis>> Redis::ConnectTo(const RedisAddress& address,
                                                double timeout_s,
                                                double command_timeout_s) {
  redisContext* c =
      redisConnectWithTimeout(address.host.c_str(), address.port, Timeval(timeout_s));
  if (c == nullptr || c->err) {
    std::string why = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return Status::Error(Status::Code::kIoError,
                         "redis " + address.Text() + ": cannot connect: " + why);
  }
  redisSetTimeout(c, Timeval(command_timeout_s));
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
                                                     double timeout_s, double wait_s,
                                                     const std::atomic<bool>* stop) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  for (bool logged = false;; logged = true) {
    auto r = Connect(address, timeout_s);
    if (r.ok() || std::chrono::steady_clock::now() >= until) return r;
    if (StopSet(stop)) return StoppedWhile("connecting to " + address.Text());
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

Result<RedisReply> Redis::Send(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  Argv(args, &argv, &lens);
  void* r = redisCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (r == nullptr) return Broken(args.empty() ? "command" : args[0].c_str());
  return RedisReply(static_cast<redisReply*>(r));
}

Result<std::vector<std::string>> Redis::AsSent(const std::vector<std::string>& args,
                                               std::optional<RedisReply>* refused) {
  if (args.size() < 2 || args[0] != "EVAL") return args;
  Sha1 sha;
  sha.Update(args[1]);
  std::array<uint8_t, 20> digest = sha.Final();
  std::string hex;
  for (uint8_t b : digest) hex += fmt::format("{:02x}", b);
  if (loaded_.count(hex) == 0) {
    auto r = Send({"SCRIPT", "LOAD", args[1]});
    if (!r.ok()) return r.status();
    if (r->IsError()) {
      *refused = *r;
      return args;
    }
    loaded_.insert(hex);
  }
  std::vector<std::string> sent = args;
  sent[0] = "EVALSHA";
  sent[1] = std::move(hex);
  return sent;
}

namespace {
bool IsNoScript(const RedisReply& r) {
  return r.IsError() && r.Str().rfind("NOSCRIPT", 0) == 0;
}
}  // namespace

bool Redis::Waits(const std::vector<std::vector<std::string>>& commands) const {
  if (address_.wait_replicas == 0) return false;
  // The reads the cluster makes (and the connection's own commands); any
  // other command, a script included, may write.
  static const std::set<std::string, std::less<>> kReads = {
      "AUTH", "CONFIG", "EXISTS",   "GET",      "HGET",   "HGETALL",  "HMGET",
      "INFO", "MEMORY", "PING",     "ROLE",     "SCRIPT", "SMEMBERS", "XINFO",
      "XLEN", "XRANGE", "XPENDING", "SENTINEL", "WAIT"};
  return std::any_of(commands.begin(), commands.end(),
                     [](const auto& c) { return !c.empty() && kReads.count(c[0]) == 0; });
}

Status Redis::Confirmed(const RedisReply& wait) const {
  if (!wait.IsError() && wait.view().count() >= address_.wait_replicas)
    return Status::Ok();
  return Status::Error(
      Status::Code::kIoError,
      "redis " + address_.Text() + ": " +
          (wait.IsError() ? "WAIT: " + wait.Str()
                          : std::to_string(wait.view().count()) + " of " +
                                std::to_string(address_.wait_replicas) +
                                " replicas had the writes after " +
                                std::to_string(address_.wait_timeout_ms) + " ms") +
          " (cluster.wait_replicas): they count as not made");
}

Result<RedisReply> Redis::Command(const std::vector<std::string>& args) {
  if (address_.wait_replicas > 0 && Waits({args})) {  // with its WAIT, one round trip
    auto r = Pipeline({args});
    if (!r.ok()) return r.status();
    return std::move(r->front());
  }
  for (int attempt = 0;; ++attempt) {
    std::optional<RedisReply> refused;
    auto sent = AsSent(args, &refused);
    if (!sent.ok()) return sent.status();
    if (refused) return *refused;
    auto r = Send(*sent);
    if (!r.ok() || attempt > 0 || !IsNoScript(*r)) return r;
    spdlog::warn("redis {}: NOSCRIPT (its scripts were flushed): loading them again",
                 address_.Text());
    loaded_.clear();
  }
}

Result<std::vector<RedisReply>> Redis::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  // Scripts are loaded before anything is appended (SCRIPT LOAD is a
  // command of its own; its reply must not mix with the pipeline's).
  std::vector<std::vector<std::string>> sent;
  std::vector<std::optional<RedisReply>> refused(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    auto s = AsSent(commands[i], &refused[i]);
    if (!s.ok()) return s.status();
    sent.push_back(std::move(s).value());
  }
  const bool waits = Waits(commands);
  if (waits)
    sent.push_back({"WAIT", std::to_string(address_.wait_replicas),
                    std::to_string(address_.wait_timeout_ms)});
  for (size_t i = 0; i < sent.size(); ++i) {
    if (i < commands.size() && refused[i]) continue;
    Argv(sent[i], &argv, &lens);
    if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(),
                               lens.data()) != REDIS_OK) {
      return Broken("pipeline");
    }
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    if (refused[i]) {
      replies.push_back(*refused[i]);
      continue;
    }
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) return Broken("pipeline");
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  if (waits) {
    void* r = nullptr;
    if (redisGetReply(c_, &r) != REDIS_OK || r == nullptr) return Broken("WAIT");
    if (Status st = Confirmed(RedisReply(static_cast<redisReply*>(r))); !st.ok())
      return st;
  }
  // Scripts flushed on the server meanwhile (rare: SCRIPT FLUSH): those
  // commands again, one by one, after the rest (Command reloads them).
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!IsNoScript(replies[i])) continue;
    loaded_.clear();
    auto again = Command(commands[i]);
    if (!again.ok()) return again.status();
    replies[i] = std::move(again).value();
  }
  return replies;
}

}  // namespace crawler::cluster
