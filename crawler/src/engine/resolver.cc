// See crawler/resolver.h.
#include "crawler/resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "base/heap_bytes.h"
#include "base/latencies.h"
#include "base/mutex.h"

namespace crawler::engine {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Resolver::Impl {
  struct Entry {
    int64_t expires_ms = 0;  // steady clock
    int64_t refresh_ms = 0;  // kAddress: look up again from here on
    Kind kind = Kind::kPending;
    bool querying = false;
    // kAddress: every address of the answer, in its order, comma-separated
    // (at most kMaxAddresses); else the error.
    std::string address;
  };
  static constexpr size_t kMaxAddresses = 8;
  // An address that did not answer a fetch (MarkDead), for every host.
  struct DeadMark {
    int64_t until_ms = 0;    // skipped until then
    int64_t backoff_ms = 0;  // the mark's length; doubled when marked again
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };

  // The first address of `*rest` (comma-separated), which loses it. A loop,
  // not a callback: the thread-safety analysis cannot see that a lambda
  // runs under mu.
  static std::string_view NextAddress(std::string_view* rest) {
    const size_t comma = rest->find(',');
    const std::string_view one = rest->substr(0, comma);
    *rest = comma == std::string_view::npos ? "" : rest->substr(comma + 1);
    return one;
  }
  // When `address`'s dead mark ends; 0: it is not marked.
  int64_t DeadUntil(std::string_view address, int64_t now) const REQUIRES(mu) {
    if (dead.empty()) return 0;
    auto it = dead.find(address);
    return it == dead.end() || it->second.until_ms <= now ? 0 : it->second.until_ms;
  }
  // The first address of `e` not marked dead; every one marked: the one
  // whose mark ends first (`e` holds an address).
  std::string_view Live(const Entry& e, int64_t now) const REQUIRES(mu) {
    std::string_view soonest;
    int64_t soonest_until = INT64_MAX;
    for (std::string_view rest = e.address; !rest.empty();) {
      const std::string_view one = NextAddress(&rest);
      const int64_t until = DeadUntil(one, now);
      if (until == 0) return one;
      if (until < soonest_until) soonest = one, soonest_until = until;
    }
    return soonest;
  }
  // One lookup under way (ares_getaddrinfo's argument).
  struct Query {
    Impl* impl;
    std::string host;
    int family;
    int64_t start_us;
  };

  explicit Impl(const ResolverOptions& o) : options(o) {}

  int64_t Now() const { return options.now_ms ? options.now_ms() : NowMs(); }
  ~Impl() {
    {
      MutexLock lock(mu);
      stop = true;
    }
    Wake();
    if (thread.joinable()) thread.join();
    if (channel != nullptr) ares_destroy(channel);  // EDESTRUCTION to each query
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void Wake() const {
    uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  // Marks `e` (host `host`) as looked up, and queues the lookup. REQUIRES mu.
  void Queue(const std::string& host, Entry* e) REQUIRES(mu) {
    e->querying = true;
    waiting.push_back(host);
  }

  static void SockState(void* data, ares_socket_t fd, int readable, int writable) {
    auto* impl = static_cast<Impl*>(data);
    if (readable == 0 && writable == 0) {
      impl->sockets.erase(fd);
    } else {
      impl->sockets[fd] = static_cast<short>((readable != 0 ? POLLIN : 0) |
                                             (writable != 0 ? POLLOUT : 0));
    }
  }

  void Send(std::string host, int family) {
    ares_addrinfo_hints hints{};
    hints.ai_family = family;
    auto* q = new Query{this, std::move(host), family,
                        std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count()};
    ares_getaddrinfo(channel, q->host.c_str(), nullptr, &hints, &Done, q);
  }

  static void Done(void* arg, int status, int /*timeouts*/, ares_addrinfo* res) {
    std::unique_ptr<Query> q(static_cast<Query*>(arg));
    Impl* impl = q->impl;
    if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
      if (res != nullptr) ares_freeaddrinfo(res);
      return;
    }
    if (status == ARES_ENODATA && q->family == AF_INET &&
        impl->options.ipv6 != Ipv6::kOff) {
      // No A record: ask for AAAA (the same lookup, still in flight).
      if (res != nullptr) ares_freeaddrinfo(res);
      impl->Send(std::move(q->host), AF_INET6);
      return;
    }
    std::string address;  // every address, comma-separated
    int ttl = 0;
    size_t kept = 0;
    if (status == ARES_SUCCESS && res != nullptr) {
      for (ares_addrinfo_node* n = res->nodes; n != nullptr && kept < kMaxAddresses;
           n = n->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* raw =
            n->ai_family == AF_INET
                ? static_cast<const void*>(
                      &reinterpret_cast<sockaddr_in*>(n->ai_addr)->sin_addr)
                : static_cast<const void*>(
                      &reinterpret_cast<sockaddr_in6*>(n->ai_addr)->sin6_addr);
        if (inet_ntop(n->ai_family, raw, text, sizeof text) == nullptr) continue;
        const std::string one = text;
        if (("," + address + ",").find("," + one + ",") != std::string::npos) continue;
        ttl = kept == 0 ? n->ai_ttl : std::min(ttl, n->ai_ttl);
        address += (kept++ == 0 ? "" : ",") + one;
      }
      for (ares_addrinfo_cname* c = res->cnames; c != nullptr; c = c->next)
        ttl = std::min(ttl, c->ttl);
    }
    if (res != nullptr) ares_freeaddrinfo(res);
    if (status == ARES_SUCCESS && address.empty()) status = ARES_ENODATA;
    impl->Store(q->host, status, std::move(address), ttl,
                std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                        .count() -
                    q->start_us);
  }

  void Store(const std::string& host, int status, std::string address, int ttl,
             int64_t latency_us) {
    const int64_t now = Now();
    MutexLock lock(mu);
    --in_flight;
    ++figures.queries;
    Entry& e = cache[host];
    e.querying = false;
    if (status == ARES_SUCCESS) {
      Answered();
      probe_name = host;
      latencies.Add(latency_us);
      double s =
          std::clamp(static_cast<double>(ttl), options.min_ttl_s, options.max_ttl_s);
      e.kind = Kind::kAddress;
      e.address = std::move(address);
      e.expires_ms = now + static_cast<int64_t>(s * 1000);
      e.refresh_ms = now + static_cast<int64_t>(s * 900);
    } else if (status == ARES_ENOTFOUND || status == ARES_ENODATA) {
      Answered();
      latencies.Add(latency_us);
      ++figures.not_found;
      e.kind = Kind::kNotFound;
      e.address =
          std::string(status == ARES_ENOTFOUND ? "NXDOMAIN" : "no address record") +
          " (" + ares_strerror(status) + ")";
      e.expires_ms = now + static_cast<int64_t>(options.negative_ttl_s * 1000);
    } else {
      ++(status == ARES_ETIMEOUT ? figures.timeouts : figures.failed);
      if (first_failed.empty())
        first_failed = host;
      else if (host != first_failed)
        two_failed = true;
      // A refresh that failed: the address it had stands until it expires.
      if (!(e.kind == Kind::kAddress && e.expires_ms > now)) {
        e.kind = Kind::kFailed;
        e.address = std::string("lookup failed (") + ares_strerror(status) + ")";
        e.expires_ms = now + 1000;
      }
      Probe(now);
    }
    generation.fetch_add(1);
  }

  // A failure while the resolver does not look healthy: the last name
  // that was answered is asked again (at most once a second), so that
  // Healthy soon tells a resolver that answers others from one that
  // answers nobody (its answer, or its failure, settles it).
  void Probe(int64_t now) REQUIRES(mu) {
    if (HealthyNow() || now < next_probe_ms || probe_name.empty()) return;
    next_probe_ms = now + 1000;
    auto it = cache.find(probe_name);
    if (it == cache.end() || it->second.querying) return;
    Queue(it->first, &it->second);
    ++figures.refreshes;
  }
  // Two different names failed with no lookup answered since: the
  // resolver (or the way to it) is down, not a name. One name failing
  // alone, again and again, is that name's own failure (a lame
  // delegation), even with nothing else to ask.
  bool HealthyNow() const REQUIRES(mu) { return !two_failed; }
  void Answered() REQUIRES(mu) {
    first_failed.clear();
    two_failed = false;
  }

  // Every minute, expired entries leave the cache (a host is looked up
  // again when next fetched): it holds the hosts fetched lately, not all.
  void Sweep() REQUIRES(mu) {
    const int64_t now = Now();
    if (now < next_sweep_ms) return;
    next_sweep_ms = now + 60000;
    std::erase_if(cache, [&](const auto& kv) {
      return !kv.second.querying && kv.second.kind != Kind::kPending &&
             kv.second.expires_ms <= now;
    });
    // A dead mark is forgotten once its address has gone unmarked as long
    // as it was marked: a failure after that starts the back-off again.
    std::erase_if(dead, [&](const auto& kv) {
      return kv.second.until_ms + kv.second.backoff_ms <= now;
    });
  }

  void Loop() {
    std::vector<pollfd> fds;
    for (;;) {
      std::vector<std::string> send;
      {
        MutexLock lock(mu);
        if (stop) return;
        Sweep();
        while (!waiting.empty() && in_flight < options.max_in_flight) {
          send.push_back(std::move(waiting.front()));
          waiting.pop_front();
          ++in_flight;
        }
      }
      // Outside the lock: an answer from /etc/hosts comes back at once.
      for (std::string& host : send) Send(std::move(host), both ? AF_UNSPEC : AF_INET);
      fds.assign(1, pollfd{wake_fd, POLLIN, 0});
      for (const auto& [fd, events] : sockets) fds.push_back(pollfd{fd, events, 0});
      timeval max{1, 0}, tv{};
      timeval* t = ares_timeout(channel, &max, &tv);
      int ms = static_cast<int>(t->tv_sec * 1000 + t->tv_usec / 1000);
      int ready = ::poll(fds.data(), fds.size(), std::max(ms, 1));
      if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
        uint64_t n = 0;
        (void)!::read(wake_fd, &n, sizeof n);
      }
      bool any = false;
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        any = true;
        bool r = (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
        bool w = (fds[i].revents & POLLOUT) != 0;
        ares_process_fd(channel, r ? fds[i].fd : ARES_SOCKET_BAD,
                        w ? fds[i].fd : ARES_SOCKET_BAD);
      }
      // Timeouts (and retries) are processed on a call without sockets.
      if (!any) ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    }
  }

  const ResolverOptions options;
  bool both = false;  // A and AAAA asked together (BothFamilies)
  ares_channel channel = nullptr;
  int wake_fd = -1;
  std::thread thread;
  // The resolver thread's alone (SockState runs inside c-ares calls there).
  std::map<ares_socket_t, short> sockets;
  std::atomic<uint64_t> generation{0};
  mutable Mutex mu;
  bool stop GUARDED_BY(mu) = false;
  std::unordered_map<std::string, Entry> cache GUARDED_BY(mu);
  std::unordered_map<std::string, DeadMark, StringHash, std::equal_to<>> dead
      GUARDED_BY(mu);
  std::deque<std::string> waiting GUARDED_BY(mu);
  size_t in_flight GUARDED_BY(mu) = 0;
  int64_t next_sweep_ms GUARDED_BY(mu) = 0;
  std::string first_failed GUARDED_BY(mu);  // failed since the last answer
  bool two_failed GUARDED_BY(mu) = false;   // ... and another name too
  int64_t next_probe_ms GUARDED_BY(mu) = 0;
  std::string probe_name GUARDED_BY(mu);  // the last name answered an address
  DnsFigures figures GUARDED_BY(mu);
  Latencies latencies GUARDED_BY(mu);
};

Resolver::Resolver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Resolver::~Resolver() = default;

Result<std::unique_ptr<Resolver>> Resolver::Create(const ResolverOptions& options) {
  static const int init = ares_library_init(ARES_LIB_INIT_ALL);
  if (init != ARES_SUCCESS)
    return Status::Error(Status::Code::kIoError,
                         std::string("c-ares: ") + ares_strerror(init));
  auto impl = std::make_unique<Impl>(options);
  ares_options o{};
  o.flags = ARES_FLAG_NOSEARCH;  // names are whole: no search domains appended
  o.timeout = static_cast<int>(std::max(1.0, options.timeout_s * 1000));
  o.tries = std::max(1, options.tries);
  o.sock_state_cb = &Impl::SockState;
  o.sock_state_cb_data = impl.get();
  int rc = ares_init_options(
      &impl->channel, &o,
      ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB);
  if (rc != ARES_SUCCESS)
    return Status::Error(Status::Code::kIoError,
                         std::string("c-ares: ") + ares_strerror(rc));
  if (!options.servers.empty()) {
    std::string csv;
    for (const std::string& s : options.servers) csv += (csv.empty() ? "" : ",") + s;
    rc = ares_set_servers_ports_csv(impl->channel, csv.c_str());
    if (rc != ARES_SUCCESS)
      return Status::Error(Status::Code::kInvalidArgument,
                           "fetch.dns_servers: '" + csv + "': " + ares_strerror(rc));
  }
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->wake_fd < 0) return Status::Error(Status::Code::kIoError, "eventfd failed");
  impl->both = options.ipv6 == Ipv6::kOn || (options.ipv6 == Ipv6::kAuto && Ipv6Routed());
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<Resolver>(new Resolver(std::move(impl)));
}

Resolver::Answer Resolver::Lookup(std::string_view host, bool count) {
  const int64_t now = impl_->Now();
  Answer a;
  bool wake = false;
  {
    MutexLock lock(impl_->mu);
    auto [it, fresh] = impl_->cache.try_emplace(std::string(host));
    Impl::Entry& e = it->second;
    if (fresh || (e.kind != Kind::kPending && e.expires_ms <= now)) {
      // Nothing valid: look it up, and wait.
      e.kind = Kind::kPending;
      if (!e.querying) {
        impl_->Queue(it->first, &e);
        ++impl_->figures.misses;
        wake = true;
      }
    } else if (e.kind == Kind::kAddress && e.refresh_ms <= now && !e.querying) {
      impl_->Queue(it->first, &e);  // ahead of its expiry
      ++impl_->figures.refreshes;
      wake = true;
    }
    a.kind = e.kind;
    if (a.kind == Kind::kAddress) {
      a.address = impl_->Live(e, now);
    } else if (a.kind != Kind::kPending) {
      a.error = e.address;
    }
    if (count && a.kind != Kind::kPending) ++impl_->figures.hits;
  }
  if (wake) impl_->Wake();
  return a;
}

void Resolver::Forget(std::string_view host) {
  MutexLock lock(impl_->mu);
  auto it = impl_->cache.find(std::string(host));
  if (it != impl_->cache.end() && !it->second.querying) impl_->cache.erase(it);
}

bool Resolver::MarkDead(std::string_view host, std::string_view address) {
  const int64_t now = impl_->Now();
  MutexLock lock(impl_->mu);
  auto [mark, fresh] = impl_->dead.try_emplace(std::string(address));
  Impl::DeadMark& m = mark->second;
  const int64_t first = static_cast<int64_t>(impl_->options.dead_address_s * 1000);
  const int64_t most = static_cast<int64_t>(impl_->options.dead_address_max_s * 1000);
  if (fresh || m.until_ms + m.backoff_ms <= now) {
    m.backoff_ms = first;  // new, or forgotten (Sweep's rule)
    m.until_ms = now + m.backoff_ms;
  } else if (m.until_ms <= now) {
    m.backoff_ms = std::min(most, 2 * m.backoff_ms);  // failed again soon after
    m.until_ms = now + m.backoff_ms;
  }  // else still marked: another fetch's failure at the same moment
  auto it = impl_->cache.find(std::string(host));
  if (it == impl_->cache.end() || it->second.kind != Kind::kAddress) return false;
  bool other = false;
  for (std::string_view rest = it->second.address; !rest.empty() && !other;)
    other = impl_->DeadUntil(Impl::NextAddress(&rest), now) == 0;
  if (other) ++impl_->figures.dead_addresses;
  return other;
}

Result<std::unique_ptr<Resolver>> Resolver::ForFetch(const FetchConfig& fetch) {
  if (!fetch.proxy.empty()) return std::unique_ptr<Resolver>();
  return Create({.servers = fetch.dns_servers,
                 .min_ttl_s = fetch.dns_min_ttl_s,
                 .max_ttl_s = fetch.dns_max_ttl_s,
                 .negative_ttl_s = fetch.dns_negative_ttl_s,
                 .timeout_s = fetch.dns_timeout_s,
                 .ipv6 = fetch.ipv6 == "on"    ? Ipv6::kOn
                         : fetch.ipv6 == "off" ? Ipv6::kOff
                                               : Ipv6::kAuto});
}

bool Resolver::BothFamilies() const { return impl_->both; }

bool Resolver::Ipv6Routed() {
  const int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 to{};
  to.sin6_family = AF_INET6;
  to.sin6_port = htons(53);
  // 2001:4860:4860::8888, a global address: a UDP connect() only looks up
  // the route (no packet is sent).
  inet_pton(AF_INET6, "2001:4860:4860::8888", &to.sin6_addr);
  const bool routed = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  ::close(fd);
  return routed;
}

bool Resolver::Healthy() const {
  MutexLock lock(impl_->mu);
  return impl_->HealthyNow();
}

uint64_t Resolver::generation() const { return impl_->generation.load(); }

DnsFigures Resolver::Figures() const {
  MutexLock lock(impl_->mu);
  DnsFigures f = impl_->figures;
  f.entries = impl_->cache.size();
  f.memory_bytes = heap_bytes::Nodes(impl_->cache) + heap_bytes::Buffer(impl_->waiting);
  for (const auto& [host, e] : impl_->cache) {
    f.memory_bytes += heap_bytes::Of(host) + heap_bytes::Of(e.address);
  }
  f.memory_bytes += heap_bytes::Nodes(impl_->dead);
  for (const auto& [address, m] : impl_->dead) f.memory_bytes += heap_bytes::Of(address);
  for (const std::string& host : impl_->waiting) f.memory_bytes += heap_bytes::Of(host);
  f.latency_p50_ms = impl_->latencies.QuantileMs(0.5);
  f.latency_p99_ms = impl_->latencies.QuantileMs(0.99);
  return f;
}

}  // namespace crawler::engine
