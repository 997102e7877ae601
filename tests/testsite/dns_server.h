// The synthetic internet's DNS (web.h): an authoritative server for .test
// on 127.0.0.1:PORT, over UDP and TCP (RFC 1035 4.2; TCP messages carry a
// two-byte length). It answers one question per message, class IN: A
// records and CNAME chains from Web::Resolve, NXDOMAIN and "no data" with
// the zone's SOA (negative caching, RFC 2308), SERVFAIL, or nothing at all
// (the silent hosts); REFUSED outside .test, FORMERR for what it cannot
// parse, NOTIMP for opcodes other than QUERY. No EDNS (RFC 6891 lets a
// server without it answer without an OPT record) and no name compression:
// the answers are far under 512 bytes.
//
// The messages are encoded here by hand: c-ares (Debian 12's 1.18) parses
// answers but cannot build them, and a DNS server library (ldns, or
// Boost.Asio's resolver) would bring more code than the ~100 lines below.
// With delay_ms > 0 every answer is sent that long after its query (UDP
// through a queue served by a thread of its own, TCP in the connection's
// thread), as a slow resolver would.
#ifndef TESTS_TESTSITE_DNS_SERVER_H_
#define TESTS_TESTSITE_DNS_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server_parts.h"
#include "web.h"

namespace crawler::testsite {

// DNS wire format: the parts a one-question authoritative server needs.
class DnsMessage {
 public:
  // The answer to `query` (a whole message), or none: no reply (a silent
  // host, or a message too short to carry an ID).
  // `servfail`: SERVFAIL to every well-formed query (a fault).
  static std::optional<std::string> Answer(const Web& web, std::string_view query,
                                           MoveClock* move, bool servfail = false) {
    if (query.size() < 12 || (Byte(query, 2) & 0x80) != 0) return std::nullopt;
    const uint8_t opcode = (Byte(query, 2) >> 3) & 15;
    std::string name;
    size_t end = 12;
    if (opcode != 0) return Header(query, 4, 0, false, 0, "");
    if (Word(query, 4) != 1 || !ParseName(query, &end, &name) || end + 4 > query.size())
      return Header(query, 1, 0, false, 0, "");
    const uint16_t qtype = Word(query, end), qclass = Word(query, end + 2);
    const std::string question(query.substr(12, end + 4 - 12));
    if (qclass != 1) return Header(query, 5, 0, false, 1, question);
    if (servfail) return Header(query, 2, 0, false, 1, question);
    if (web.Moves() && web.Lookup(name).kind == HostKind::kNormal &&
        web.Lookup(name).index == web.MovedHost())
      move->OnQuestion();
    DnsAnswer a = web.Resolve(name, qtype, move->Elapsed());
    if (a.silent) return std::nullopt;
    std::string out = Header(query, a.rcode, static_cast<uint16_t>(a.records.size()),
                             a.negative_soa, 1, question);
    for (const DnsRecord& r : a.records) {
      std::string rdata;
      if (r.type == 1) {
        PutWord(&rdata, static_cast<uint16_t>(r.address >> 16));
        PutWord(&rdata, static_cast<uint16_t>(r.address & 0xffff));
      } else if (r.type == 28) {
        rdata.assign(15, '\0');
        rdata += '\1';  // ::1
      } else {
        rdata = EncodeName(r.target);
      }
      Record(&out, r.name, r.type, r.ttl, rdata);
    }
    if (a.negative_soa) {
      std::string soa = EncodeName("ns.test") + EncodeName("hostmaster.test");
      for (uint32_t v : {1u, 3600u, 600u, 86400u, Web::kNegativeTtl}) {
        PutWord(&soa, static_cast<uint16_t>(v >> 16));
        PutWord(&soa, static_cast<uint16_t>(v & 0xffff));
      }
      Record(&out, "test", 6, Web::kNegativeTtl, soa);
    }
    return out;
  }

  static std::string EncodeName(std::string_view name) {
    std::string out;
    while (!name.empty()) {
      size_t dot = name.find('.');
      std::string_view label = name.substr(0, dot);
      out.push_back(static_cast<char>(label.size()));
      out.append(label);
      name = dot == std::string_view::npos ? "" : name.substr(dot + 1);
    }
    out.push_back('\0');
    return out;
  }

  // A query for (name, qtype), ID `id`, recursion desired: for the tests.
  static std::string Query(uint16_t id, std::string_view name, uint16_t qtype) {
    std::string q;
    PutWord(&q, id);
    PutWord(&q, 0x0100);
    for (uint16_t w : {uint16_t{1}, uint16_t{0}, uint16_t{0}, uint16_t{0}})
      PutWord(&q, w);
    q += EncodeName(name);
    PutWord(&q, qtype);
    PutWord(&q, 1);
    return q;
  }

  static uint8_t Byte(std::string_view m, size_t at) {
    return static_cast<uint8_t>(m[at]);
  }
  static uint16_t Word(std::string_view m, size_t at) {
    return static_cast<uint16_t>(Byte(m, at) << 8 | Byte(m, at + 1));
  }
  static uint32_t Long(std::string_view m, size_t at) {
    return uint32_t{Word(m, at)} << 16 | Word(m, at + 2);
  }
  // An uncompressed name at *at, lower-cased and dotted ("" for the root).
  static bool ParseName(std::string_view m, size_t* at, std::string* name) {
    name->clear();
    for (size_t i = *at; i < m.size();) {
      const uint8_t len = Byte(m, i);
      if (len == 0) {
        *at = i + 1;
        return name->size() <= 253;
      }
      if (len > 63 || i + 1 + len > m.size()) return false;  // compression, or cut
      if (!name->empty()) name->push_back('.');
      for (size_t k = 0; k < len; ++k) {
        char c = m[i + 1 + k];
        name->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
      }
      i += 1 + len;
    }
    return false;
  }

 private:
  static void PutWord(std::string* out, uint16_t w) {
    out->push_back(static_cast<char>(w >> 8));
    out->push_back(static_cast<char>(w & 0xff));
  }
  // ID from the query; QR, AA, RD as asked, RA; the question echoed.
  static std::string Header(std::string_view query, uint8_t rcode, uint16_t answers,
                            bool authority, uint16_t questions,
                            const std::string& question) {
    std::string out(query.substr(0, 2));
    out.push_back(static_cast<char>(0x84 | (Byte(query, 2) & 0x01)));
    out.push_back(static_cast<char>(0x80 | rcode));
    for (uint16_t w :
         {questions, answers, static_cast<uint16_t>(authority ? 1 : 0), uint16_t{0}})
      PutWord(&out, w);
    return out + question;
  }
  static void Record(std::string* out, std::string_view name, uint16_t type, uint32_t ttl,
                     const std::string& rdata) {
    *out += EncodeName(name);
    PutWord(out, type);
    PutWord(out, 1);
    PutWord(out, static_cast<uint16_t>(ttl >> 16));
    PutWord(out, static_cast<uint16_t>(ttl & 0xffff));
    PutWord(out, static_cast<uint16_t>(rdata.size()));
    *out += rdata;
  }
};

// The server: UDP and TCP sockets on one port of 127.0.0.1.
class DnsServer {
 public:
  DnsServer(const Web& web, MoveClock& move, std::chrono::steady_clock::time_point start,
            uint32_t delay_ms, const std::atomic<bool>& stop)
      : web_(web), move_(move), start_(start), delay_ms_(delay_ms), stop_(stop) {}
  ~DnsServer() {
    for (int fd : {udp_, tcp_})
      if (fd >= 0) ::close(fd);
  }
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

  // Binds `*port` (0: one the kernel picks, free for both protocols).
  bool Listen(uint16_t* port) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      udp_ = BindLoopback(SOCK_DGRAM, *port);
      uint16_t got = udp_ >= 0 ? LocalPort(udp_) : 0;
      tcp_ = udp_ >= 0 ? BindLoopback(SOCK_STREAM, got) : -1;
      if (tcp_ >= 0 && ::listen(tcp_, 128) == 0) {
        *port = got;
        return true;
      }
      for (int* fd : {&udp_, &tcp_})
        if (*fd >= 0) ::close(*fd), *fd = -1;
      if (*port != 0) return false;
    }
    return false;
  }

  // Serves until the stop flag is set.
  void Run() {
    std::thread sender([this] { SendDelayed(); });
    std::thread tcp([this] { AcceptTcp(); });
    char buf[1500];
    while (!stop_) {
      pollfd p{udp_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      ssize_t n =
          ::recvfrom(udp_, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      const bool outage = InOutage();
      if (outage && !web_.options().dns_outage_servfail) continue;
      std::optional<std::string> answer =
          DnsMessage::Answer(web_, std::string_view(buf, n), &move_, outage);
      if (!answer) continue;
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace(
          std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms_),
          Pending{from, std::move(*answer)});
      cv_.notify_one();
    }
    cv_.notify_all();
    sender.join();
    tcp.join();
  }

 private:
  struct Pending {
    sockaddr_in to;
    std::string bytes;
  };

  // WebOptions::dns_outage_s: whether a query received now falls in the
  // outage (dropped, or SERVFAIL). The window opens dns_outage_at_s after
  // the first query, or with dns_outage_after queries: the next one.
  bool InOutage() {
    const WebOptions& o = web_.options();
    if (o.dns_outage_s <= 0) return false;
    const double now = Elapsed();
    const uint64_t n = queries_.fetch_add(1);
    double begin = -1;
    if (o.dns_outage_after == 0 || n == o.dns_outage_after)
      begin_s_.compare_exchange_strong(
          begin, o.dns_outage_after == 0 ? now + o.dns_outage_at_s : now);
    begin = begin_s_.load();
    return begin >= 0 && now >= begin && now < begin + o.dns_outage_s;
  }
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  static uint16_t LocalPort(int fd) {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }

  void SendDelayed() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (queue_.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
      auto first = queue_.begin();
      if (first->first > std::chrono::steady_clock::now()) {
        cv_.wait_until(lock, first->first);
        continue;
      }
      Pending p = std::move(first->second);
      queue_.erase(first);
      lock.unlock();
      ::sendto(udp_, p.bytes.data(), p.bytes.size(), 0,
               reinterpret_cast<sockaddr*>(&p.to), sizeof(p.to));
      lock.lock();
    }
  }

  void AcceptTcp() {
    std::vector<std::thread> conns;
    while (!stop_) {
      pollfd p{tcp_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int fd = ::accept(tcp_, nullptr, nullptr);
      if (fd >= 0) conns.emplace_back([this, fd] { ServeTcp(fd); });
    }
    for (auto& t : conns) t.join();
  }

  // Reads exactly n bytes, waking every 100 ms to see the stop flag.
  bool ReadFull(int fd, char* buf, size_t n) {
    for (size_t got = 0; got < n;) {
      pollfd p{fd, POLLIN, 0};
      if (stop_) return false;
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t r = ::read(fd, buf + got, n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  void ServeTcp(int fd) {
    char len[2];
    std::string query;
    while (ReadFull(fd, len, 2)) {
      query.resize(static_cast<uint8_t>(len[0]) << 8 | static_cast<uint8_t>(len[1]));
      if (!ReadFull(fd, query.data(), query.size())) break;
      const bool outage = InOutage();
      if (outage && !web_.options().dns_outage_servfail) continue;
      std::optional<std::string> answer = DnsMessage::Answer(web_, query, &move_, outage);
      if (!answer) continue;  // silent: the client times out
      if (delay_ms_ > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      std::string framed{static_cast<char>(answer->size() >> 8),
                         static_cast<char>(answer->size() & 0xff)};
      framed += *answer;
      if (::send(fd, framed.data(), framed.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(framed.size()))
        break;
    }
    ::close(fd);
  }

  const Web& web_;
  MoveClock& move_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> queries_{0};  // InOutage's: queries received
  std::atomic<double> begin_s_{-1};   // ... and the outage's start
  const uint32_t delay_ms_;
  const std::atomic<bool>& stop_;
  int udp_ = -1, tcp_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, Pending> queue_;
};

}  // namespace crawler::testsite

#endif  // TESTS_TESTSITE_DNS_SERVER_H_
