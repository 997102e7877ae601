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

std::string Trim(std::string_view s) {
  return std::string(crawler::ascii::Trim(s, " \t\r\n"));
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

}  // namespace

// Long: one xmlReader loop whose element state is local to it.
// NOLINTNEXTLINE(readability-function-size)
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

  bool in_entry = false, entry_bad = false;
  std::string field;  // "loc" or "lastmod" while inside one
  std::string text;
  SitemapEntry entry;
  int status = 0;
  while ((status = xmlTextReaderRead(r)) == 1) {
    int type = xmlTextReaderNodeType(r);
    int depth = xmlTextReaderDepth(r);
    if (type == kElement && depth == 0) {
      std::string root = Name(r);
      if (root == "urlset" || root == "sitemapindex") {
        out.ok = true;
        out.index = root == "sitemapindex";
      } else {
        out.warnings.push_back("root element <" + root +
                               "> is neither <urlset> nor <sitemapindex>");
        return out;
      }
      continue;
    }
    if (type == kElement && depth == 1) {
      std::string name = Name(r);
      if (name == (out.index ? "sitemap" : "url")) {
        in_entry = !xmlTextReaderIsEmptyElement(r);
        entry_bad = false;
        entry = SitemapEntry{};
      } else if (name == "url" || name == "sitemap") {
        out.warnings.push_back(
            "line " + std::to_string(xmlTextReaderGetParserLineNumber(r)) + ": <" + name +
            "> in a <" + (out.index ? "sitemapindex" : "urlset") + ">: ignored");
      }
      continue;
    }
    if (!in_entry) continue;
    if (type == kElement && depth == 2) {
      std::string name = Name(r);
      field = (name == "loc" || name == "lastmod") ? name : "";
      text.clear();
      if (xmlTextReaderIsEmptyElement(r)) field.clear();
      continue;
    }
    if (!field.empty() && (type == kText || type == kCdata)) {
      const xmlChar* v = xmlTextReaderConstValue(r);
      if (v != nullptr) text += reinterpret_cast<const char*>(v);
      continue;
    }
    if (!field.empty() && type == kEntityRef) {
      // A user-defined entity: never substituted (XXE, billion laughs).
      out.warnings.push_back("line " +
                             std::to_string(xmlTextReaderGetParserLineNumber(r)) +
                             ": an entity (&" + Name(r) + ";) in <" + field +
                             ">: not expanded, the entry is skipped");
      entry_bad = true;
      continue;
    }
    if (type == kEndElement && depth == 2 && !field.empty()) {
      (field == "loc" ? entry.loc : entry.lastmod) = Trim(text);
      field.clear();
      continue;
    }
    if (type == kEndElement && depth == 1) {
      in_entry = false;
      if (entry_bad) continue;
      if (entry.loc.empty()) {
        out.warnings.push_back("line " +
                               std::to_string(xmlTextReaderGetParserLineNumber(r)) +
                               ": an entry without <loc>: ignored");
        continue;
      }
      if (out.entries.size() == kMaxSitemapUrls) {
        out.truncated = true;
        out.warnings.push_back("over 50,000 entries: the rest is ignored");
        return out;
      }
      out.entries.push_back(std::move(entry));
      entry = SitemapEntry{};
    }
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
