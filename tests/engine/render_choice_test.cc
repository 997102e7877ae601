// [browser] render = "auto" (engine/render_choice.h): the static parse's
// signals, measured on the JavaScript test site, and what rendering a
// host's pages teaches.
#include "engine/render_choice.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "js_site.h"
#include "parsers/links.h"

namespace crawler::engine {
namespace {

TEST_CASE(
    "Render auto: the static signals pick the six pages of crawler-testsite --js that "
    "need a browser, and none of its static pages",
    "[engine][browser]") {
  const testsite::JsSite site;
  std::set<std::string> picked, html;
  for (const std::string& path : site.Truth(true)) {
    const testsite::JsPage page = site.Get(path);
    REQUIRE(page.status == 200);
    if (page.content_type != "text/html") continue;
    html.insert(path);
    parsers::ExtractResult r =
        parsers::ExtractLinks(page.body, "http://127.0.0.1:1" + path, "utf-8");
    if (SignalsWantBrowser(r.signals)) picked.insert(path);
  }
  CHECK(html.size() == 38);
  CHECK(picked == std::set<std::string>{"/app/", "/scroll/", "/lazy/", "/loader/",
                                        "/poll/", "/jump/"});
}

TEST_CASE("Render auto: each signal alone, with a script, asks for a browser",
          "[engine][browser]") {
  const std::string prose(400, 'w');
  auto wants = [](const std::string& html) {
    return SignalsWantBrowser(
        parsers::ExtractLinks(html, "http://a.test/", "utf-8").signals);
  };
  const std::string script = "<script src=/a.js></script>";
  // Text enough and a script (analytics): no.
  CHECK_FALSE(wants("<p>" + prose + "</p>" + script));
  // An empty application root, with or without text elsewhere.
  CHECK(wants("<p>" + prose + "</p><div id=__next></div>" + script));
  // The root filled by the server (server-side rendering): no.
  CHECK_FALSE(wants("<p>" + prose + "</p><div id=root><p>x</p></div>" + script));
  CHECK(wants("<p>" + prose + "</p><noscript>Please enable JavaScript.</noscript>" +
              script));
  CHECK(wants("<p>" + prose + "</p><img data-src=/a.png>" + script));
  CHECK(wants("<p>short</p>" + script));
  // Text in scripts, styles and titles is no reader's.
  CHECK(wants("<title>" + prose + "</title><style>p{}" + prose +
              "</style><script>var s='" + prose + "';</script>"));
  // Without a script that runs, never: a JSON data block does not run.
  CHECK_FALSE(wants("<div id=root></div><noscript>enable JavaScript</noscript>"));
  CHECK_FALSE(wants("<div id=root></div><script type=application/json>{}</script>"));
  CHECK(wants("<div id=root></div><script type=module src=/m.js></script>"));
}

TEST_CASE(
    "Render auto: a host whose rendered pages gave no new link stops being rendered, one "
    "whose page gave much more has every page rendered",
    "[engine][browser]") {
  RenderLearning learning;
  CHECK(learning.For("dull.test") == RenderLearning::Verdict::kSignals);
  for (uint32_t i = 1; i < RenderLearning::kDullPages; ++i)
    learning.Learn("dull.test", 3, 0);
  CHECK(learning.For("dull.test") == RenderLearning::Verdict::kSignals);
  learning.Learn("dull.test", 3, 0);
  CHECK(learning.For("dull.test") == RenderLearning::Verdict::kNever);
  // A page with a new link starts the count again.
  for (uint32_t i = 1; i < RenderLearning::kDullPages; ++i)
    learning.Learn("some.test", 3, 0);
  learning.Learn("some.test", 3, 1);
  for (uint32_t i = 1; i < RenderLearning::kDullPages; ++i)
    learning.Learn("some.test", 3, 0);
  CHECK(learning.For("some.test") == RenderLearning::Verdict::kSignals);
  // Much more: at least kMuchMore new links, and as many as the static ones.
  learning.Learn("app.test", 0, RenderLearning::kMuchMore);
  CHECK(learning.For("app.test") == RenderLearning::Verdict::kAlways);
  learning.Learn("big.test", 40, RenderLearning::kMuchMore);
  CHECK(learning.For("big.test") == RenderLearning::Verdict::kSignals);
  CHECK(learning.For("other.test") == RenderLearning::Verdict::kSignals);
}

}  // namespace
}  // namespace crawler::engine
