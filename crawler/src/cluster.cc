// See cluster.h.
#include "cluster.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>
#include <zlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>
#include <charconv>
#include <cstring>
#include <random>

namespace crawler::engine {
namespace {

namespace json = boost::json;
using SteadyClock = std::chrono::steady_clock;

// Join. KEYS: meta, nodes, started, alive:NODE.
// ARGV: node, token, shards, seed, config hash, config JSON, ttl ms.
// Returns {verdict, detail}.
constexpr const char* kJoinScript = R"lua(
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'shards', ARGV[3], 'seed', ARGV[4],
             'config_hash', ARGV[5], 'config', ARGV[6])
end
local meta = redis.call('hmget', KEYS[1], 'shards', 'seed', 'config_hash', 'config')
if meta[1] ~= ARGV[3] then return {'shards', meta[1]} end
if meta[3] ~= ARGV[5] then return {'config', meta[4]} end
local alive = redis.call('get', KEYS[4])
if alive and alive ~= ARGV[2] then return {'duplicate', alive} end
if redis.call('exists', KEYS[3]) == 1 and redis.call('sismember', KEYS[2], ARGV[1]) == 0 then
  return {'closed', table.concat(redis.call('smembers', KEYS[2]), ',')}
end
redis.call('sadd', KEYS[2], ARGV[1])
redis.call('set', KEYS[4], ARGV[2], 'PX', ARGV[7])
return {'ok', meta[2]}
)lua";

// Start barrier. KEYS: nodes, started. ARGV: min nodes. Returns the node set
// once the job has started, else nil.
constexpr const char* kStartScript = R"lua(
if redis.call('exists', KEYS[2]) == 0 and redis.call('scard', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('set', KEYS[2], '1')
end
if redis.call('exists', KEYS[2]) == 1 then return redis.call('smembers', KEYS[1]) end
return false
)lua";

// Send one batch. KEYS: stream, sent. ARGV: payload, urls, raw length, node.
constexpr const char* kSendScript = R"lua(
redis.call('xadd', KEYS[1], '*', 'z', ARGV[1], 'n', ARGV[2], 'b', ARGV[3], 'from', ARGV[4])
return redis.call('incr', KEYS[2])
)lua";

// Receive new entries. KEYS: state, delivered, streams... ARGV: node, count.
// Counting the delivery and marking this node busy happen atomically with
// it, which is what makes the end test sound.
constexpr const char* kReceiveScript = R"lua(
local args = {'GROUP', 'owners', ARGV[1], 'COUNT', ARGV[2], 'STREAMS'}
for i = 3, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #KEYS do args[#args + 1] = '>' end
local r = redis.call('xreadgroup', unpack(args))
if not r then return false end
local n = 0
for _, s in ipairs(r) do n = n + #s[2] end
if n > 0 then
  redis.call('incrby', KEYS[2], n)
  redis.call('hset', KEYS[1], ARGV[1], 'busy')
end
return r
)lua";

// The end test. KEYS: state, sent, delivered, done, alive:NODE... ARGV: the
// nodes. A dead node (its liveness key expired) is not idle: it will resume
// from its last checkpoint and may find links for the others again.
constexpr const char* kDoneScript = R"lua(
if redis.call('exists', KEYS[4]) == 1 then return 1 end
for i = 1, #ARGV do
  if redis.call('hget', KEYS[1], ARGV[i]) ~= 'idle' then return 0 end
  if redis.call('exists', KEYS[4 + i]) == 0 then return 0 end
end
local sent = tonumber(redis.call('get', KEYS[2]) or '0')
local delivered = tonumber(redis.call('get', KEYS[3]) or '0')
if sent ~= delivered then return 0 end
redis.call('set', KEYS[4], '1')
return 1
)lua";

constexpr const char* kOutboxHeader = "crawler-outbox 1\n";

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// "a.b = 1" lines of the job's config as one JSON object, and its hash.
std::string JobConfigJson(const Config& config) {
  json::object o;
  for (const auto& [key, value] : ConfigEntries(config, {"crawl", "url", "dedup"}))
    o[key] = value;
  return json::serialize(o);
}

std::string DifferingKeys(const std::string& ours, const std::string& theirs) {
  boost::system::error_code ec;
  json::value a = json::parse(ours, ec), b = json::parse(theirs, ec);
  if (ec || !a.is_object() || !b.is_object()) return "(the job's config is unreadable)";
  std::string out;
  auto add = [&](std::string_view key, const json::value* mine, const json::value* job) {
    out += (out.empty() ? "" : ", ") + std::string(key) +
           " (job: " + (job ? json::serialize(*job) : "unset") +
           ", here: " + (mine ? json::serialize(*mine) : "unset") + ")";
  };
  for (const auto& [k, v] : a.as_object()) {
    const json::value* other = b.as_object().if_contains(k);
    if (other == nullptr || *other != v) add(k, &v, other);
  }
  for (const auto& [k, v] : b.as_object()) {
    if (!a.as_object().contains(k)) add(k, nullptr, &v);
  }
  return out;
}

Status Refused(const std::string& job, const std::string& why) {
  return Status::Error(Status::Code::kInvalidArgument,
                       "cluster job '" + job + "': refused: " + why);
}

std::string Compress(const std::string& raw) {
  uLongf size = compressBound(raw.size());
  std::string out(size, '\0');
  compress2(reinterpret_cast<Bytef*>(out.data()), &size,
            reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 1);
  out.resize(size);
  return out;
}

bool Uncompress(std::string_view z, size_t raw_len, std::string* out) {
  if (raw_len > (64u << 20)) return false;
  out->assign(raw_len, '\0');
  uLongf size = raw_len;
  return uncompress(reinterpret_cast<Bytef*>(out->data()), &size,
                    reinterpret_cast<const Bytef*>(z.data()), z.size()) == Z_OK &&
         size == raw_len;
}

// "url \t depth \t redirects \t referrer \n" lines -> entries. False: malformed.
bool ParseLines(std::string_view text, std::vector<frontier::UrlEntry>* out) {
  std::vector<frontier::UrlEntry> got;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return false;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[4];
    for (int i = 0; i < 3; ++i) {
      size_t tab = line.find('\t');
      if (tab == std::string_view::npos) return false;
      f[i] = line.substr(0, tab);
      line.remove_prefix(tab + 1);
    }
    f[3] = line;
    frontier::UrlEntry e;
    e.url = std::string(f[0]);
    auto d = std::from_chars(f[1].data(), f[1].data() + f[1].size(), e.depth);
    auto r = std::from_chars(f[2].data(), f[2].data() + f[2].size(), e.redirects);
    if (e.url.empty() || d.ec != std::errc() || r.ec != std::errc()) return false;
    e.referrer = std::string(f[3]);
    got.push_back(std::move(e));
  }
  for (auto& e : got) out->push_back(std::move(e));
  return true;
}

using StreamId = std::pair<uint64_t, uint64_t>;  // "ms-seq"

StreamId ParseStreamId(std::string_view id) {
  StreamId out{0, 0};
  size_t dash = id.find('-');
  std::from_chars(id.data(), id.data() + std::min(dash, id.size()), out.first);
  if (dash != std::string_view::npos)
    std::from_chars(id.data() + dash + 1, id.data() + id.size(), out.second);
  return out;
}

const redisReply* Element(const redisReply* r, size_t i) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && i < r->elements ? r->element[i]
                                                                         : nullptr;
}

}  // namespace

uint32_t ShardOwner(const std::vector<std::string>& nodes, uint32_t shard) {
  uint32_t owner = 0;
  uint64_t best = 0;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    uint64_t h = XXH3_64bits_withSeed(nodes[n].data(), nodes[n].size(), shard);
    if (n == 0 || h > best) {
      best = h;
      owner = n;
    }
  }
  return owner;
}

Cluster::Cluster(const Config& config, RedisAddress address, std::unique_ptr<Redis> redis,
                 std::string token, uint64_t seed)
    : cfg_(config.cluster),
      min_nodes_(config.cluster.min_nodes),
      address_(std::move(address)),
      token_(std::move(token)),
      seed_(seed),
      redis_(std::move(redis)) {
  figures_.node = cfg_.node;
  figures_.job = cfg_.job;
}

void Cluster::SetCrawlFigures(uint64_t pages, double pages_per_s) {
  MutexLock lock(mu_);
  figures_.pages = pages;
  figures_.pages_per_s = pages_per_s;
}

Cluster::~Cluster() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string Cluster::Key(const std::string& suffix) const {
  return "crawler:{" + cfg_.job + "}:" + suffix;
}
std::string Cluster::StreamKey(uint32_t shard) const {
  return Key("s:" + std::to_string(shard));
}

Result<std::unique_ptr<Cluster>> Cluster::Join(const Config& config) {
  const ClusterConfig& c = config.cluster;
  auto address = ParseRedisUrl(c.redis);
  if (!address.ok()) return address.status();
  auto redis = Redis::Connect(*address, 5);
  if (!redis.ok())  // at start: a setup error (exit 2), not an output failure
    return Status::Error(Status::Code::kInvalidArgument,
                         "cluster.redis: " + redis.status().message());
  std::string token = boost::uuids::to_string(boost::uuids::random_generator()());
  std::random_device rd;
  uint64_t seed_candidate = (uint64_t{rd()} << 32) | rd();
  std::string config_json = JobConfigJson(config);
  std::string config_hash = Hex64(XXH3_64bits(config_json.data(), config_json.size()));
  auto prefix = "crawler:{" + c.job + "}:";
  auto ttl_ms = std::to_string(static_cast<int64_t>(c.heartbeat_s * 3000));
  // A node resumed after a crash finds its old liveness key: wait for it to
  // expire (3 heartbeats); a node that is really alive keeps it fresh.
  auto deadline = SteadyClock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(c.heartbeat_s * 4000));
  for (;;) {
    auto r = (*redis)->Command(
        {"EVAL", kJoinScript, "4", prefix + "meta", prefix + "nodes", prefix + "started",
         prefix + "alive:" + c.node, c.node, token, std::to_string(c.shards),
         std::to_string(seed_candidate), config_hash, config_json, ttl_ms});
    if (!r.ok()) {
      // Reachable a moment ago: Redis restarting. Reconnect for up to a minute.
      if (SteadyClock::now() > deadline + std::chrono::seconds(60)) return r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto again = Redis::Connect(*address, 2);
      if (again.ok()) redis.value() = std::move(again).value();
      continue;
    }
    if (r->IsError() && r->Str().rfind("LOADING", 0) == 0 &&
        SteadyClock::now() < deadline + std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // reading its AOF
      continue;
    }
    if (r->IsError())
      return Status::Error(Status::Code::kIoError,
                           "redis " + address->Text() + ": join: " + r->Str());
    std::string verdict = RedisReply::StrOf(Element(r->raw(), 0));
    std::string detail = RedisReply::StrOf(Element(r->raw(), 1));
    if (verdict == "ok") {
      uint64_t seed = 0;
      std::from_chars(detail.data(), detail.data() + detail.size(), seed);
      spdlog::info("cluster: node {} joined job {} at {}", c.node, c.job,
                   address->Text());
      return std::unique_ptr<Cluster>(
          new Cluster(config, *address, std::move(redis).value(), token, seed));
    }
    if (verdict == "shards")
      return Refused(c.job, "it has " + detail +
                                " shards, this node is configured with " +
                                std::to_string(c.shards) + " (cluster.shards)");
    if (verdict == "config")
      return Refused(c.job, "this node's config differs from the job's: " +
                                DifferingKeys(config_json, detail));
    if (verdict == "closed")
      return Refused(c.job, "it has started with the nodes " + detail + " and node '" +
                                c.node + "' is not one of them");
    if (verdict != "duplicate") return Refused(c.job, "unexpected answer " + verdict);
    if (SteadyClock::now() > deadline)
      return Refused(c.job, "a live node named '" + c.node +
                                "' is already in the job (cluster.node must be unique)");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status Cluster::Retry(const std::atomic<bool>& stop, const char* what,
                      const std::function<bool()>& step) {
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    if (redis_ && step()) return Status::Ok();
    if (stop.load())
      return Status::Error(Status::Code::kIoError,
                           std::string("cluster: stopped while ") + what);
    if (redis_) {
      spdlog::warn("redis: {} failed; reconnecting", what);
      redis_.reset();
      down_since_ = SteadyClock::now();
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    Status st = Reconnect();
    if (!st.ok())
      spdlog::warn(
          "redis: down {:.0f} s ({}); retrying",
          std::chrono::duration<double>(SteadyClock::now() - down_since_).count(),
          st.message());
  }
}

Status Cluster::Start(const std::atomic<bool>& stop, std::function<bool()> local_idle) {
  local_idle_ = std::move(local_idle);
  auto last_log = SteadyClock::now() - std::chrono::seconds(10);
  for (;;) {
    Result<RedisReply> r = RedisReply();
    Status st = Retry(stop, "waiting for the job to start", [&] {
      r = redis_->Command({"EVAL", kStartScript, "2", Key("nodes"), Key("started"),
                           std::to_string(min_nodes_)});
      return r.ok() && !r->IsError() && Heartbeat();
    });
    if (!st.ok()) return st;
    if (r->raw() != nullptr && r->raw()->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < r->raw()->elements; ++i)
        nodes_.push_back(RedisReply::StrOf(r->raw()->element[i]));
      break;
    }
    if (stop.load())
      return Status::Error(Status::Code::kInvalidArgument,
                           "cluster: stopped while waiting for the job to start");
    if (SteadyClock::now() - last_log > std::chrono::seconds(5)) {
      last_log = SteadyClock::now();
      spdlog::info("cluster: waiting for {} nodes to join job {}", min_nodes_, cfg_.job);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::sort(nodes_.begin(), nodes_.end());
  self_ = static_cast<uint32_t>(std::find(nodes_.begin(), nodes_.end(), cfg_.node) -
                                nodes_.begin());
  owner_.resize(cfg_.shards);
  for (uint32_t s = 0; s < cfg_.shards; ++s) {
    owner_[s] = ShardOwner(nodes_, s);
    if (owner_[s] == self_) my_shards_.push_back(s);
  }
  {
    MutexLock lock(mu_);
    figures_.nodes = nodes_.size();
    figures_.shards_owned = my_shards_.size();
  }
  std::vector<std::vector<std::string>> create;
  for (uint32_t s : my_shards_)
    create.push_back({"XGROUP", "CREATE", StreamKey(s), "owners", "0", "MKSTREAM"});
  Status st = Retry(stop, "creating the consumer groups",
                    [&] { return redis_->Pipeline(create).ok(); });
  if (!st.ok()) return st;
  std::string names;
  for (const std::string& n : nodes_) names += (names.empty() ? "" : ",") + n;
  spdlog::info("cluster: job {} started with nodes {}; {} owns {} of {} shards", cfg_.job,
               names, cfg_.node, my_shards_.size(), cfg_.shards);
  // A resumed node first re-reads what it was given and has not acknowledged.
  bool ignored = false;
  st = Retry(stop, "reading pending entries",
             [&] { return Receive(/*pending=*/true, &ignored); });
  if (!st.ok()) return st;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

uint32_t Cluster::ShardOf(std::string_view host_key) const {
  return static_cast<uint32_t>(
      XXH3_64bits_withSeed(host_key.data(), host_key.size(), seed_) % cfg_.shards);
}

bool Cluster::Owns(std::string_view url) const {
  return owner_[ShardOf(frontier::HostKey(url))] == self_;
}

void Cluster::Ship(std::vector<frontier::UrlEntry> entries) {
  MutexLock lock(mu_);
  for (const frontier::UrlEntry& e : entries) {
    uint32_t shard = ShardOf(frontier::HostKey(e.url));
    Batch& b = outgoing_[shard];
    if (b.urls == 0) {
      b.shard = shard;
      b.first = SteadyClock::now();
    }
    ++b.urls;
    b.lines += e.url;
    b.lines += '\t';
    b.lines += std::to_string(e.depth);
    b.lines += '\t';
    b.lines += std::to_string(e.redirects);
    b.lines += '\t';
    b.lines += e.referrer;
    b.lines += '\n';
    ++queued_urls_;
    if (b.urls >= cfg_.batch_urls) {  // one stream entry holds batch_urls at most
      full_.push_back(std::move(b));
      outgoing_.erase(shard);
    }
  }
}

std::vector<frontier::UrlEntry> Cluster::TakeInbox() {
  MutexLock lock(mu_);
  std::vector<frontier::UrlEntry> out;
  out.swap(inbox_);
  ++admitting_;
  figures_.urls_received += out.size();
  for (Applied& a : inbox_ids_) applied_.push_back(std::move(a));
  inbox_ids_.clear();
  return out;
}

void Cluster::Admitted() {
  MutexLock lock(mu_);
  --admitting_;
}

bool Cluster::InboxEmpty() const {
  MutexLock lock(mu_);
  return inbox_.empty() && inbox_ids_.empty();
}

bool Cluster::Quiet() const {
  MutexLock lock(mu_);
  return inbox_.empty() && inbox_ids_.empty() && queued_urls_ == 0 && admitting_ == 0;
}

std::string Cluster::OnCut(uint64_t sequence) {
  MutexLock lock(mu_);
  std::vector<Applied>& v = cut_[sequence];
  for (Applied& a : applied_) v.push_back(std::move(a));
  applied_.clear();
  std::string outbox = kOutboxHeader;
  for (const Batch& b : sending_) outbox += b.lines;
  for (const Batch& b : full_) outbox += b.lines;
  for (const auto& [shard, b] : outgoing_) outbox += b.lines;
  return outbox;
}

Status Cluster::RestoreOutbox(const std::string& text, const std::string& path) {
  if (text.empty()) return Status::Ok();
  std::vector<frontier::UrlEntry> entries;
  if (text.rfind(kOutboxHeader, 0) != 0 ||
      !ParseLines(std::string_view(text).substr(std::strlen(kOutboxHeader)), &entries)) {
    return Status::Error(Status::Code::kCorruption,
                         path + ": not a cluster outbox (bad header or line)");
  }
  if (!entries.empty())
    spdlog::info("cluster: {} URLs from the checkpoint's outbox queued again",
                 entries.size());
  Ship(std::move(entries));
  return Status::Ok();
}

void Cluster::OnPublished(uint64_t sequence) {
  MutexLock lock(mu_);
  for (auto it = cut_.begin(); it != cut_.end() && it->first <= sequence;) {
    for (Applied& a : it->second) to_ack_.push_back(std::move(a));
    it = cut_.erase(it);
  }
}

Cluster::Figures Cluster::figures() const {
  MutexLock lock(mu_);
  Figures f = figures_;
  f.urls_queued = queued_urls_;
  return f;
}

void Cluster::Loop() {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    bool stopping = stop_.load();
    if (!redis_) {
      Status st = Reconnect();
      if (!st.ok()) {
        if (stopping) return;
        double down =
            std::chrono::duration<double>(SteadyClock::now() - down_since_).count();
        {
          MutexLock lock(mu_);
          figures_.redis_down_s = down;
        }
        spdlog::warn("redis: down {:.0f} s ({}); retrying", down, st.message());
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      backoff = std::chrono::milliseconds(100);
      MutexLock lock(mu_);
      figures_.redis_down_s = 0;
      spdlog::info("redis: reconnected to {}", address_.Text());
    }
    bool did = false;
    if (!Round(&did)) {
      spdlog::warn("redis: connection to {} lost", address_.Text());
      redis_.reset();
      down_since_ = SteadyClock::now();
      if (stopping) return;
      std::this_thread::sleep_for(backoff);  // no hot loop on a failing command
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      continue;
    }
    if (stopping) {
      // A last round sent everything and acknowledged what was published.
      return;
    }
    // Idle: poll again after half a batch period (each poll reads every owned
    // stream; measured: polling every 5 ms cost a one-node crawl 16% of its
    // pages/s, scripts/bench-cluster.sh cpu).
    if (!did)
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::max(1u, cfg_.batch_ms / 2)));
  }
}

Status Cluster::Reconnect() {
  auto r = Redis::Connect(address_, 2);
  if (!r.ok()) return r.status();
  redis_ = std::move(r).value();
  return Status::Ok();
}

bool Cluster::Round(bool* did) {
  auto now = SteadyClock::now();
  if (!SendDue(stop_.load(), did)) return false;
  if (!Receive(false, did)) return false;
  if (!AckPublished()) return false;
  if (now - last_beat_ >
      std::chrono::milliseconds(static_cast<int64_t>(cfg_.heartbeat_s * 1000))) {
    last_beat_ = now;
    if (!Heartbeat()) return false;
  }
  if (now - last_state_ >
      std::chrono::milliseconds(std::max<uint32_t>(cfg_.batch_ms, 50))) {
    last_state_ = now;
    if (!Publish() || !CheckDone()) return false;
  }
  return true;
}

bool Cluster::SendDue(bool flush_all, bool* did) {
  std::vector<Batch> due;
  {
    MutexLock lock(mu_);
    due.swap(full_);
    auto now = SteadyClock::now();
    for (auto it = outgoing_.begin(); it != outgoing_.end();) {
      Batch& b = it->second;
      if (flush_all || now - b.first >= std::chrono::milliseconds(cfg_.batch_ms)) {
        due.push_back(std::move(b));
        it = outgoing_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (due.empty()) return true;
  *did = true;
  {
    MutexLock lock(mu_);
    sending_ = due;  // in the outbox of a checkpoint cut meanwhile
  }
  std::vector<std::vector<std::string>> cmds;
  for (const Batch& b : due) {
    cmds.push_back({"EVAL", kSendScript, "2", StreamKey(b.shard), Key("sent"),
                    Compress(b.lines), std::to_string(b.urls),
                    std::to_string(b.lines.size()), cfg_.node});
  }
  auto replies = redis_->Pipeline(cmds);
  bool ok = replies.ok() && std::none_of(replies->begin(), replies->end(),
                                         [](const RedisReply& r) { return r.IsError(); });
  MutexLock lock(mu_);
  sending_.clear();
  if (!ok) {
    // Unconfirmed: kept for the next connection (a batch Redis did take is
    // then sent twice; its owner's filter drops the copies).
    for (Batch& b : due) full_.push_back(std::move(b));
    return false;
  }
  for (const Batch& b : due) {
    queued_urls_ -= b.urls;
    figures_.urls_sent += b.urls;
    ++figures_.batches_sent;
  }
  return true;
}

bool Cluster::Receive(bool pending, bool* did) {
  if (my_shards_.empty()) return true;
  std::vector<std::string> cmd;
  if (pending) {
    // This node's own unacknowledged entries (ID 0): not counted again.
    cmd = {"XREADGROUP", "GROUP", "owners", cfg_.node, "COUNT", "1000000", "STREAMS"};
    for (uint32_t s : my_shards_) cmd.push_back(StreamKey(s));
    for (size_t i = 0; i < my_shards_.size(); ++i) cmd.push_back("0");
  } else {
    cmd = {"EVAL", kReceiveScript, std::to_string(2 + my_shards_.size()), Key("state"),
           Key("delivered")};
    for (uint32_t s : my_shards_) cmd.push_back(StreamKey(s));
    cmd.push_back(cfg_.node);
    cmd.push_back("64");
  }
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (r->IsError()) {
    spdlog::warn("redis: read: {}", r->Str());
    if (r->Str().rfind("NOGROUP", 0) == 0) {
      // A stream or its group was deleted (by hand?): made again from the
      // start of what is left (a batch read twice is harmless).
      std::vector<std::vector<std::string>> create;
      for (uint32_t s : my_shards_)
        create.push_back({"XGROUP", "CREATE", StreamKey(s), "owners", "0", "MKSTREAM"});
      return redis_->Pipeline(create).ok();
    }
    return false;
  }
  const redisReply* streams = r->raw();
  size_t got = 0;
  std::vector<frontier::UrlEntry> entries;
  std::vector<Applied> ids;
  uint64_t malformed = 0;
  for (size_t i = 0;
       streams != nullptr && streams->type == REDIS_REPLY_ARRAY && i < streams->elements;
       ++i) {
    const redisReply* s = streams->element[i];
    std::string key = RedisReply::StrOf(Element(s, 0));
    uint32_t shard = 0;
    std::string_view num = std::string_view(key).substr(key.rfind(':') + 1);
    std::from_chars(num.data(), num.data() + num.size(), shard);
    const redisReply* list = Element(s, 1);
    for (size_t j = 0; list != nullptr && j < list->elements; ++j) {
      const redisReply* entry = list->element[j];
      std::string id = RedisReply::StrOf(Element(entry, 0));
      const redisReply* fields = Element(entry, 1);
      std::string z, b;
      for (size_t k = 0; fields != nullptr && k + 1 < fields->elements; k += 2) {
        std::string f = RedisReply::StrOf(fields->element[k]);
        if (f == "z") z = RedisReply::StrOf(fields->element[k + 1]);
        if (f == "b") b = RedisReply::StrOf(fields->element[k + 1]);
      }
      ++got;
      std::string raw;
      size_t raw_len = 0;
      std::from_chars(b.data(), b.data() + b.size(), raw_len);
      if (!Uncompress(z, raw_len, &raw) || !ParseLines(raw, &entries)) {
        ++malformed;
        spdlog::warn("cluster: malformed stream entry {} in {}: skipped", id, key);
      }
      ids.push_back(Applied{shard, id});
    }
  }
  if (got == 0) return true;
  *did = true;
  MutexLock lock(mu_);
  figures_.malformed += malformed;
  figures_.batches_applied += got;
  for (auto& e : entries) inbox_.push_back(std::move(e));
  for (auto& a : ids) inbox_ids_.push_back(std::move(a));
  return true;
}

bool Cluster::AckPublished() {
  std::vector<Applied> acks;
  {
    MutexLock lock(mu_);
    acks.swap(to_ack_);
  }
  if (acks.empty()) return true;
  std::map<uint32_t, std::vector<std::string>> by_shard;
  for (Applied& a : acks) by_shard[a.shard].push_back(std::move(a.id));
  std::vector<std::vector<std::string>> cmds;
  for (auto& [shard, ids] : by_shard) {
    std::vector<std::string> cmd = {"XACK", StreamKey(shard), "owners"};
    cmd.insert(cmd.end(), ids.begin(), ids.end());
    cmds.push_back(std::move(cmd));
    cmds.push_back({"XPENDING", StreamKey(shard), "owners"});
  }
  auto replies = redis_->Pipeline(cmds);
  if (!replies.ok()) {
    MutexLock lock(mu_);
    for (Applied& a : acks) to_ack_.push_back(std::move(a));
    return false;
  }
  // Trim below the oldest entry still pending (or below the newest one
  // acknowledged, when none is): never MAXLEN, which in Redis 7.0 deletes
  // delivered, unacknowledged entries.
  std::vector<std::vector<std::string>> trims;
  size_t i = 1;
  for (auto& [shard, ids] : by_shard) {
    const redisReply* p = (*replies)[i].raw();
    i += 2;
    long long pending = p != nullptr && p->type == REDIS_REPLY_ARRAY && p->elements > 0 &&
                                p->element[0]->type == REDIS_REPLY_INTEGER
                            ? p->element[0]->integer
                            : -1;
    if (pending < 0) continue;
    // With none pending, every entry up to the newest acknowledged one goes
    // (MINID keeps IDs >= its argument: the next ID after it).
    std::string minid;
    if (pending == 0) {
      StreamId newest{0, 0};
      for (const std::string& id : ids) newest = std::max(newest, ParseStreamId(id));
      minid = std::to_string(newest.first) + "-" + std::to_string(newest.second + 1);
    } else {
      minid = RedisReply::StrOf(Element(p, 1));
    }
    trims.push_back({"XTRIM", StreamKey(shard), "MINID", minid});
  }
  if (trims.empty()) return true;
  auto trimmed = redis_->Pipeline(trims);
  return trimmed.ok();
}

bool Cluster::Heartbeat() {
  Figures f = figures();
  f.updated_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto r = redis_->Pipeline(
      {{"SET", Key("alive:" + cfg_.node), token_, "PX",
        std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 3000))},
       {"HSET", Key("stats"), cfg_.node, json::serialize(json::value_from(f))}});
  return r.ok() && !(*r)[0].IsError();
}

bool Cluster::Publish() {
  bool idle = local_idle_ && local_idle_() && Quiet();
  auto r = redis_->Command({"HSET", Key("state"), cfg_.node, idle ? "idle" : "busy"});
  return r.ok() && !r->IsError();
}

bool Cluster::CheckDone() {
  std::vector<std::string> cmd = {
      "EVAL",       kDoneScript, std::to_string(4 + nodes_.size()),
      Key("state"), Key("sent"), Key("delivered"),
      Key("done")};
  for (const std::string& n : nodes_) cmd.push_back(Key("alive:" + n));
  cmd.insert(cmd.end(), nodes_.begin(), nodes_.end());
  auto r = redis_->Command(cmd);
  if (!r.ok() || r->IsError()) return false;
  if (r->Int() == 1 && !done_.exchange(true))
    spdlog::info("cluster: job {} is done (every node idle, every batch applied)",
                 cfg_.job);
  return true;
}

}  // namespace crawler::engine
