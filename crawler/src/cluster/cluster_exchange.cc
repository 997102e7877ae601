// The exchange thread of a cluster node (see cluster.h): send due batches,
// read this node's shards, acknowledge and trim what checkpoints hold,
// heartbeat, publish the node's state, test the end; reconnect when Redis
// goes away.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <thread>

#include "cluster/cluster.h"
#include "cluster/cluster_job.h"
#include "cluster/cluster_wire.h"

namespace crawler::engine {

using namespace cluster_wire;  // NOLINT: the formats this thread speaks

void Cluster::Loop() {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    bool stopping = stop_.load();
    if (!redis_.up()) {
      Status st = redis_.Reconnect();
      if (!st.ok()) {
        if (stopping) return;
        const double down = redis_.down_s(SteadyClock::now());
        {
          MutexLock lock(mu_);
          figures_.redis_down_s = down;
        }
        spdlog::warn("redis: down {:.0f} s ({}); retrying", down, st.message());
        if (const size_t expired = tenure_.Expire()) {
          MutexLock lock(mu_);
          figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, expired);
          figures_.lease_losses += expired;
        }  // past lease_s the workers stop: say so
        HoldFor(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      backoff = std::chrono::milliseconds(100);
      Reconnected();
      MutexLock lock(mu_);
      figures_.redis_down_s = 0;
      ++figures_.redis_reconnects;
      spdlog::info("redis: reconnected to {}", redis_.address().Text());
    }
    bool did = false;
    if (!Round(&did)) {
      if (stopping) return;
      if (!redis_.refusal().empty()) {
        // Redis answers but refuses (full, a replica, cannot persist): no
        // reconnect, which would meet the same refusal at once.
        WaitOutRefusal(backoff);
      } else {
        spdlog::warn("redis: connection to {} lost", redis_.address().Text());
        redis_.Lost(SteadyClock::now());
        std::this_thread::sleep_for(backoff);  // no hot loop on a failing command
      }
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      continue;
    }
    backoff = std::chrono::milliseconds(100);
    if (stopping) {
      // A last round sent everything, committed and acknowledged what was
      // published; a leaving node then gives its leases up.
      if (leave_.load() && !Release())
        spdlog::warn(
            "redis: the leases could not be given up: the other nodes take "
            "this node's shards over when they expire");
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

void Cluster::WaitOutRefusal(std::chrono::milliseconds backoff) {
  const std::string refusal = redis_.refusal();
  if (redis_.TakeRefusal(SteadyClock::now()))
    spdlog::warn("redis: {}; trying again with back-off", refusal);
  if (const size_t expired = tenure_.Expire()) {
    MutexLock lock(mu_);
    figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, expired);
    figures_.lease_losses += expired;
  }
  HoldFor(backoff);
}

void Cluster::HoldFor(std::chrono::milliseconds wait) {
  // Outbound batches are held meanwhile (RAM, then spill files).
  for (auto slept = std::chrono::milliseconds(0); slept < wait && !stop_.load();
       slept += std::chrono::milliseconds(100)) {
    sender_.Hold();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Cluster::Reconnected() {
  receiver_.Reconnected();  // sends may have rung while it was away
  members_.StateUnknown();
}

bool Cluster::Round(bool* did) {
  auto now = SteadyClock::now();
  if (const size_t expired = tenure_.Expire()) {
    MutexLock lock(mu_);
    figures_.leases_held -= std::min<uint64_t>(figures_.leases_held, expired);
    figures_.lease_losses += expired;
  }
  if (!sender_.SendDue(*redis_, stop_.load(), did)) return false;
  if (!Receive(did)) return false;
  if (!ClaimLoaded(did)) return false;
  if (!Commit()) return false;
  if (!AckPublished()) return false;
  // 4x as often while shards this node wants are not held yet (Want).
  if (beats_.Due(now)) {
    members_.StateUnknown();  // a lease taken marks this node busy
    if (!Heartbeat()) return false;
  }
  if (!failed_.load() &&
      !handoff_.HandOver(*redis_, members_, receiver_.committed(),
                         [this](uint64_t sequence, const std::vector<uint32_t>& shards) {
                           GiveUp(sequence, shards);
                         }))
    return false;
  if (now - last_reclaim_ > tenure_.leases().ttl()) {
    last_reclaim_ = now;
    // Entries of the owned shards left pending for another consumer (which
    // read them, then lost the shard or died) longer than lease_s.
    if (!receiver_.Reclaim(*redis_, Readable(tenure_.wanted()), tenure_.leases().ttl(),
                           did))
      return false;
  }
  LoadTaken();
  if (now - last_state_ >
      std::chrono::milliseconds(std::max<uint32_t>(cfg_.batch_ms, 50))) {
    last_state_ = now;
    // A busy node's job is not done (its own state says busy): the end
    // test is asked only by idle nodes.
    bool idle = false;
    if (!Publish(&idle) || (idle && !CheckDone())) return false;
  }
  return true;
}

bool Cluster::Receive(bool* did) {
  size_t got = 0;
  if (!receiver_.ReadNew(*redis_, Readable(tenure_.wanted()), did, &got)) return false;
  if (got > 0) members_.StateUnknown();  // the read script marked this node busy
  return true;
}

// One pipelined round trip, read back in send order.
bool Cluster::Heartbeat() {
  Figures f = figures();
  f.updated_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::vector<std::vector<std::string>> cmds = {
      {"EVAL", kAliveScript, "3", Key("alive:" + cfg_.node), Key("stats"), Key("load"),
       token_, std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 3000)), cfg_.node,
       json::serialize(json::value_from(f)), LoadToPublish()}};
  // Redis full: this node's sends are refused; every node reads the flag.
  if (sender_.refusing())
    cmds.push_back({"EVAL", kFullScript, "1", Key("full"), cfg_.node,
                    std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 3000))});
  const size_t full_at = cmds.size();
  cmds.push_back({"EXISTS", Key("full")});
  const size_t meta_at = cmds.size();
  cmds.push_back({"HGET", Key("meta"), "incarnation"});
  // With takeover: which nodes are alive (the shards this node wants next).
  bool members = takeover_ && !members_.nodes().empty();
  const size_t members_at = cmds.size();
  if (members) cmds.push_back(MembersCommand());
  // Shards given up, kept handoff checkpoints: the handoff's questions.
  const Handoffs::Asked handed =
      handoff_.Ask([this](const std::string& suffix) { return Key(suffix); }, &cmds);
  size_t lease_at = cmds.size();
  std::vector<uint32_t> asked = tenure_.wanted();
  if (!asked.empty()) {  // the leases; the owned shards' lag, for the metrics
    cmds.push_back(tenure_.Command([this](const std::string& k) { return Key(k); }));
    cmds.push_back({"EVAL", kLagScript, std::to_string(asked.size())});
    for (uint32_t s : asked) cmds.back().push_back(StreamKey(s));
  }
  auto start = SteadyClock::now();
  auto r = redis_->Pipeline(cmds);
  double rtt = std::chrono::duration<double>(SteadyClock::now() - start).count();
  if (!r.ok() || redis_.Failed((*r)[0], "heartbeat")) return false;
  if (!asked.empty()) {
    if (redis_.Failed((*r)[lease_at], "lease renewal")) return false;
    ApplyLeases((*r)[lease_at].view(), start);
  }
  if (!incarnation_.empty() && !(*r)[meta_at].IsError() &&
      (*r)[meta_at].Str() != incarnation_) {
    // Redis lost its data (restarted empty) or is another server now.
    JobIdentity mine{cfg_.job, incarnation_, seed_};
    Fail(JobLost((*r)[meta_at].IsNil() ? "missing" : "incarnation", (*r)[meta_at].Str(),
                 mine, redis_.address()));
    return true;
  }
  if ((*r)[full_at].Int() == 1)
    full_seen_ns_ = SteadyClock::now().time_since_epoch().count();
  handoff_.Answers(handed, *r);
  if (members && !(*r)[members_at].IsError()) Members((*r)[members_at].view());
  const ReplyView lags =
      r->size() > lease_at + 1 ? (*r)[lease_at + 1].view() : ReplyView();
  RecordHeartbeat(rtt, asked, lags);
  return true;
}

void Cluster::RecordHeartbeat(double rtt, const std::vector<uint32_t>& asked,
                              ReplyView lags) {
  MutexLock lock(mu_);
  size_t bucket = 0;
  while (bucket < kRttBounds.size() && rtt > kRttBounds[bucket]) ++bucket;
  if (bucket < kRttBounds.size()) ++health_.rtt_buckets[bucket];
  ++health_.rtt_count;
  health_.rtt_sum_s += rtt;
  if (lags.array() && lags.size() == asked.size()) {
    health_.owned_lag.clear();
    for (size_t i = 0; i < asked.size(); ++i) {
      if (tenure_.leases().state(asked[i]) != Leases::State::kHeld) continue;
      health_.owned_lag.emplace_back(asked[i], lags[i].count());
    }
  }
}

bool Cluster::Publish(bool* idle_out) {
  bool idle = local_idle_ && local_idle_() && Quiet();
  *idle_out = idle;
  // Written when it changes (a read or a lease taken also mark this node
  // busy in Redis: unknown then), and at every heartbeat.
  auto cmd = members_.StateCommand(idle);
  if (!cmd) return true;
  auto r = redis_->Command(*cmd);
  const bool ok = r.ok() && !redis_.Failed(*r, "state");
  members_.StateWritten(ok);
  return ok;
}

bool Cluster::CheckDone() {
  // The first look costs O(1); the full test, O(nodes), runs only when it
  // cannot tell (every live node idle, every batch read).
  auto hint = redis_->Command(members_.DoneHintCommand());
  if (!hint.ok() || redis_.Failed(*hint, "end test")) return false;
  if (hint->Int() == 0) return true;
  auto r = redis_->Command(members_.DoneCommand());
  if (!r.ok() || redis_.Failed(*r, "end test")) return false;
  if (r->Int() == 1 && !done_.exchange(true))
    spdlog::info("cluster: job {} is done (every node idle, every batch applied)",
                 cfg_.job);
  return true;
}

}  // namespace crawler::engine
