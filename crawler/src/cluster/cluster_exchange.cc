// The exchange thread of a cluster node (see cluster.h): send due batches,
// read this node's shards, claim and load the shards taken over, commit the
// published checkpoints (fenced) and acknowledge and trim what they hold,
// heartbeat (what the lease replies mean), hand shards over, publish the
// node's state, test the end; reconnect when Redis goes away; give the
// leases up on a leave.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <thread>

#include "cluster/cluster.h"
#include "cluster/membership/cluster_job.h"
#include "cluster/redis/cluster_wire.h"

namespace crawler::cluster {

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
        counters_.RedisDown(down);
        spdlog::warn("redis: down {:.0f} s ({}); retrying", down, st.message());
        counters_.LeasesExpired(tenure_.Expire());  // past lease_s the workers stop
        sender_.HoldFor(backoff, stop_);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      backoff = std::chrono::milliseconds(100);
      receiver_.Reconnected();  // sends may have rung while it was away
      members_.StateUnknown();
      counters_.Reconnected();
      spdlog::info("redis: reconnected to {}", redis_->address().Text());
    }
    bool did = false;
    if (!Round(&did)) {
      if (stopping) return;
      if (!redis_.refusal().empty()) {
        // Redis answers but refuses (full, a replica, cannot persist): no
        // reconnect, which would meet the same refusal at once.
        const std::string refusal = redis_.refusal();
        if (redis_.TakeRefusal(SteadyClock::now()))
          spdlog::warn("redis: {}; trying again with back-off", refusal);
        counters_.LeasesExpired(tenure_.Expire());
        sender_.HoldFor(backoff, stop_);
      } else {
        spdlog::warn("redis: connection to {} lost",
                     (redis_.up() ? redis_->address() : redis_.address()).Text());
        redis_.Lost(SteadyClock::now());
        std::this_thread::sleep_for(backoff);  // no hot loop on a failing command
      }
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      continue;
    }
    backoff = std::chrono::milliseconds(100);
    // Redis answers again: turns this node could not give back go now, not
    // when the next request starts (there may be none).
    if (turns_ != nullptr) turns_->Settle();
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

bool Cluster::Round(bool* did) {
  auto now = SteadyClock::now();
  counters_.LeasesExpired(tenure_.Expire());
  if (!sender_.SendDue(*redis_, stop_.load(), did)) return false;
  size_t got = 0;  // new entries (the receiver's doorbell says when to read)
  if (!receiver_.ReadNew(*redis_, Readable(tenure_.wanted()), did, &got)) return false;
  if (got > 0) members_.StateUnknown();  // the read script marked this node busy
  // The pending entries of shards just loaded, claimed and read.
  if (!receiver_.ClaimAndRead(
          *redis_,
          [this](const std::vector<uint32_t>& shards) { return Readable(shards); },
          [this](uint32_t shard) { return tenure_.leases().Holds(shard); }, did))
    return false;
  if (!Commit()) return false;
  {
    // Fenced by lease (Tenure::Acknowledge); what waits goes back.
    Tenure::Acked acked = tenure_.Acknowledge(
        *redis_, receiver_.TakeAcks(),
        [this](uint32_t s) { return handoff_.Released(s); },
        [this](const std::string& suffix) { return members_.Key(suffix); });
    receiver_.Retry(std::move(acked.keep));
    counters_.AcksFenced(acked.fenced);
    if (!acked.ok) return false;
  }
  // 4x as often while shards this node wants are not held yet (Want); at
  // once when the reads saw the placement move.
  balancer_.Seen(receiver_.assign_seen());
  if (beats_.Due(now)) {
    members_.StateUnknown();  // a lease taken marks this node busy
    if (!Heartbeat()) return false;
  }
  if (!fate_.failed() &&
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
    const bool idle = local_idle_ && local_idle_() && Quiet();
    if (!members_.Publish(redis_, idle) || (idle && !members_.TestDone(redis_)))
      return false;
  }
  return true;
}

// One pipelined round trip, read back in send order.
bool Cluster::Heartbeat() {
  report::ClusterReport f = figures();
  f.updated_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string figures = json::serialize(json::value_from(f)),
                    load = balancer_.LoadToPublish(!fate_.failed() && !leave_.load());
  std::vector<std::vector<std::string>> cmds = {
      {"EVAL", kAliveScript, "3", members_.Key("alive:" + cfg_.node),
       members_.Key("stats"), members_.Key("load"), job_.token,
       std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 3000)), cfg_.node, figures,
       load}};
  // Last in the pipeline, its reply unread: a refused point is a gap.
  const bool point =
      counters_.TimelineDue(SteadyClock::now(), kTimelineBeats * cfg_.heartbeat_s);
  // Redis full: this node's sends are refused; every node reads the flag.
  if (sender_.refusing())
    cmds.push_back({"EVAL", kFullScript, "1", members_.Key("full"), cfg_.node,
                    std::to_string(static_cast<int64_t>(cfg_.heartbeat_s * 3000))});
  const size_t full_at = cmds.size();
  cmds.push_back({"EXISTS", members_.Key("full")});
  const size_t meta_at = cmds.size();
  cmds.push_back({"HGET", members_.Key("meta"), "incarnation"});
  // With takeover: which nodes are alive (the shards this node wants next).
  bool members = states_.takeover() && !members_.nodes().empty();
  const size_t members_at = cmds.size();
  if (members) cmds.push_back(balancer_.MembersCommand());
  // Shards given up, kept handoff checkpoints: the handoff's questions.
  const Handoffs::Asked handed = handoff_.Ask(
      [this](const std::string& suffix) { return members_.Key(suffix); }, &cmds);
  size_t lease_at = cmds.size();
  std::vector<uint32_t> asked = tenure_.wanted();
  if (!asked.empty()) {  // the leases; the owned shards' lag, for the metrics
    cmds.push_back(
        tenure_.Command([this](const std::string& k) { return members_.Key(k); }));
    cmds.push_back({"EVAL", kLagScript, std::to_string(asked.size())});
    for (uint32_t s : asked)
      cmds.back().push_back(members_.Key("s:" + std::to_string(s)));
  }
  if (point)
    cmds.push_back({"EVAL", kTimelineScript, "1", members_.Key("timeline"),
                    std::to_string(kTimelineEntries), cfg_.node, figures, load});
  auto start = SteadyClock::now();
  auto r = redis_->Pipeline(cmds);
  double rtt = std::chrono::duration<double>(SteadyClock::now() - start).count();
  if (!r.ok() || redis_.Failed((*r)[0], "heartbeat")) return false;
  // Before the leases: in a Redis that lost the job every lease reads as
  // lost, and the first failure recorded is the one the node exits with.
  if (JobGone((*r)[meta_at].view())) return true;
  if (!asked.empty()) {
    if (redis_.Failed((*r)[lease_at], "lease renewal")) return false;
    ApplyLeases((*r)[lease_at].view(), start);
  }
  if ((*r)[full_at].Int() == 1) full_.Seen(SteadyClock::now());
  handoff_.Answers(handed, *r);
  if (members && !(*r)[members_at].IsError()) {
    balancer_.Members((*r)[members_at].view(),
                      {f.pages, f.pages_per_s, !fate_.failed() && !leave_.load()});
    counters_.SetNodes(members_.nodes().size());
  }
  const ReplyView lags =
      r->size() > lease_at + 1 ? (*r)[lease_at + 1].view() : ReplyView();
  counters_.Heartbeat(rtt, asked, lags, tenure_.leases());
  return true;
}

bool Cluster::JobGone(ReplyView incarnation) {
  if (job_.incarnation.empty() || incarnation.error() ||
      incarnation.str() == job_.incarnation)
    return false;
  // Redis lost its data (restarted empty) or is another server now.
  JobIdentity mine{cfg_.job, job_.incarnation, job_.seed};
  fate_.Fail(JobLost(incarnation.nil() ? "missing" : "incarnation", incarnation.str(),
                     mine, redis_.address()));
  return true;
}

void Cluster::ApplyLeases(ReplyView r, SteadyClock::time_point sent) {
  const std::optional<Tenure::Round> round = tenure_.Apply(
      r, sent, states_.ready(),
      [this](uint32_t s, const LeaseReply& reply, Tenure::Round* in) {
        // A lease newly this process's: its state is here,
        // restored from the checkpoint this node resumed
        // from, or loaded from the shard's source.
        const ShardStates::Origin o = states_.Gained(s, reply, handoff_.Released(s), in);
        if (o.kind == ShardStates::Origin::Kind::kNone) return;
        MutexLock lock(mu_);
        if (o.kind == ShardStates::Origin::Kind::kFrom)
          commits_.From(s, o.from);
        else
          commits_.Forget(s);
      });
  if (!round) return;
  if (!round->taken_again.empty()) {
    // After Apply updated Holding: a cut made meanwhile has the new epoch.
    MutexLock lock(mu_);
    for (const auto& [s, epoch] : round->taken_again) commits_.TakenAgain(s, epoch);
  }
  counters_.LeaseRound(round->held, round->unnoticed.size());
  if (round->lost.empty()) return;
  // Another node has them, from this node's last committed checkpoint: what
  // this process did since is void.
  fate_.Fail("lease renewal refused: " + std::to_string(round->lost.size()) +
                 " shards this node held were taken by another node (the first " +
                 round->lost_to + ") while it was paused or cut off; its work since " +
                 "its last committed checkpoint is void (the new owners redo it from " +
                 "there)",
             /*fenced=*/true);
}

void Cluster::LoadTaken() {
  // A shard this node gave up and took back waits until a worker has
  // dropped what it had.
  auto out_dir_of = [this](const std::string& node) -> Result<std::string> {
    auto rel = redis_->Command({"HGET", members_.Key("outdirs"), node});
    if (!rel.ok()) return rel.status();
    if (!rel->view().string())
      return Status::Error(Status::Code::kIoError,
                           "node '" + node + "' published no output directory");
    return cfg_.shared_dir + "/" + rel->Str();
  };
  auto done =
      states_.StepLoads(out_dir_of, [this](uint32_t s) { return handoff_.Dropping(s); });
  if (!done) return;
  counters_.ShardLoad(done->seconds, done->urls, done->end_unix);
  MutexLock lock(mu_);
  for (uint32_t s : done->shards) commits_.From(s, done->from);
}

bool Cluster::Commit() {
  // A node that lost shards to another (Fail) commits nothing more: a
  // checkpoint cut after ApplyLeases dropped the lost shards from Holding
  // would name none of them, pass the fence, and become what --resume
  // starts from, with pages the new owners fetch again (an ASan run of the
  // zombie test found 4 URLs twice that way).
  if (fate_.failed()) return true;
  // Leases of shards handed over are given up before any later checkpoint
  // (which no longer holds them) is committed: Redis never shows this node
  // holding a shard its committed checkpoint lacks.
  if (!handoff_.SendReleases(*redis_, members_)) return false;
  std::optional<Commits::Request> req;
  uint64_t last = 0;
  {
    MutexLock lock(mu_);
    req = commits_.Next();
    last = commits_.committed();
  }
  if (!req) return true;
  std::vector<std::string> cmd = {"EVAL",
                                  kCommitScript,
                                  "4",
                                  members_.Key("holder"),
                                  members_.Key("source"),
                                  members_.Key("commits"),
                                  members_.Key("source_prev"),
                                  cfg_.node,
                                  std::to_string(req->sequence)};
  cmd.insert(cmd.end(), req->args.begin(), req->args.end());
  auto r = redis_->Command(cmd);
  if (!r.ok()) return false;
  if (redis_.Failed(*r, "commit")) return false;
  if ((*r)[0].str() == "fenced") {
    // A Redis restarted empty fences every commit (no shard has a holder):
    // that is the job lost (exit 2), not this node's shards taken. A
    // failed read here leaves the fencing below to stop the node.
    if (auto meta = redis_->Command({"HGET", members_.Key("meta"), "incarnation"});
        meta.ok() && JobGone(meta->view()))
      return true;
    {
      counters_.AcksFenced(1);
      MutexLock lock(mu_);
      commits_.Refused(*req);  // not again
    }
    fate_.Fail("the commit of checkpoint " + std::to_string(req->sequence) +
                   " was refused by Redis (fenced): shard " + (*r)[1].str() +
                   " is now '" + (*r)[2].str() +
                   "'; this node's work since its last committed checkpoint (" +
                   std::to_string(last) + ") is void",
               /*fenced=*/true);
    return true;
  }
  {
    MutexLock lock(mu_);
    commits_.Accepted(*req);
  }
  sender_.Committed(req->sequence);
  // Acknowledged once checkpoint.prev/ holds them (inbox.h); at the job's
  // end, when nothing will be resumed, once committed.
  receiver_.Committed(req->sequence, /*last=*/members_.done());
  return true;
}

bool Cluster::Release() {
  if (fate_.failed()) return true;
  {
    MutexLock lock(mu_);
    if (commits_.Pending()) {
      spdlog::warn(
          "cluster: checkpoint {} is not committed; the leases are kept (they expire)",
          commits_.published());
      return true;
    }
  }
  std::vector<std::pair<uint32_t, std::string>> held;
  for (uint32_t s : tenure_.wanted())
    if (tenure_.leases().Holds(s)) held.emplace_back(s, tenure_.leases().Token(s));
  auto r = redis_->Pipeline(members_.LeaveCommands(held));
  if (!r.ok() || (*r)[0].IsError()) return false;
  uint64_t committed = 0;
  {
    MutexLock lock(mu_);
    committed = commits_.committed();
  }
  spdlog::info("cluster: left job {}: {} leases given up (last commit: checkpoint {})",
               cfg_.job, (*r)[0].Int(), committed);
  return true;
}

}  // namespace crawler::cluster
