// Real transports, real servers, 127.0.0.1 only: Debian's nginx serving TLS
// and HTTP/2 with a certificate from a CA the test makes (openssl), and
// Debian's tinyproxy as a forward proxy. Checks fetch.ca_file (the crawl
// fetches over HTTP/2 and the WARC holds what was spoken), a certificate the
// crawler cannot trust (a clear "tls" fetch error, no crash), fetch.insecure
// (fetches, and says so loudly), and fetch.proxy for http and https (the
// proxy's own log shows every request), socks5 and socks5h (Debian's
// microsocks) and an https:// proxy (Debian's stunnel in front of
// tinyproxy, its certificate trusted through fetch.ca_file).
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "crawl_output.h"
#include "loopback.h"
#include "nginx.h"
#include "run_command.h"
#include "testsite_process.h"

namespace crawler::engine {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::FreePort;
using testing::LogLine;
using testing::ReadFetchLog;
using testing::ReadText;
using testing::RunCommand;
using testing::Spawn;
using testing::TempDir;
using testing::TestSite;

using testing::kCrawler;

bool Listening(unsigned port) {
  int fd = testing::ConnectLoopback(port);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

// Waits up to 60 s for a server on `port`; fails showing the server's `log`.
void WaitListening(unsigned port, const std::string& log) {
  for (int i = 0; i < 6000 && !Listening(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  INFO(ReadText(log));
  REQUIRE(Listening(port));
}

// A CA, and a certificate it signed for 127.0.0.1; a second, self-signed one.
void MakeCertificates(const std::string& dir) {
  const std::string q = " 2>&1";
  CommandResult r = RunCommand(
      "cd " + dir +
      " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
      "-subj '/CN=crawler test CA'" +
      q +
      " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
      "-subj '/CN=127.0.0.1'" +
      q +
      " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf"
      " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out server.pem -days 2 -extfile ext.cnf" +
      q);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// Debian's nginx serving TLS and HTTP/2 with the certificate the CA signed
// (MakeCertificates) from DIR/www: an index page and a five-page ring, and a
// robots.txt.
testing::NginxSite TlsSite(const std::string& dir) {
  fs::create_directories(dir + "/www/p");
  std::ofstream(dir + "/www/index.html")
      << "<html><body><a href=\"/p/1.html\">1</a></body></html>\n";
  for (int i = 1; i <= 5; ++i) {
    std::ofstream(dir + "/www/p/" + std::to_string(i) + ".html")
        << "<html><body><a href=\"/p/" << (i % 5 + 1)
        << ".html\">next</a></body></html>\n";
  }
  std::ofstream(dir + "/www/robots.txt") << "User-agent: *\nDisallow: /private/\n";
  return {.root = dir + "/www",
          .listen_flags = "ssl http2",
          .server_extra = "    ssl_certificate " + dir +
                          "/server.pem;\n    ssl_certificate_key " + dir +
                          "/server.key;\n",
          .scheme = "https"};
}

// tinyproxy (Debian's) in the foreground on `port`, logging every request.
class Proxy {
 public:
  Proxy(const std::string& dir, unsigned port) : log_(dir + "/tinyproxy.log") {
    std::ofstream conf(dir + "/tinyproxy.conf");
    conf << "Port " << port << "\nListen 127.0.0.1\nTimeout 30\nLogFile \"" << log_
         << "\"\nLogLevel Info\nMaxClients 50\nAllow 127.0.0.1\n";
    conf.close();
    pid_ = Spawn("tinyproxy -d -c " + dir + "/tinyproxy.conf", dir + "/tinyproxy.out");
    WaitListening(port, dir + "/tinyproxy.out");
    url_ = "http://127.0.0.1:" + std::to_string(port);
  }
  ~Proxy() {
    ::kill(pid_, SIGTERM);
    testing::WaitExitFor(pid_, 10);
  }
  const std::string& url() const { return url_; }
  // The URLs of the GET requests the proxy logged.
  std::set<std::string> Gets() const {
    std::set<std::string> urls;
    for (const std::string& req : Requests())
      if (req.rfind("GET ", 0) == 0) urls.insert(req.substr(4, req.find(' ', 4) - 4));
    return urls;
  }
  // The request lines the proxy logged ("GET http://...", "CONNECT host:port").
  std::vector<std::string> Requests() const {
    std::vector<std::string> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find("Request (file descriptor");
      if (at == std::string::npos) continue;
      size_t colon = line.find("): ", at);
      if (colon != std::string::npos) out.push_back(line.substr(colon + 3));
    }
    return out;
  }

 private:
  std::string log_;
  std::string url_;
  pid_t pid_ = -1;
};

// A server the test runs in the foreground (microsocks, stunnel), up once
// `port` accepts, stopped at the end.
class Daemon {
 public:
  Daemon(const std::string& command, const std::string& out, unsigned port) : out_(out) {
    pid_ = Spawn(command, out);
    WaitListening(port, out);
  }
  ~Daemon() {
    ::kill(pid_, SIGTERM);
    testing::WaitExitFor(pid_, 10);
  }
  std::string Output() const { return ReadText(out_); }

 private:
  std::string out_;
  pid_t pid_ = -1;
};

// Lines of `text` that contain `what`.
size_t CountLines(const std::string& text, const std::string& what) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    n += line.find(what) != std::string::npos;
  return n;
}

CommandResult Crawl(const std::string& dir, const std::string& seed,
                    const std::string& out, const std::string& sets) {
  std::ofstream(dir + "/seeds.txt") << seed << "\n";
  return RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds.txt --out " + out +
                    " --set frontier.min_delay_s=0 --set fetch.retry_base_s=0.05 " +
                    sets);
}

// The URLs whose final attempt is in OUT's fetch log (fetched or failed).
std::set<std::string> FinalAttempts(const std::string& out) {
  std::set<std::string> urls;
  for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
    if (testing::Attempted(l) && l.final) urls.insert(l.url);
  return urls;
}

std::set<std::string> Fetched(const std::string& out) {
  std::set<std::string> urls;
  for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
    if (l.status == 200 && !l.robots_txt) urls.insert(l.url);
  return urls;
}

// The HTTP version of each response record's status line ("HTTP/2",
// "HTTP/1.1"), read from the WARC files (gzip members, zcat reads them all).
std::multiset<std::string> WarcProtocols(const std::string& out) {
  CommandResult r =
      RunCommand("zcat " + out + "/warc/*.warc.gz | grep -a -o '^HTTP/[0-9.]* [0-9]*'");
  std::multiset<std::string> protocols;
  size_t start = 0;
  while (start < r.output.size()) {
    size_t end = r.output.find('\n', start);
    if (end == std::string::npos) end = r.output.size();
    std::string line = r.output.substr(start, end - start);
    if (!line.empty()) protocols.insert(line.substr(0, line.find(' ')));
    start = end + 1;
  }
  return protocols;
}

// warcio (an independent reader) parses every response record's status line
// to the status the fetch log has for it.
void CheckWarcioStatuses(const std::string& out) {
  CommandResult r = RunCommand(
      "warcio index " + out + "/warc/*.warc.gz -f warc-type warc-target-uri http:status");
  REQUIRE(r.exit_code == 0);
  std::map<std::string, int64_t> logged;
  for (const LogLine& l : ReadFetchLog(out + "/fetch-log.jsonl"))
    if (l.status != 0) logged[l.url] = l.status;
  size_t responses = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    boost::json::object o = boost::json::parse(line).as_object();
    if (o.at("warc-type").as_string() != "response") continue;
    ++responses;
    std::string url = o.at("warc-target-uri").as_string().c_str();
    INFO(url);
    REQUIRE(o.contains("http:status"));
    CHECK(o.at("http:status").to_number<int64_t>() == logged[url]);
  }
  CHECK(responses == logged.size());
}

TEST_CASE(
    "TLS and HTTP/2 against nginx: fetch.ca_file trusts the test's CA, the WARC holds "
    "HTTP/2; an untrusted certificate is a 'tls' fetch error; fetch.insecure fetches "
    "and warns",
    "[engine][transport]") {
  std::string dir = TempDir("tls");
  MakeCertificates(dir);
  testing::Nginx nginx(dir, FreePort(), TlsSite(dir));
  const std::set<std::string> truth = {
      nginx.Origin() + "/",         nginx.Origin() + "/p/1.html",
      nginx.Origin() + "/p/2.html", nginx.Origin() + "/p/3.html",
      nginx.Origin() + "/p/4.html", nginx.Origin() + "/p/5.html"};

  SECTION("fetch.ca_file: every page, over HTTP/2") {
    CommandResult r = Crawl(dir, nginx.Origin() + "/", dir + "/out",
                            "--set fetch.ca_file=" + dir + "/ca.pem");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(Fetched(dir + "/out") == truth);
    std::multiset<std::string> protocols = WarcProtocols(dir + "/out");
    CHECK(protocols.size() == truth.size() + 1);  // and robots.txt
    CHECK(protocols.count("HTTP/2") == protocols.size());
    CheckWarcioStatuses(dir + "/out");
  }
  SECTION("no CA given: the system's do not know it, a clear error, no crash") {
    CommandResult r =
        Crawl(dir, nginx.Origin() + "/", dir + "/out", "--set fetch.max_retries=1");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<LogLine> log = ReadFetchLog(dir + "/out/fetch-log.jsonl");
    REQUIRE_FALSE(log.empty());
    bool tls = false;
    for (const LogLine& l : log) {
      CHECK(l.status == 0);  // nothing fetched from a server not trusted
      tls = tls || (l.robots_txt && l.error == "tls");
    }
    CHECK(tls);
    CHECK(ReadText(dir + "/out/crawler.log").find("certificate") != std::string::npos);
  }
  SECTION("fetch.insecure: fetched, and loud about it") {
    CommandResult r =
        Crawl(dir, nginx.Origin() + "/", dir + "/out", "--set fetch.insecure=true");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(Fetched(dir + "/out") == truth);
    CHECK(r.output.find("TLS certificates are NOT checked") != std::string::npos);
    CHECK(ReadText(dir + "/out/crawler.log").find("NOT checked") != std::string::npos);
  }
  SECTION("a wrong ca_file or proxy is a config error naming the key") {
    CommandResult r = Crawl(dir, nginx.Origin() + "/", dir + "/out",
                            "--set fetch.ca_file=" + dir + "/none.pem");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("fetch.ca_file") != std::string::npos);
    r = Crawl(dir, nginx.Origin() + "/", dir + "/out2", "--set fetch.proxy=ftp://x:1");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("fetch.proxy") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "fetch.proxy: http, https, socks5(h) and an https:// proxy, each proxy's log "
    "showing the requests",
    "[engine][transport]") {
  std::string dir = TempDir("proxy");
  MakeCertificates(dir);
  Proxy proxy(dir, FreePort());

  SECTION("http: the testsite, each page a GET through the proxy") {
    TestSite site("--pages 30 --hosts 1 --slow-ms 200", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds-site.txt");
    std::set<std::string> truth = site.Truth();
    CommandResult r =
        RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds-site.txt --out " + dir +
                   "/out --set frontier.min_delay_s=0 --set fetch.proxy=" + proxy.url());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(FinalAttempts(dir + "/out") == truth);
    std::set<std::string> proxied = proxy.Gets();
    for (const std::string& url : truth) {
      INFO(url);
      CHECK(proxied.count(url) == 1);
    }
  }
  SECTION("socks5 and socks5h: the testsite through microsocks, its log shows them") {
    TestSite site("--pages 20 --hosts 1", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds-site.txt");
    std::set<std::string> truth = site.Truth();
    unsigned port = FreePort();
    Daemon socks("microsocks -i 127.0.0.1 -p " + std::to_string(port),
                 dir + "/microsocks.out", port);
    const std::string target = "connected to 127.0.0.1:" + std::to_string(site.port());
    size_t before = 0;
    for (const char* scheme : {"socks5", "socks5h"}) {
      INFO(scheme);
      CommandResult r = RunCommand(
          kCrawler + " crawl --seeds " + dir + "/seeds-site.txt --out " + dir + "/out-" +
          scheme + " --set frontier.min_delay_s=0 --set fetch.proxy=" + scheme +
          "://127.0.0.1:" + std::to_string(port));
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      CHECK(FinalAttempts(dir + "/out-" + scheme) == truth);
      // Each crawl's connections to the site went through the proxy.
      size_t now = CountLines(socks.Output(), target);
      INFO(socks.Output());
      CHECK(now > before);
      before = now;
    }
  }
  SECTION(
      "an https:// proxy: TLS to the proxy (stunnel in front of tinyproxy), its "
      "certificate checked against fetch.ca_file") {
    TestSite site("--pages 20 --hosts 1", dir + "/requests.log");
    site.WriteSeeds(dir + "/seeds-site.txt");
    std::set<std::string> truth = site.Truth();
    unsigned port = FreePort();
    std::ofstream(dir + "/stunnel.conf")
        << "foreground = yes\npid =\n[proxy]\naccept = 127.0.0.1:" << port
        << "\nconnect = " << proxy.url().substr(7) << "\ncert = " << dir
        << "/server.pem\nkey = " << dir << "/server.key\n";
    Daemon stunnel("stunnel " + dir + "/stunnel.conf", dir + "/stunnel.out", port);
    const std::string https_proxy = "https://127.0.0.1:" + std::to_string(port);
    CommandResult r =
        RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds-site.txt --out " + dir +
                   "/out --set frontier.min_delay_s=0 --set fetch.ca_file=" + dir +
                   "/ca.pem --set fetch.proxy=" + https_proxy);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(FinalAttempts(dir + "/out") == truth);
    std::set<std::string> proxied = proxy.Gets();
    for (const std::string& url : truth) {
      INFO(url);
      CHECK(proxied.count(url) == 1);
    }
    // Without the CA the proxy's certificate is not trusted: a clear "tls"
    // error (robots.txt's fetch; its host's pages then wait and end
    // "robots"), nothing fetched, no crash.
    r = RunCommand(kCrawler + " crawl --seeds " + dir + "/seeds-site.txt --out " + dir +
                   "/out2 --set frontier.min_delay_s=0 --set fetch.max_retries=1 "
                   "--set fetch.retry_base_s=0.05 --set fetch.proxy=" +
                   https_proxy);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<LogLine> log = ReadFetchLog(dir + "/out2/fetch-log.jsonl");
    REQUIRE_FALSE(log.empty());
    bool tls = false;
    for (const LogLine& l : log) {
      CHECK(l.status == 0);
      tls = tls || (l.robots_txt && l.error == "tls");
    }
    CHECK(tls);
  }
  SECTION("https: a CONNECT tunnel to nginx, still HTTP/2 inside") {
    testing::Nginx nginx(dir, FreePort(), TlsSite(dir));
    CommandResult r =
        Crawl(dir, nginx.Origin() + "/", dir + "/out",
              "--set fetch.ca_file=" + dir + "/ca.pem --set fetch.proxy=" + proxy.url());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(Fetched(dir + "/out").size() == 6);
    bool tunnel = false;
    for (const std::string& req : proxy.Requests())
      tunnel = tunnel || req.rfind("CONNECT 127.0.0.1:", 0) == 0;
    CHECK(tunnel);
    std::multiset<std::string> protocols = WarcProtocols(dir + "/out");
    CHECK(protocols.size() == 7);
    CHECK(protocols.count("HTTP/2") == protocols.size());
    CheckWarcioStatuses(dir + "/out");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crawler::engine
