// Turns at an address, over the whole job (address_tokens.h).
#include "cluster/address_tokens.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "cluster/turn_end.lua.h"
#include "cluster/turn_start.lua.h"

namespace crawler::engine {

namespace {

// KEYS[1]: the address's hash. ARGV: delay ms, connections, lapse ms, the
// token, the liveness keys' prefix ("crawler:{JOB}:alive:"). Returns 0
// (the turn is the token's) or the ms to wait. A turn lapses, or ends
// sooner with its process: once NODE's liveness key no longer holds the
// PROCESS token of its field "NODE:PROCESS:N" (a node killed, its key
// lapsed or a new process's). allow-oom (redis/redis.h, "Scripts"): a full Redis
// must not stop every fetch; the hash is a few fields per address, gone
// once it is idle.
// kTurnStartScript: turn_start.lua (embedded at build time)

// KEYS[1]: the address's hash. ARGV: delay ms, the token. The next start
// waits the delay after this end too (as the frontier's IpEnded).
// kTurnEndScript: turn_end.lua (embedded at build time)

constexpr double kCommandTimeoutS = 0.5;
constexpr auto kRetryAfter = std::chrono::seconds(1);
constexpr size_t kMaxEnds = 4096;

}  // namespace

AddressTokens::AddressTokens(RedisAddress address, std::string prefix, std::string node,
                             std::string process, Limits limits)
    : address_(std::move(address)),
      prefix_(std::move(prefix)),
      node_(std::move(node)),
      process_(std::move(process)),
      limits_(limits) {}

AddressTokens::~AddressTokens() = default;

std::string AddressTokens::Key(std::string_view address) const {
  return prefix_ + "ip:" + std::string(address);
}

std::string AddressTokens::Token(uint64_t token) const {
  return node_ + ":" + process_ + ":" + std::to_string(token);
}

std::unique_ptr<Redis> AddressTokens::Take() {
  {
    MutexLock lock(mu_);
    if (Clock::now() < retry_at_) return nullptr;
    if (!idle_.empty()) {
      std::unique_ptr<Redis> r = std::move(idle_.back());
      idle_.pop_back();
      return r;
    }
  }
  // The worker's own timeout for every step: behind Sentinel its question
  // and ROLE waited 5 s each on a worker's thread.
  auto r = Redis::Connect(address_, kCommandTimeoutS, kCommandTimeoutS);
  if (!r.ok()) {
    Failed(r.status().message());
    return nullptr;
  }
  return std::move(r).value();
}

void AddressTokens::Put(std::unique_ptr<Redis> redis) {
  MutexLock lock(mu_);
  idle_.push_back(std::move(redis));
}

void AddressTokens::Failed(const std::string& why) {
  MutexLock lock(mu_);
  const Clock::time_point now = Clock::now();
  idle_.clear();  // likely broken too
  retry_at_ = now + kRetryAfter;
  if (log_.Due(now))
    spdlog::warn(
        "cluster: politeness per address is this node's own for now (Redis: {}); "
        "asked again in 1 s",
        why);
}

std::vector<std::string> AddressTokens::EndCommand(std::string key,
                                                   std::string token) const {
  return {"EVAL",         cluster_wire::kTurnEndScript,     "1",
          std::move(key), std::to_string(limits_.delay_ms), std::move(token)};
}

void AddressTokens::KeepEnds(std::vector<std::vector<std::string>> ends) {
  MutexLock lock(mu_);
  for (auto& e : ends) {
    if (ends_.size() >= kMaxEnds) break;
    ends_.push_back(std::move(e));
  }
}

bool AddressTokens::Send(Redis& redis, std::vector<std::string> start, RedisReply* reply,
                         std::string* why) {
  std::vector<std::vector<std::string>> commands;
  {
    MutexLock lock(mu_);
    commands.swap(ends_);
  }
  const size_t ends = commands.size();
  const bool starts = !start.empty();
  if (starts) commands.push_back(std::move(start));
  if (commands.empty()) return true;
  auto r = redis.Pipeline(commands);
  if (r.ok()) {
    for (const RedisReply& each : *r)
      if (each.IsError()) *why = each.Str();
  } else {
    *why = r.status().message();
  }
  if (why->empty()) {
    if (starts) *reply = r->back();
    return true;
  }
  commands.resize(ends);
  KeepEnds(std::move(commands));
  return false;
}

void AddressTokens::Settle() {
  {
    MutexLock lock(mu_);
    if (ends_.empty() || Clock::now() < retry_at_) return;
  }
  std::unique_ptr<Redis> redis = Take();
  if (redis == nullptr) return;
  std::string why;
  if (Send(*redis, {}, nullptr, &why))
    Put(std::move(redis));
  else
    Failed(why);
}

AddressTurn AddressTokens::Start(std::string_view address) {
  const uint64_t token = next_token_.fetch_add(1);
  if (std::unique_ptr<Redis> redis = Take(); redis != nullptr) {
    RedisReply reply;
    std::string why;
    if (Send(*redis,
             {"EVAL", cluster_wire::kTurnStartScript, "1", Key(address),
              std::to_string(limits_.delay_ms), std::to_string(limits_.connections),
              std::to_string(limits_.lapse_ms), Token(token), prefix_ + "alive:"},
             &reply, &why)) {
      Put(std::move(redis));
      const long long wait = reply.Int();
      if (wait <= 0) {
        granted_.fetch_add(1, std::memory_order_relaxed);
        return {true, token, {}};
      }
      waits_.fetch_add(1, std::memory_order_relaxed);
      return {false, 0, std::chrono::milliseconds(wait)};
    }
    // The script may have run, its reply lost: End gives the turn back.
    Failed(why);
  }
  local_.fetch_add(1, std::memory_order_relaxed);
  return {true, token, {}};
}

void AddressTokens::End(std::string_view address, uint64_t token) {
  std::vector<std::string> end = EndCommand(Key(address), Token(token));
  MutexLock lock(mu_);
  if (ends_.size() < kMaxEnds) ends_.push_back(std::move(end));
}

AddressTokens::Figures AddressTokens::figures() const {
  return {granted_.load(std::memory_order_relaxed),
          waits_.load(std::memory_order_relaxed), local_.load(std::memory_order_relaxed)};
}

}  // namespace crawler::engine
