// The inbox and its ledger of stream entries (cluster/exchange/inbox.h) without
// Redis: an entry is acknowledged only once the checkpoint that holds it is
// the older of the two on disk, or at the job's end once committed. (The
// fallback to checkpoint.prev/ with a real redis-server and real nodes:
// cluster_test.cc, "Cluster: a resume that falls back to checkpoint.prev*".)
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cluster/exchange/inbox.h"

namespace crawler::cluster {
namespace {

std::vector<frontier::UrlEntry> Urls(int n, int from = 0) {
  std::vector<frontier::UrlEntry> urls(n);
  for (int i = 0; i < n; ++i) urls[i].url = "http://h.test/" + std::to_string(from + i);
  return urls;
}

std::vector<std::string> Ids(const std::vector<StreamEntry>& entries) {
  std::vector<std::string> ids;
  for (const StreamEntry& e : entries)
    ids.push_back(std::to_string(e.shard) + ":" + e.id);
  return ids;
}

TEST_CASE("Inbox: URLs taken by a worker are busy until admitted, their entries applied",
          "[engine][cluster]") {
  Inbox inbox;
  CHECK(inbox.Quiet());
  inbox.Add(Urls(3), {{1, "1-0"}, {2, "5-0"}});
  CHECK_FALSE(inbox.Empty());
  CHECK_FALSE(inbox.AwaitingCut());  // received, not applied yet
  std::vector<frontier::UrlEntry> got = inbox.Take();
  CHECK(got.size() == 3);
  CHECK(inbox.Empty());
  CHECK_FALSE(inbox.Quiet());  // being admitted
  CHECK(inbox.AwaitingCut());  // applied: only a checkpoint frees them
  inbox.Admitted();
  CHECK(inbox.Quiet());
  // Nothing is acknowledged before a cut and two commits.
  CHECK(inbox.TakeAcks().empty());
}

TEST_CASE(
    "Inbox: a commit of N acknowledges the cuts up to the commit before it, so "
    "checkpoint.prev/ holds every entry Redis no longer keeps; at the end, its own",
    "[engine][cluster]") {
  Inbox inbox;
  inbox.Add(Urls(1), {{0, "1-0"}});
  inbox.Take();
  inbox.Admitted();
  inbox.Cut(1);  // checkpoint 1 holds 0:1-0
  inbox.Add(Urls(1, 1), {{0, "2-0"}});
  inbox.Take();
  inbox.Admitted();
  CHECK(inbox.AwaitingCut());
  inbox.Committed(1, false);  // checkpoint 1 is checkpoint/, nothing older on disk
  CHECK(inbox.committed() == 1);
  CHECK(inbox.TakeAcks().empty());
  inbox.Cut(2);               // holds 0:2-0
  inbox.Committed(2, false);  // checkpoint.prev/ is 1 now: its entries go
  CHECK(Ids(inbox.TakeAcks()) == std::vector<std::string>{"0:1-0"});
  CHECK(inbox.AwaitingCut());  // 0:2-0, cut in 2, waits for the next commit

  // Not acknowledged (Redis down, or fenced): they stay, sent again.
  inbox.Add(Urls(1, 2), {{3, "9-0"}});
  inbox.Take();
  inbox.Admitted();
  inbox.Cut(3);
  inbox.Committed(3, false);
  std::vector<StreamEntry> acks = inbox.TakeAcks();
  CHECK(Ids(acks) == std::vector<std::string>{"0:2-0"});
  inbox.Retry(std::move(acks));
  CHECK(Ids(inbox.TakeAcks()) == std::vector<std::string>{"0:2-0"});

  // A commit of an older sequence (out of order) does not move back.
  inbox.Committed(2, false);
  CHECK(inbox.committed() == 3);
  CHECK(inbox.TakeAcks().empty());

  // The job's end: nothing will be resumed, its own cut goes too.
  inbox.Committed(4, /*last=*/true);
  CHECK(Ids(inbox.TakeAcks()) == std::vector<std::string>{"3:9-0"});
  CHECK_FALSE(inbox.AwaitingCut());
}

TEST_CASE("Inbox: entries taken after a cut are in the next one, not that one",
          "[engine][cluster]") {
  Inbox inbox;
  inbox.Add(Urls(2), {{5, "1-0"}});
  inbox.Cut(1);  // received, not taken: not in checkpoint 1 (its URLs are not
                 // in the frontier it holds); read again after a crash
  inbox.Take();
  inbox.Admitted();
  inbox.Cut(2);
  inbox.Committed(1, false);
  inbox.Committed(2, false);
  CHECK(inbox.TakeAcks().empty());  // 2 is not checkpoint.prev/ yet
  inbox.Committed(3, false);
  CHECK(Ids(inbox.TakeAcks()) == std::vector<std::string>{"5:1-0"});
}

}  // namespace
}  // namespace crawler::cluster
