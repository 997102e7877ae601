// What a page's markup says of its scripts (parsers/links.h ScriptSignals).
#include "script_signals.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "ascii.h"

namespace crawler::parsers {
// Not anonymous: the parsers are a unity build, and links.cc has its own
// Attr.
namespace signals {

const char* Attr(const GumboElement& e, const char* name) {
  const GumboAttribute* a = gumbo_get_attribute(&e.attributes, name);
  return a != nullptr ? a->value : nullptr;
}

// Text in these is no reader's: a script's source, a stylesheet, what shows
// only without scripts.
bool Unseen(GumboTag tag) {
  return tag == GUMBO_TAG_SCRIPT || tag == GUMBO_TAG_STYLE || tag == GUMBO_TAG_NOSCRIPT ||
         tag == GUMBO_TAG_TEMPLATE || tag == GUMBO_TAG_TITLE;
}

// A <script> that runs: no type, or a JavaScript one, or a module (not
// application/json, application/ld+json, text/template, ...).
bool Runs(const GumboElement& e) {
  const char* type = Attr(e, "type");
  if (type == nullptr) return true;
  const std::string t = ascii::LowerAscii(std::string_view(type));
  return t.empty() || t == "module" || t.find("javascript") != std::string::npos ||
         t.find("ecmascript") != std::string::npos;
}

// The ids single-page frameworks mount their application on (React's
// create-react-app and Vite templates, Vue, Next.js, Nuxt, Gatsby, Angular
// CLI's custom element aside).
bool AppRootId(std::string_view id) {
  static constexpr std::array<std::string_view, 7> kIds = {
      "root", "app", "__next", "__nuxt", "___gatsby", "app-root", "main-app"};
  for (std::string_view k : kIds)
    if (id == k) return true;
  return false;
}

// No element and no text inside: nothing until a script fills it.
bool Empty(const GumboElement& e) {
  for (unsigned i = 0; i < e.children.length; ++i) {
    const auto* c = static_cast<const GumboNode*>(e.children.data[i]);
    if (c->type != GUMBO_NODE_WHITESPACE && c->type != GUMBO_NODE_COMMENT) return false;
  }
  return true;
}

uint64_t NonSpace(std::string_view text) {
  uint64_t n = 0;
  for (char c : text) n += c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f';
  return n;
}

// A <noscript>'s text (its children: gumbo parses them as markup or text)
// naming JavaScript: "You need to enable JavaScript to run this app."
bool AsksForScripts(const GumboElement& e) {
  for (unsigned i = 0; i < e.children.length; ++i) {
    const auto* c = static_cast<const GumboNode*>(e.children.data[i]);
    if (c->type == GUMBO_NODE_TEXT &&
        ascii::LowerAscii(std::string_view(c->v.text.text)).find("javascript") !=
            std::string::npos)
      return true;
    if (c->type == GUMBO_NODE_ELEMENT && AsksForScripts(c->v.element)) return true;
  }
  return false;
}

}  // namespace signals

void NoteScriptSignals(const GumboNode& node, ScriptSignals& s) {
  using signals::Attr;
  if (node.type == GUMBO_NODE_TEXT || node.type == GUMBO_NODE_CDATA) {
    const GumboNode* parent = node.parent;
    if (parent != nullptr && parent->type == GUMBO_NODE_ELEMENT &&
        signals::Unseen(parent->v.element.tag))
      return;
    s.text_chars += signals::NonSpace(node.v.text.text);
    return;
  }
  if (node.type != GUMBO_NODE_ELEMENT) return;
  const GumboElement& e = node.v.element;
  switch (e.tag) {
    case GUMBO_TAG_SCRIPT:
      s.scripts += signals::Runs(e);
      break;
    case GUMBO_TAG_NOSCRIPT:
      s.noscript_js = s.noscript_js || signals::AsksForScripts(e);
      break;
    case GUMBO_TAG_IMG:
    case GUMBO_TAG_SOURCE:
    case GUMBO_TAG_IFRAME:
    case GUMBO_TAG_VIDEO:
      s.lazy_media += Attr(e, "data-src") != nullptr ||
                      Attr(e, "data-srcset") != nullptr ||
                      Attr(e, "data-lazy-src") != nullptr;
      break;
    default:
      break;
  }
  if (const char* id = Attr(e, "id");
      id != nullptr && signals::AppRootId(id) && signals::Empty(e))
    s.app_root = true;
}

}  // namespace crawler::parsers
