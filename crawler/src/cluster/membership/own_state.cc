// A resumed node's own checkpoint state (own_state.h).
#include "cluster/membership/own_state.h"

#include <algorithm>
#include <set>
#include <utility>

#include "frontier/frontier.h"

namespace crawler::cluster {

void OwnState::Stash(engine::ShardState own, const ShardOf& shard_of) {
  std::vector<uint32_t>& shards = from_.shards;
  for (const frontier::HostImage& h : own.frontier.hosts)
    shards.push_back(shard_of(h.key));
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  from_.sequence = own.sequence;
  own_ = std::move(own);
}

std::optional<engine::ShardState> OwnState::Take(const ShardOf& shard_of,
                                                 size_t* dropped) {
  *dropped = 0;
  if (!own_) return std::nullopt;
  std::set<uint32_t> keep(restore_.begin(), restore_.end());
  engine::ShardState st;
  st.own = true;
  st.from = own_->from;
  st.shards = restore_;
  auto mine = [&](std::string_view host) { return keep.count(shard_of(host)) > 0; };
  for (frontier::HostImage& h : own_->frontier.hosts)
    if (mine(h.key)) st.frontier.hosts.push_back(std::move(h));
  for (auto& u : own_->frontier.urls) {
    if (mine(frontier::HostKey(u.first.url))) {
      st.frontier.urls.push_back(std::move(u));
    } else {
      ++*dropped;
    }
  }
  for (engine::HostSnapshot& h : own_->hosts)
    if (mine(h.key)) st.hosts.push_back(std::move(h));
  own_.reset();
  restore_.clear();
  return st;
}

}  // namespace crawler::cluster
