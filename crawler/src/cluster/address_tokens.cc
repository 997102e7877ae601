// Turns at an address, over the whole job (address_tokens.h).
#include "cluster/address_tokens.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "cluster/turn_end.lua.h"
#include "cluster/turn_start.lua.h"
#include "cluster/turn_taken.lua.h"

namespace crawler::cluster {

namespace {

// KEYS[1]: the address's hash. ARGV: delay ms, connections, lapse ms, the
// token, the liveness keys' prefix ("crawler:{JOB}:alive:"), the claim
// ms (0 when the delay is). Returns 0
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

// KEYS[1]: the address's hash. ARGV: delay ms, the token: its request
// started, the next start waits the delay after now, not after its claim.
// kTurnTakenScript: turn_taken.lua (embedded at build time)

constexpr auto kRetryAfter = std::chrono::seconds(1);
constexpr size_t kMaxEnds = 4096;
// The turn thread wakes this often with nothing asked: the ends and
// "taken" waiting go then (a question takes them at once).
constexpr auto kTick = std::chrono::milliseconds(5);
// Threads asking Redis, each on a connection of the pool: questions that
// come while one waits for its answer go at once on another (with a Redis
// 50 ms slow, one thread made each question wait for the round trip in
// flight too: docs/cluster.md).
constexpr size_t kAskers = 4;
// Grants past their claim are looked for this often.
constexpr auto kSweepEvery = std::chrono::milliseconds(50);

}  // namespace

AddressTokens::AddressTokens(RedisAddress address, std::string prefix, std::string node,
                             std::string process, Limits limits, double timeout_s)
    : address_(std::move(address)),
      prefix_(std::move(prefix)),
      node_(std::move(node)),
      process_(std::move(process)),
      limits_(limits),
      timeout_s_(timeout_s),
      threads_([this] {
        std::vector<std::thread> t;
        for (size_t i = 0; i < kAskers; ++i) t.emplace_back([this, i] { Loop(i); });
        return t;
      }()) {}

AddressTokens::~AddressTokens() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

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
  // The same timeout for every step: behind Sentinel the question to the
  // sentinels and ROLE too.
  const Clock::time_point asked = Clock::now();
  // No worker waits on this timeout (a Start is answered at once): it says
  // only when Redis counts as gone. At 0.5 s a loaded CI machine's Redis,
  // up and answering, was given up on by nodes never cut from it.
  auto r = Redis::Connect(address_, timeout_s_, timeout_s_);
  if (!r.ok()) {
    Failed("connect: " + r.status().message(), Clock::now() - asked);
    return nullptr;
  }
  return std::move(r).value();
}

void AddressTokens::Put(std::unique_ptr<Redis> redis) {
  MutexLock lock(mu_);
  idle_.push_back(std::move(redis));
}

void AddressTokens::Failed(const std::string& why, Clock::duration took) {
  MutexLock lock(mu_);
  const Clock::time_point now = Clock::now();
  idle_.clear();  // likely broken too
  retry_at_ = now + kRetryAfter;
  alone_ = true;
  if (log_.Due(now))
    spdlog::warn(
        "cluster: politeness per address is this node's own for now (Redis: {}, "
        "after {:.3f} s); asked again in 1 s",
        why, std::chrono::duration<double>(took).count());
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

bool AddressTokens::Send(Redis& redis, std::vector<std::vector<std::string>> starts,
                         std::vector<RedisReply>* replies, std::string* why) {
  std::vector<std::vector<std::string>> commands;
  {
    MutexLock lock(mu_);
    commands.swap(ends_);
  }
  const size_t ends = commands.size();
  for (auto& start : starts) commands.push_back(std::move(start));
  if (commands.empty()) return true;
  auto r = redis.Pipeline(commands);
  if (r.ok()) {
    for (const RedisReply& each : *r)
      if (each.IsError()) *why = each.Str();
  } else {
    *why = r.status().message();
  }
  if (why->empty()) {
    if (replies != nullptr)
      replies->assign(r->begin() + static_cast<std::ptrdiff_t>(ends), r->end());
    return true;
  }
  commands.resize(ends);
  KeepEnds(std::move(commands));
  return false;
}

void AddressTokens::Back() {
  MutexLock lock(mu_);
  if (!alone_) return;
  alone_ = false;  // no turn is granted alone from here on (Start)
  spdlog::info(
      "cluster: politeness per address from Redis again ({} turns taken alone in all)",
      local_.load(std::memory_order_relaxed));
}

void AddressTokens::Settle() {
  {
    MutexLock lock(mu_);
    if (ends_.empty() || Clock::now() < retry_at_) return;
  }
  std::unique_ptr<Redis> redis = Take();
  if (redis == nullptr) return;
  std::string why;
  const Clock::time_point sent = Clock::now();
  if (Send(*redis, {}, nullptr, &why)) {
    Put(std::move(redis));
    Back();
  } else {
    Failed(why, Clock::now() - sent);
  }
}

uint32_t AddressTokens::Claim() const {
  const auto rt = std::chrono::duration_cast<std::chrono::milliseconds>(slow_trip_);
  const auto most = static_cast<int64_t>(std::max(timeout_s_ * 1000, 1.0));
  return static_cast<uint32_t>(
      std::max<int64_t>(limits_.claim_ms, std::min<int64_t>(3 * rt.count(), most)));
}

std::vector<std::string> AddressTokens::StartCommand(const Question& q) const {
  const uint32_t claim = limits_.delay_ms > 0 ? q.claim_ms : 0;
  return {"EVAL",
          cluster_wire::kTurnStartScript,
          "1",
          Key(q.address),
          std::to_string(limits_.delay_ms),
          std::to_string(limits_.connections),
          std::to_string(limits_.lapse_ms),
          Token(q.token),
          prefix_ + "alive:",
          std::to_string(claim)};
}

engine::AddressTurn AddressTokens::Start(std::string_view address, uint64_t who) {
  const Clock::time_point now = Clock::now();
  MutexLock lock(mu_);
  if (alone_ && now < retry_at_) {  // Redis given up on for now: this node's own turn
    local_.fetch_add(1, std::memory_order_relaxed);
    return {true, next_token_.fetch_add(1), false, {}};
  }
  Asked& a = asked_[std::string(address)];
  while (!a.granted.empty() && a.granted.front().until <= now) {
    if (ends_.size() < kMaxEnds)
      ends_.push_back(EndCommand(Key(address), Token(a.granted.front().token)));
    a.granted.pop_front();
    unused_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!a.granted.empty()) {
    const uint64_t token = a.granted.front().token;
    a.granted.pop_front();
    if (limits_.delay_ms > 0 && ends_.size() < kMaxEnds)
      ends_.push_back({"EVAL", cluster_wire::kTurnTakenScript, "1", Key(address),
                       std::to_string(limits_.delay_ms), Token(token)});
    return {true, token, false, {}};
  }
  const auto ms = [](Clock::duration d) {
    return std::chrono::ceil<std::chrono::milliseconds>(d);
  };
  const auto pending = [&]() REQUIRES(mu_) {
    return engine::AddressTurn{false, 0, true,
                               std::clamp(ms(round_trip_), std::chrono::milliseconds(1),
                                          std::chrono::milliseconds(100))};
  };
  // A question of its own in flight: its answer is waited for, even when
  // another's answer said to wait. Sent away meanwhile, the request left
  // the turn it was then granted unused: one in two questions wasted with
  // two connections an address (both asked at once, one told to wait).
  const bool out =
      who == 0 ? !a.asking.empty()
               : std::find(a.asking.begin(), a.asking.end(), who) != a.asking.end();
  if (out) return pending();
  if (now < a.wait_until) return {false, 0, false, ms(a.wait_until - now)};
  a.asking.push_back(who);
  questions_.push_back({std::string(address), next_token_.fetch_add(1), who, Claim()});
  cv_.notify_one();
  return pending();
}

AddressTokens::Asked& AddressTokens::Answered(const Question& q) {
  Asked& a = asked_[q.address];
  auto it = std::find(a.asking.begin(), a.asking.end(), q.who);
  if (it != a.asking.end()) a.asking.erase(it);
  return a;
}

void AddressTokens::Sweep(Clock::time_point now) {
  for (auto it = asked_.begin(); it != asked_.end();) {
    Asked& a = it->second;
    while (!a.granted.empty() && (stop_ || a.granted.front().until <= now)) {
      if (ends_.size() < kMaxEnds)
        ends_.push_back(EndCommand(Key(it->first), Token(a.granted.front().token)));
      a.granted.pop_front();
      unused_.fetch_add(1, std::memory_order_relaxed);
    }
    if (a.granted.empty() && a.asking.empty() && a.wait_until <= now)
      it = asked_.erase(it);
    else
      ++it;
  }
}

void AddressTokens::Loop(size_t index) {
  for (;;) {
    std::vector<Question> questions;
    bool last = false;
    {
      MutexLock lock(mu_);
      const auto asked = [&]() REQUIRES(mu_) { return stop_ || !questions_.empty(); };
      if (index == 0)  // the one that sends what waits, each tick
        cv_.wait_for(mu_, kTick, asked);
      else
        cv_.wait(mu_, asked);
      const Clock::time_point now = Clock::now();
      last = stop_;
      if (last || now >= next_sweep_) {
        Sweep(now);  // at the stop, every turn not taken is given back
        next_sweep_ = now + kSweepEvery;
      }
      questions.swap(questions_);
      if (now < retry_at_) {  // Start grants this node's own turns meanwhile
        for (const Question& q : questions) Answered(q);
        questions.clear();
        if (last) return;
        continue;
      }
      if (questions.empty() && ends_.empty()) {
        if (last) return;
        continue;
      }
    }
    Ask(std::move(questions));
    if (last) return;
  }
}

void AddressTokens::Ask(std::vector<Question> questions) {
  std::unique_ptr<Redis> redis = Take();
  std::vector<RedisReply> replies;
  std::string why;
  const Clock::time_point sent = Clock::now();
  bool answered = false;
  if (redis != nullptr) {
    std::vector<std::vector<std::string>> starts;
    starts.reserve(questions.size());
    for (const Question& q : questions) starts.push_back(StartCommand(q));
    const Clock::time_point piped = Clock::now();
    answered = Send(*redis, std::move(starts), &replies, &why);
    if (answered) {
      Put(std::move(redis));
      Back();
    } else {
      // The scripts may have run, their replies lost: each turn is given back.
      std::vector<std::vector<std::string>> ends;
      for (const Question& q : questions)
        ends.push_back(EndCommand(Key(q.address), Token(q.token)));
      KeepEnds(std::move(ends));
      Failed(why, Clock::now() - piped);
    }
  }
  const Clock::time_point now = Clock::now();
  MutexLock lock(mu_);
  if (answered) {
    round_trip_ = now - sent;
    slow_trip_ = round_trip_ >= slow_trip_ ? round_trip_
                                           : slow_trip_ - (slow_trip_ - round_trip_) / 8;
  }
  for (size_t i = 0; i < questions.size(); ++i) {
    Asked& a = Answered(questions[i]);
    if (!answered) continue;
    const long long wait = replies[i].Int();
    if (wait <= 0) {
      a.granted.push_back(
          {questions[i].token, sent + std::chrono::milliseconds(questions[i].claim_ms)});
      granted_.fetch_add(1, std::memory_order_relaxed);
    } else {
      a.wait_until = now + std::chrono::milliseconds(wait);
      waits_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void AddressTokens::End(std::string_view address, uint64_t token) {
  std::vector<std::string> end = EndCommand(Key(address), Token(token));
  MutexLock lock(mu_);
  if (ends_.size() < kMaxEnds) ends_.push_back(std::move(end));
}

AddressTokens::Figures AddressTokens::figures() const {
  return {granted_.load(std::memory_order_relaxed),
          waits_.load(std::memory_order_relaxed), local_.load(std::memory_order_relaxed),
          unused_.load(std::memory_order_relaxed)};
}

}  // namespace crawler::cluster
