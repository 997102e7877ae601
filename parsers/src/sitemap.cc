// Sitemaps with libxml2's xmlReader; see parsers/sitemap.h.
#include "parsers/sitemap.h"

#include <libxml/parser.h>
#include <libxml/xmlreader.h>
#include <zlib.h>

#include <cstring>
#include <memory>

#include "base/ascii.h"

namespace crawler::parsers {
namespace {

// Node types of xmlTextReaderNodeType (libxml/xmlreader.h, xmlReaderTypes).
constexpr int kElement = XML_READER_TYPE_ELEMENT;
constexpr int kEndElement = XML_READER_TYPE_END_ELEMENT;
constexpr int kText = XML_READER_TYPE_TEXT;
constexpr int kCdata = XML_READER_TYPE_CDATA;
constexpr int kEntityRef = XML_READER_TYPE_ENTITY_REFERENCE;

// libxml2 must be initialized once before threads use it.
void InitOnce() {
  static const bool done = [] {
    xmlInitParser();
    return true;
  }();
  (void)done;
}

std::string Name(xmlTextReaderPtr r) {
  const xmlChar* n = xmlTextReaderConstLocalName(r);
  return n == nullptr ? std::string() : reinterpret_cast<const char*>(n);
}

// The first error libxml2 reports, with its line.
struct Errors {
  std::string first;
};

void OnError(void* arg, const char* msg, xmlParserSeverities severity,
             xmlTextReaderLocatorPtr locator) {
  auto* e = static_cast<Errors*>(arg);
  if (!e->first.empty() || severity == XML_PARSER_SEVERITY_VALIDITY_WARNING ||
      severity == XML_PARSER_SEVERITY_WARNING)
    return;
  std::string m = msg == nullptr ? "malformed XML" : msg;
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  int line = xmlTextReaderLocatorLineNumber(locator);
  e->first = (line > 0 ? "line " + std::to_string(line) + ": " : std::string()) + m;
}

// One pass over a sitemap's nodes (ParseSitemap): the <url> or <sitemap>
// entry being read, its <loc> and <lastmod>.
class SitemapReader {
 public:
  explicit SitemapReader(Sitemap* out) : out_(*out) {}

  // One node; false: stop reading (a wrong root, or 50,000 entries).
  bool Node(xmlTextReaderPtr r) {
    const int type = xmlTextReaderNodeType(r);
    const int depth = xmlTextReaderDepth(r);
    if (type == kElement && depth == 0) return Root(Name(r));
    if (type == kElement && depth == 1) {
      EntryStart(r);
      return true;
    }
    if (!in_entry_) return true;
    if (type == kEndElement && depth == 1) return EntryEnd(r);
    InEntry(r, type, depth);
    return true;
  }

 private:
  std::string Line(xmlTextReaderPtr r) const {
    return "line " + std::to_string(xmlTextReaderGetParserLineNumber(r)) + ": ";
  }

  bool Root(const std::string& root) {
    if (root != "urlset" && root != "sitemapindex") {
      out_.warnings.push_back("root element <" + root +
                              "> is neither <urlset> nor <sitemapindex>");
      return false;
    }
    out_.ok = true;
    out_.index = root == "sitemapindex";
    return true;
  }

  void EntryStart(xmlTextReaderPtr r) {
    std::string name = Name(r);
    if (name == (out_.index ? "sitemap" : "url")) {
      in_entry_ = !xmlTextReaderIsEmptyElement(r);
      entry_bad_ = false;
      entry_ = SitemapEntry{};
    } else if (name == "url" || name == "sitemap") {
      out_.warnings.push_back(Line(r) + "<" + name + "> in a <" +
                              (out_.index ? "sitemapindex" : "urlset") + ">: ignored");
    }
  }

  // A node inside an entry: its fields' starts, text and ends.
  void InEntry(xmlTextReaderPtr r, int type, int depth) {
    if (type == kElement && depth == 2) {
      std::string name = Name(r);
      field_ = (name == "loc" || name == "lastmod") ? name : "";
      text_.clear();
      if (xmlTextReaderIsEmptyElement(r)) field_.clear();
    } else if (!field_.empty() && (type == kText || type == kCdata)) {
      const xmlChar* v = xmlTextReaderConstValue(r);
      if (v != nullptr) text_ += reinterpret_cast<const char*>(v);
    } else if (!field_.empty() && type == kEntityRef) {
      // A user-defined entity: never substituted (XXE, billion laughs).
      out_.warnings.push_back(Line(r) + "an entity (&" + Name(r) + ";) in <" + field_ +
                              ">: not expanded, the entry is skipped");
      entry_bad_ = true;
    } else if (type == kEndElement && depth == 2 && !field_.empty()) {
      (field_ == "loc" ? entry_.loc : entry_.lastmod) =
          std::string(crawler::ascii::Trim(text_, " \t\r\n"));
      field_.clear();
    }
  }

  // The entry's end: kept unless bad or without <loc>; false past 50,000.
  bool EntryEnd(xmlTextReaderPtr r) {
    in_entry_ = false;
    if (entry_bad_) return true;
    if (entry_.loc.empty()) {
      out_.warnings.push_back(Line(r) + "an entry without <loc>: ignored");
      return true;
    }
    if (out_.entries.size() == kMaxSitemapUrls) {
      out_.truncated = true;
      out_.warnings.push_back("over 50,000 entries: the rest is ignored");
      return false;
    }
    out_.entries.push_back(std::move(entry_));
    entry_ = SitemapEntry{};
    return true;
  }

  Sitemap& out_;
  bool in_entry_ = false, entry_bad_ = false;
  std::string field_;  // "loc" or "lastmod" while inside one
  std::string text_;
  SitemapEntry entry_;
};

}  // namespace

Sitemap ParseSitemap(std::string_view body) {
  InitOnce();
  Sitemap out;
  if (body.size() > kMaxSitemapBytes) {
    body = body.substr(0, kMaxSitemapBytes);
    out.truncated = true;
    out.warnings.push_back("over 50 MB: the rest is ignored");
  }
  // No network, no DTD loading, no entity substitution (the defaults, with
  // XML_PARSE_NOENT and XML_PARSE_DTDLOAD left out on purpose), no
  // XML_PARSE_HUGE (libxml2's own size limits stay on).
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                      XML_PARSE_NOCDATA | XML_PARSE_NOBLANKS;
  std::unique_ptr<xmlTextReader, decltype(&xmlFreeTextReader)> reader(
      xmlReaderForMemory(body.data(), static_cast<int>(body.size()), nullptr, nullptr,
                         options),
      &xmlFreeTextReader);
  if (!reader) {
    out.warnings.push_back("not XML");
    return out;
  }
  xmlTextReaderPtr r = reader.get();
  Errors errors;
  xmlTextReaderSetErrorHandler(r, &OnError, &errors);

  SitemapReader reading(&out);
  int status = 0;
  while ((status = xmlTextReaderRead(r)) == 1) {
    if (!reading.Node(r)) return out;
  }
  if (status < 0) {
    out.warnings.push_back(
        (errors.first.empty() ? std::string("malformed XML") : errors.first) +
        " (the entries before it are kept)");
  }
  if (!out.ok && status >= 0) out.warnings.push_back("no root element");
  return out;
}

bool IsGzip(std::string_view body) {
  return body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
         static_cast<unsigned char>(body[1]) == 0x8b;
}

std::string GunzipSitemap(std::string_view body, std::string* error, bool* truncated) {
  *truncated = false;
  error->clear();
  std::string out;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    *error = "zlib: inflateInit2 failed";
    return out;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    size_t got = sizeof(buf) - z.avail_out;
    if (out.size() + got > kMaxSitemapBytes) {
      out.append(buf, kMaxSitemapBytes - out.size());
      *truncated = true;
      break;
    }
    out.append(buf, got);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      *error = "gzip: the data ends before the stream does";
      break;
    }
  }
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
    *error = std::string("gzip: ") + (z.msg != nullptr ? z.msg : "not valid gzip data");
  }
  inflateEnd(&z);
  return out;
}

}  // namespace crawler::parsers
