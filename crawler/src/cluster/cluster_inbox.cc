// What a cluster node reads from its shards' streams goes into its inbox
// (see cluster.h): entries read (Receive, cluster_exchange.cc) or claimed
// back, and the periodic reclaim of entries left pending for a consumer
// that no longer holds the shard.
#include <spdlog/spdlog.h>

#include <charconv>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this file speaks

size_t Cluster::ToInbox(const redisReply* streams) {
  size_t got = 0;
  std::vector<frontier::UrlEntry> entries;
  std::vector<StreamEntry> ids;
  uint64_t malformed = 0;
  for (size_t i = 0;
       streams != nullptr && streams->type == REDIS_REPLY_ARRAY && i < streams->elements;
       ++i) {
    const redisReply* s = streams->element[i];
    std::string key = RedisReply::StrOf(Element(s, 0));
    const uint32_t shard = ShardOfStreamKey(key);
    const redisReply* list = Element(s, 1);
    for (size_t j = 0; list != nullptr && j < list->elements; ++j) {
      const redisReply* entry = list->element[j];
      std::string id = RedisReply::StrOf(Element(entry, 0));
      const redisReply* fields = Element(entry, 1);
      if (id.empty()) continue;  // deleted meanwhile (XCLAIM of a trimmed entry)
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
      ids.push_back(StreamEntry{shard, id});
    }
  }
  if (got == 0) return 0;
  MutexLock lock(mu_);
  figures_.malformed += malformed;
  figures_.batches_applied += got;
  inbox_.Add(std::move(entries), std::move(ids));
  return got;
}

bool Cluster::Reclaim(bool* did) {
  std::vector<uint32_t> shards;
  for (uint32_t s : my_shards_)
    if (ready_[s].load() && LeaseValid(s)) shards.push_back(s);
  if (shards.empty()) return true;
  std::vector<std::string> cmd = {"EVAL", kReclaimScript,
                                  std::to_string(2 * shards.size())};
  for (uint32_t s : shards) cmd.push_back(StreamKey(s));
  for (uint32_t s : shards) cmd.push_back(Key("lease:" + std::to_string(s)));
  cmd.push_back(cfg_.node);
  cmd.push_back(std::to_string(leases_.ttl().count()));
  cmd.push_back("1000");
  for (uint32_t s : shards) cmd.push_back(leases_.Token(s));
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (r->IsError()) return !ReplyFailed(*r, "reclaim");
  const size_t got = ToInbox(r->raw());
  if (got == 0) return true;
  *did = true;
  spdlog::warn(
      "cluster: reclaimed {} stream entries of {} shards left pending for another "
      "consumer over {:.1f} s (cluster.lease_s)",
      got, r->raw()->elements, std::chrono::duration<double>(leases_.ttl()).count());
  return true;
}

}  // namespace crawler::engine
