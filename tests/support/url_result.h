// What the parsers' tests share: a URL result shown as a string.
#ifndef TESTS_SUPPORT_URL_RESULT_H_
#define TESTS_SUPPORT_URL_RESULT_H_

#include <string>

#include "parsers/url.h"

namespace crawler::parsers::testing {

// The URL, or the error where a URL was expected (so a CHECK shows it).
inline std::string UrlOf(const UrlResult& r) {
  return r.ok() ? r.value() : "<error: " + r.status().message() + ">";
}

}  // namespace crawler::parsers::testing

#endif  // TESTS_SUPPORT_URL_RESULT_H_
