// libcurl multi fetcher; see crawler/fetcher.h.
#include "crawler/fetcher.h"

#include <arpa/inet.h>
#include <curl/curl.h>

#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "base/ascii.h"
#include "crawler/resolver.h"
#include "engine/decoder.h"

namespace crawler::engine {
namespace {

// Process-wide libcurl state: global init once, and the shared DNS cache.
class CurlGlobal {
 public:
  static CurlGlobal& Get() {
    static CurlGlobal global;
    return global;
  }
  CURLSH* share() const { return share_; }

 private:
  CurlGlobal() {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    share_ = curl_share_init();
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &Unlock);
  }
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void*) {
    Mutexes()[data % kLocks].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void*) {
    Mutexes()[data % kLocks].unlock();
  }
  static constexpr int kLocks = CURL_LOCK_DATA_LAST;
  static std::mutex* Mutexes() {
    static std::mutex locks[kLocks];
    return locks;
  }
  CURLSH* share_ = nullptr;
};

using ascii::LowerAscii;
std::string Trim(std::string_view s) { return std::string(ascii::Trim(s, " \t\r\n")); }

FetchError Classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return FetchError::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return FetchError::kDns;
    case CURLE_COULDNT_CONNECT:
      return FetchError::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return FetchError::kTimeout;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return FetchError::kProtocol;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return FetchError::kTls;
    default:
      return FetchError::kOther;
  }
}

}  // namespace

const char* FetchErrorName(FetchError e) {
  switch (e) {
    case FetchError::kNone:
      return "none";
    case FetchError::kDns:
      return "dns";
    case FetchError::kDnsFailure:
      return "dns-failure";
    case FetchError::kConnect:
      return "connect";
    case FetchError::kTimeout:
      return "timeout";
    case FetchError::kTooLarge:
      return "too-large";
    case FetchError::kProtocol:
      return "protocol";
    case FetchError::kTls:
      return "tls";
    case FetchError::kSpool:
      return "spool";
    case FetchError::kOther:
      return "other";
  }
  return "other";
}

namespace {

// The value of header `name` in the last response, trimmed ("" if absent).
std::string LastHeader(CURL* easy, const char* name) {
  curl_header* h = nullptr;
  if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK || h == nullptr)
    return "";
  return Trim(h->value);
}

}  // namespace

struct Fetcher::Impl {
  struct Transfer {
    CURL* easy = nullptr;
    FetchResult result;
    Callback done;
    uint64_t max_body = 0;
    bool too_large = false, body_started = false;
    // The response's Content-Encoding, undone by `decoder` (made at the
    // body's first byte); a broken stream or an unknown coding.
    std::string content_encoding, decode_error;
    std::unique_ptr<ContentDecoder> decoder;
    curl_slist* headers = nullptr;  // extra request headers (Add's)
    // The host options.resolver looks up (empty: libcurl connects by
    // itself), and the CURLOPT_CONNECT_TO entry its answer made.
    std::string dns_host;
    std::string address;  // the resolver's answer it connects to
    curl_slist* connect_to = nullptr;
    Transfer() = default;
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;
    ~Transfer() {
      curl_slist_free_all(headers);
      curl_slist_free_all(connect_to);
    }
  };

  // fetch.resolve, indexed by "host:port". libcurl loads a CURLOPT_RESOLVE
  // list into the DNS cache at every transfer's start, entry by entry under
  // the share's lock, so handing each transfer the whole list cost O(entries)
  // per fetch: with 2,000 entries (crawler-testsite --web --hosts 2000) a
  // crawl of 6,834 fetches took 40.6 s, most of it in that lock and memcmp.
  // Each entry it loads also stays in the cache for good, and libcurl walks
  // the whole cache after every transfer (its prune of old entries): with
  // 100,000 hosts that walk took three quarters of the crawl's CPU (68
  // pages/s; scripts/bench-web.sh, perf). So an entry of one address goes
  // to its own host's transfers as CURLOPT_CONNECT_TO ("HOST:PORT:ADDRESS:
  // PORT": the Host header and the TLS name stay the URL's), which caches
  // only the numeric address, like any lookup, for dns_cache_timeout; an
  // entry of several addresses to its host's transfers as CURLOPT_RESOLVE;
  // the others (curl's "*", "+" and "-" forms) to every transfer.
  explicit Impl(const FetchOptions& o) : options(o) {
    for (const std::string& entry : o.resolve) {
      const size_t colon = entry.find(':'), second = entry.find(':', colon + 1);
      const bool indexed = !entry.empty() && entry[0] != '+' && entry[0] != '-' &&
                           entry[0] != '*' && entry[0] != '[' &&
                           second != std::string::npos;
      if (!indexed) {
        resolve_any = curl_slist_append(resolve_any, entry.c_str());
        continue;
      }
      const std::string key = LowerAscii(entry.substr(0, second));
      std::string address = entry.substr(second + 1);
      // Its first address, for politeness per address (AddressFor).
      std::string first = address.substr(0, address.find(','));
      if (first.size() > 2 && first.front() == '[' && first.back() == ']')
        first = first.substr(1, first.size() - 2);
      address_by_authority.emplace(key, first);
      if (address.find(',') == std::string::npos && !address.empty()) {
        if (address.find(':') != std::string::npos && address[0] != '[')
          address = "[" + address + "]";  // IPv6
        const std::string connect = entry.substr(0, second) + ":" + address + ":" +
                                    entry.substr(colon + 1, second - colon - 1);
        connect_to_by_authority[key] =
            curl_slist_append(connect_to_by_authority[key], connect.c_str());
      } else {
        resolve_by_authority[key] =
            curl_slist_append(resolve_by_authority[key], entry.c_str());
      }
    }
  }
  // What a transfer of `url` gets of fetch.resolve (nulls: nothing).
  struct Route {
    curl_slist* connect_to = nullptr;
    curl_slist* resolve = nullptr;
  };
  // "host:port" of `url` (Boost.URL's parse), lowercase, the port made
  // explicit, an IPv6 host in brackets; "" if it has no host.
  static std::string Authority(const std::string& url) {
    const auto u = boost::urls::parse_uri(url);
    if (!u || u->encoded_host().empty()) return "";
    std::string key = LowerAscii(u->encoded_host_and_port());
    if (!u->has_port())
      key += u->scheme_id() == boost::urls::scheme::https ? ":443" : ":80";
    return key;
  }
  // The name options.resolver should look up for `url`: none for an
  // address, or a host fetch.resolve routes, or through a proxy (it
  // resolves: the crawler's lookups would only leak names).
  std::string DnsHost(const std::string& url, const Route& route) const {
    if (options.resolver == nullptr || !options.proxy.empty() ||
        route.connect_to != nullptr ||
        (route.resolve != nullptr && route.resolve != resolve_any))
      return "";
    std::string host = Authority(url);
    host = host.substr(0, host.rfind(':'));
    in6_addr scratch{};
    if (host.empty() || host[0] == '[' || inet_pton(AF_INET, host.c_str(), &scratch) == 1)
      return "";
    return host;
  }
  Route RouteFor(const std::string& url) {
    if (resolve_by_authority.empty() && connect_to_by_authority.empty())
      return {nullptr, resolve_any};
    std::string key = Authority(url);
    if (key.empty()) return {nullptr, resolve_any};
    if (auto c = connect_to_by_authority.find(key); c != connect_to_by_authority.end())
      return {c->second, resolve_any};
    auto it = resolve_by_authority.find(key);
    if (it == resolve_by_authority.end()) return {nullptr, resolve_any};
    if (resolve_any == nullptr) return {nullptr, it->second};
    // Rare (both kinds of entries): this host's and the general ones.
    curl_slist*& both = resolve_both[key];
    if (both == nullptr) {
      for (curl_slist* l : {it->second, resolve_any})
        for (; l != nullptr; l = l->next) both = curl_slist_append(both, l->data);
    }
    return {nullptr, both};
  }
  ~Impl() {
    for (auto* lists : {&resolve_by_authority, &resolve_both, &connect_to_by_authority})
      for (auto& [key, list] : *lists) curl_slist_free_all(list);
    curl_slist_free_all(resolve_any);
    for (auto& [easy, t] : transfers) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  // libcurl callbacks: they only append to buffers and never throw (but
  // bad_alloc). OnBody's 0 aborts (CURLE_WRITE_ERROR): over the cap, a
  // spool not written (kSpool), a broken or unknown Content-Encoding.
  static size_t OnBody(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t bytes = size * n;
    if (!t->body_started) {
      t->body_started = true;
      t->decoder = ContentDecoder::For(t->content_encoding, &t->decode_error);
      if (!t->decode_error.empty()) return 0;
    }
    if (t->decoder == nullptr) return Keep(t, data, bytes) ? bytes : 0;
    const bool ok = t->decoder->Feed(
        data, bytes, [t](const char* d, size_t k) { return Keep(t, d, k); });
    if (!ok) t->decode_error = t->decoder->error();
    return ok ? bytes : 0;
  }
  static bool Keep(Transfer* t, const char* data, size_t bytes) {
    size_t room = t->max_body - std::min<uint64_t>(t->max_body, t->result.body.size());
    if (bytes > room) {
      t->result.body.Append(data, room);
      t->too_large = true;
      return false;
    }
    return t->result.body.Append(data, bytes);
  }
  static size_t OnHeader(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100): afresh
      t->result.response_head.clear();
      t->content_encoding.clear();
    }
    if (ascii::StartsWithIgnoreCase(line, "content-encoding:"))
      t->content_encoding += "," + line.substr(17);  // decoder.h trims
    t->result.response_head += line;
    return size * n;
  }
  static int OnDebug(CURL*, curl_infotype type, char* data, size_t size, void* user) {
    if (type == CURLINFO_HEADER_OUT)
      static_cast<Transfer*>(user)->result.request_head.assign(data, size);
    return 0;
  }

  void Finish(CURL* easy, CURLcode code) {
    auto it = transfers.find(easy);
    if (it == transfers.end()) return;
    std::unique_ptr<Transfer> t = std::move(it->second);
    transfers.erase(it);
    curl_multi_remove_handle(multi, easy);
    FetchResult& r = t->result;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.status);
    char* ip = nullptr;
    if (curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip != nullptr)
      r.ip = ip;
    char* ctype = nullptr;
    if (curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK &&
        ctype != nullptr) {
      r.content_type_header = Trim(ctype);
      std::string ct = LowerAscii(ctype);
      size_t semi = ct.find(';');
      r.content_type = Trim(ct.substr(0, semi));
      size_t cs = ct.find("charset=", semi == std::string::npos ? ct.size() : semi);
      if (cs != std::string::npos) {
        std::string v = ct.substr(cs + 8);
        v = v.substr(0, v.find(';'));
        v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
        r.charset = Trim(v);
      }
    }
    // The last response's headers the engine reads (libcurl parses them:
    // 7.84+).
    r.location = LastHeader(easy, "Location");
    r.retry_after = LastHeader(easy, "Retry-After");
    r.etag = LastHeader(easy, "ETag");
    r.last_modified = LastHeader(easy, "Last-Modified");
    r.date = LastHeader(easy, "Date");
    curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME, &r.seconds);
    // 421: this address does not serve the host (any more): its next fetch
    // looks it up again (retry.h: fetched again after a back-off).
    if (r.status == 421 && !t->dns_host.empty()) options.resolver->Forget(t->dns_host);
    if (!r.body.Finish()) {
      r.error = FetchError::kSpool;
      r.error_message = r.body.error();
    } else if (t->too_large) {
      r.truncated = true;
      r.error = FetchError::kTooLarge;
      r.error_message =
          "body larger than " + std::to_string(options.max_body_bytes) + " bytes";
    } else if (!t->decode_error.empty()) {
      // An unknown coding is final; a broken stream a cut body (retry.h).
      r.error = t->decoder == nullptr ? FetchError::kOther : FetchError::kProtocol;
      r.error_message = t->decode_error;
    } else if (code == CURLE_OK && t->decoder != nullptr && !t->decoder->Ended()) {
      r.error = FetchError::kProtocol;
      r.error_message = "the body ended before its compressed stream did";
    } else if (code != CURLE_OK) {
      r.error = Classify(code);
      r.error_message = curl_easy_strerror(code);
      r.other_address = NoAnswer(easy, code) && !t->address.empty() &&
                        options.resolver->MarkDead(t->dns_host, t->address);
      if (r.other_address) r.error_message += " (" + t->address + "; the next address)";
    }
    curl_easy_cleanup(easy);
    t->done(std::move(r));
  }

  // The transfer's address never answered: refused, unreachable, its
  // connect timed out, or it connected and no byte of a response came
  // before the timeout (a blackhole: the next address may answer).
  static bool NoAnswer(CURL* easy, CURLcode code) {
    if (code == CURLE_COULDNT_CONNECT) return true;
    long header_bytes = 0;
    return code == CURLE_OPERATION_TIMEDOUT &&
           curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &header_bytes) == CURLE_OK &&
           header_bytes == 0;
  }

  // Hands transfer `easy` to libcurl with its host's address, or holds it
  // while the lookup runs (dns_waiting), or ends it with the lookup's
  // failure (dns_failed). Returns false while it waits.
  bool Resolve(CURL* easy, bool first) {
    Transfer& t = *transfers.at(easy);
    const Resolver::Answer a = options.resolver->Lookup(t.dns_host, first);
    switch (a.kind) {
      case Resolver::Kind::kPending:
        if (first) dns_waiting.push_back(easy);
        return false;
      case Resolver::Kind::kAddress: {
        const bool v6 = a.address.find(':') != std::string::npos;
        t.address = a.address;
        t.connect_to = curl_slist_append(
            t.connect_to,
            ("::" + (v6 ? "[" + a.address + "]" : a.address) + ":").c_str());
        curl_easy_setopt(easy, CURLOPT_CONNECT_TO, t.connect_to);
        curl_multi_add_handle(multi, easy);
        return true;
      }
      case Resolver::Kind::kNotFound:
      case Resolver::Kind::kFailed:
        t.result.error = a.kind == Resolver::Kind::kNotFound ? FetchError::kDns
                                                             : FetchError::kDnsFailure;
        t.result.error_message = t.dns_host + ": " + a.error;
        t.result.dns_outage =
            a.kind == Resolver::Kind::kFailed && !options.resolver->Healthy();
        dns_failed.push_back(easy);
        return true;
    }
    return true;
  }
  // The waiting transfers whose lookups ended go on; the failed end.
  void PollDns() {
    if (!dns_waiting.empty() && options.resolver->generation() != dns_generation) {
      dns_generation = options.resolver->generation();
      std::erase_if(dns_waiting, [&](CURL* easy) { return Resolve(easy, false); });
    }
    for (CURL* easy : std::exchange(dns_failed, {})) {
      auto it = transfers.find(easy);
      std::unique_ptr<Transfer> t = std::move(it->second);
      transfers.erase(it);
      curl_easy_cleanup(easy);
      t->done(std::move(t->result));
    }
  }

  const FetchOptions options;
  CURLM* multi = nullptr;
  std::vector<CURL*> dns_waiting, dns_failed;  // in `transfers`, not in `multi`
  uint64_t dns_generation = 0;
  // options.resolve, for CURLOPT_CONNECT_TO and CURLOPT_RESOLVE (RouteFor).
  std::unordered_map<std::string, curl_slist*> resolve_by_authority, resolve_both,
      connect_to_by_authority;
  curl_slist* resolve_any = nullptr;
  // options.resolve's first address of each "host:port" it names.
  std::unordered_map<std::string, std::string> address_by_authority;
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> transfers;
};

Fetcher::Fetcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Fetcher::~Fetcher() = default;

Result<std::unique_ptr<Fetcher>> Fetcher::Create(const FetchOptions& options) {
  CurlGlobal::Get();
  if (!options.spool_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.spool_dir, ec);
    if (ec)
      return Status::Error(Status::Code::kIoError,
                           "spool directory " + options.spool_dir + ": " + ec.message());
  }
  auto impl = std::make_unique<Impl>(options);
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) {
    return Status::Error(Status::Code::kIoError, "curl_multi_init failed");
  }
  curl_multi_setopt(impl->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    static_cast<long>(options.max_connections));
  curl_multi_setopt(impl->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(options.max_connections_per_host));
  // Keep as many idle connections as may be open, so each is reused.
  curl_multi_setopt(impl->multi, CURLMOPT_MAXCONNECTS,
                    static_cast<long>(options.max_connections));
  curl_multi_setopt(impl->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  return std::unique_ptr<Fetcher>(new Fetcher(std::move(impl)));
}

void Fetcher::Add(const std::string& url, Callback done) {
  Add(url, {}, std::move(done));
}

void Fetcher::Add(const std::string& url, const std::vector<std::string>& headers,
                  Callback done) {
  auto t = std::make_unique<Impl::Transfer>();
  t->result.url = url;
  t->done = std::move(done);
  t->max_body = impl_->options.max_body_bytes;
  t->result.body.SpoolPast(impl_->options.spool_body_bytes, impl_->options.spool_dir);
  CURL* e = curl_easy_init();
  t->easy = e;
  const FetchOptions& o = impl_->options;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_SHARE, CurlGlobal::Get().share());
  curl_easy_setopt(e, CURLOPT_USERAGENT, o.user_agent.c_str());
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  // Accept-Encoding: gzip, deflate, br, zstd; decoder.h undoes them.
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(o.connect_timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(o.low_speed_bytes));
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.low_speed_time_s));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, &Impl::OnDebug);
  curl_easy_setopt(e, CURLOPT_DEBUGDATA, t.get());
  curl_easy_setopt(e, CURLOPT_VERBOSE,
                   1L);  // needed for the debug callback (request head)
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  const Impl::Route route = impl_->RouteFor(url);
  if (route.connect_to != nullptr)
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, route.connect_to);
  if (route.resolve != nullptr) curl_easy_setopt(e, CURLOPT_RESOLVE, route.resolve);
  // The same trust for an https:// proxy's own certificate (libcurl keeps
  // separate settings for it: a proxy with a private CA failed before).
  if (!o.ca_file.empty()) {
    curl_easy_setopt(e, CURLOPT_CAINFO, o.ca_file.c_str());
    curl_easy_setopt(e, CURLOPT_PROXY_CAINFO, o.ca_file.c_str());
  }
  if (o.insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYHOST, 0L);
  }
  // Only the configured proxy: never one from the environment.
  curl_easy_setopt(e, CURLOPT_PROXY, o.proxy.c_str());
  if (o.proxy.empty()) curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  for (const std::string& h : headers)
    t->headers = curl_slist_append(t->headers, h.c_str());
  if (t->headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  t->dns_host = impl_->DnsHost(url, route);
  const bool lookup = !t->dns_host.empty();
  impl_->transfers.emplace(e, std::move(t));
  if (lookup) {
    impl_->Resolve(e, true);
  } else {
    curl_multi_add_handle(impl_->multi, e);
  }
}

size_t Fetcher::Run(std::chrono::milliseconds max_wait) {
  impl_->PollDns();
  int running = 0;
  curl_multi_perform(impl_->multi, &running);
  int messages = 0;
  while (CURLMsg* m = curl_multi_info_read(impl_->multi, &messages)) {
    if (m->msg == CURLMSG_DONE) impl_->Finish(m->easy_handle, m->data.result);
  }
  if (!impl_->transfers.empty()) {
    curl_multi_poll(impl_->multi, nullptr, 0, static_cast<int>(max_wait.count()),
                    nullptr);
    curl_multi_perform(impl_->multi, &running);
    while (CURLMsg* m = curl_multi_info_read(impl_->multi, &messages)) {
      if (m->msg == CURLMSG_DONE) impl_->Finish(m->easy_handle, m->data.result);
    }
  }
  return impl_->transfers.size();
}

size_t Fetcher::Running() const { return impl_->transfers.size(); }

std::optional<std::string> Fetcher::AddressFor(const std::string& url) {
  std::string host = Impl::Authority(url);
  host = host.substr(0, host.rfind(':'));
  if (!host.empty() && host[0] == '[') return host.substr(1, host.size() - 2);
  in_addr scratch{};
  if (inet_pton(AF_INET, host.c_str(), &scratch) == 1) return host;
  // A name fetch.resolve routes: its address (without a proxy, which
  // connects where it will).
  if (!impl_->address_by_authority.empty() && impl_->options.proxy.empty()) {
    auto it = impl_->address_by_authority.find(Impl::Authority(url));
    if (it != impl_->address_by_authority.end()) return it->second;
  }
  const std::string name = impl_->DnsHost(url, impl_->RouteFor(url));
  if (name.empty()) return std::string();
  Resolver::Answer a = impl_->options.resolver->Lookup(name, /*count=*/false);
  if (a.kind == Resolver::Kind::kPending) return std::nullopt;
  return a.address;
}

size_t Fetcher::Abandon(const std::function<bool(const std::string& url)>& pred) {
  std::vector<std::unique_ptr<Impl::Transfer>> gone;
  for (auto it = impl_->transfers.begin(); it != impl_->transfers.end();) {
    if (!pred(it->second->result.url)) {
      ++it;
      continue;
    }
    curl_multi_remove_handle(impl_->multi, it->first);
    std::erase(impl_->dns_waiting, it->first);
    std::erase(impl_->dns_failed, it->first);
    curl_easy_cleanup(it->first);
    gone.push_back(std::move(it->second));
    it = impl_->transfers.erase(it);
  }
  for (auto& t : gone) {
    FetchResult r;
    r.url = std::move(t->result.url);
    r.abandoned = true;
    t->done(std::move(r));
  }
  return gone.size();
}

}  // namespace crawler::engine
