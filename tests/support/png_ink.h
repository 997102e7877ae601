// The share of a PNG screenshot's pixels that are not near-white: how the
// tests tell that headless Chromium rendered an HTML report (neither blank
// nor all ink).
#ifndef CRAWLER_TESTS_PNG_INK_H_
#define CRAWLER_TESTS_PNG_INK_H_

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace crawler::testing {

// A PNG (8-bit RGB/RGBA, as Chromium writes) -> the share of pixels that are
// not near-white.
inline double InkShare(const std::string& png) {
  if (png.size() < 33 || png.compare(1, 3, "PNG") != 0) return -1;
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  uint32_t width = be32(16), height = be32(20);
  int depth = png[24], color = png[25];
  if (depth != 8 || (color != 2 && color != 6)) return -1;
  size_t bpp = color == 6 ? 4 : 3;
  std::string idat;
  for (size_t at = 8; at + 8 <= png.size();) {
    uint32_t len = be32(at);
    std::string type = png.substr(at + 4, 4);
    if (type == "IDAT") idat += png.substr(at + 8, len);
    at += 12 + len;
  }
  std::vector<uint8_t> raw(size_t(height) * (1 + width * bpp));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()),
                 idat.size()) != Z_OK)
    return -1;
  size_t stride = width * bpp;
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  uint64_t ink = 0;
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = raw.data() + y * (stride + 1);
    uint8_t filter = row[0];
    for (size_t i = 0; i < stride; ++i) {
      int a = i >= bpp ? cur[i - bpp] : 0, b = prev[i], cc = i >= bpp ? prev[i - bpp] : 0;
      int x = row[1 + i], v = x;
      if (filter == 1)
        v = x + a;
      else if (filter == 2)
        v = x + b;
      else if (filter == 3)
        v = x + (a + b) / 2;
      else if (filter == 4) {
        int p = a + b - cc, pa = std::abs(p - a), pb = std::abs(p - b),
            pc = std::abs(p - cc);
        v = x + (pa <= pb && pa <= pc ? a : pb <= pc ? b : cc);
      }
      cur[i] = static_cast<uint8_t>(v);
    }
    for (size_t px = 0; px < width; ++px) {
      const uint8_t* p = &cur[px * bpp];
      if (p[0] < 200 || p[1] < 200 || p[2] < 200) ++ink;
    }
    std::swap(prev, cur);
  }
  return static_cast<double>(ink) / (double(width) * height);
}

}  // namespace crawler::testing

#endif  // CRAWLER_TESTS_PNG_INK_H_
