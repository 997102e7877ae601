// One accepted HTTP/1.1 connection of a test server, read and written with
// Boost.Beast (requests are parsed by Beast, not by hand). The servers keep
// their own accept loops and one thread per connection; this wraps the
// connected descriptor. The descriptor stays the caller's: it is released,
// not closed, when the connection object goes (the servers shut sockets
// down from another thread to stop).
#ifndef TESTS_TESTSITE_HTTP_CONNECTION_H_
#define TESTS_TESTSITE_HTTP_CONNECTION_H_

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace crawler::testing {

namespace http = boost::beast::http;

struct HttpRequest {
  std::string target;        // as sent ("/a/b?c")
  std::string host;          // the Host header
  bool accept_gzip = false;  // Accept-Encoding names gzip
  bool keep_alive = true;
  std::string if_none_match, if_modified_since;  // as sent ("": none)
};

class HttpConnection {
 public:
  explicit HttpConnection(int fd) : socket_(io_) {
    boost::system::error_code ec;
    socket_.assign(boost::asio::ip::tcp::v4(), fd, ec);
    ok_ = !ec;
  }
  ~HttpConnection() {
    boost::system::error_code ec;
    if (ok_) (void)socket_.release(ec);
  }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // The next request; false at the end of the connection or on a request
  // Beast rejects (a header over 64 KiB included).
  bool Read(HttpRequest* out) {
    if (!ok_) return false;
    http::request_parser<http::empty_body> parser;
    parser.header_limit(64 * 1024);
    boost::system::error_code ec;
    http::read(socket_, buffer_, parser, ec);
    if (ec) return false;
    const auto& req = parser.get();
    out->target = std::string(req.target());
    out->host = std::string(req[http::field::host]);
    out->accept_gzip = std::string_view(req[http::field::accept_encoding]).find("gzip") !=
                       std::string_view::npos;
    out->keep_alive = req.keep_alive();
    out->if_none_match = std::string(req[http::field::if_none_match]);
    out->if_modified_since = std::string(req[http::field::if_modified_since]);
    reply_us_ = 0;
    return true;
  }

  // CLOCK_MONOTONIC in microseconds (std::chrono::steady_clock on Linux).
  static uint64_t NowUs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  // When the answer to the last request read began to be written (0: not
  // yet). A client cannot have seen any of it before then, whereas the time
  // after the write returns can lag its arrival by a scheduling delay.
  uint64_t reply_us() const { return reply_us_; }

  bool Write(http::response<http::string_body>& res) {
    res.prepare_payload();
    // A 304 has no body, and a Content-Length would be the 200's (RFC 9110
    // 8.6): none.
    if (res.result() == http::status::not_modified)
      res.erase(http::field::content_length);
    MarkReply();
    boost::system::error_code ec;
    http::write(socket_, res, ec);
    return !ec;
  }

  // A head announcing `length` body bytes; the body follows by WriteRaw.
  bool WriteHead(http::response<http::empty_body>& res, uint64_t length) {
    res.content_length(length);
    http::response_serializer<http::empty_body> sr{res};
    MarkReply();
    boost::system::error_code ec;
    http::write_header(socket_, sr, ec);
    return !ec;
  }

  bool WriteRaw(std::string_view bytes) {
    MarkReply();
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }

 private:
  void MarkReply() {
    if (reply_us_ == 0) reply_us_ = NowUs();
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  bool ok_ = false;
  uint64_t reply_us_ = 0;
};

}  // namespace crawler::testing

#endif  // TESTS_TESTSITE_HTTP_CONNECTION_H_
