// See svg_chart.h.
#include "report/svg_chart.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace crawler::report {

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string Count(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
std::string Count(double v) {
  return Count(static_cast<uint64_t>(std::llround(std::max(0.0, v))));
}

namespace {

constexpr const char* kPalette[] = {"#1f5fbf", "#c0392b", "#27ae60", "#8e44ad",
                                    "#d35400", "#16a085", "#7f8c8d", "#2c3e50"};
constexpr size_t kColors = sizeof(kPalette) / sizeof(kPalette[0]);

std::string Num(double v) { return fmt::format("{:.1f}", v); }

// The frame: background, title, axes and their end labels.
std::string Frame(const std::string& title, double w, double h, double left, double right,
                  double top, double bottom, const std::string& vmax, double tmax) {
  std::string svg =
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fbfbfd\" "
      "stroke=\"#ccd\"/>";
  svg += "<text x=\"" + Num(left) + "\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" +
         HtmlEscape(title) + "</text>";
  svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(h - bottom) + "\" x2=\"" +
         Num(w - right) + "\" y2=\"" + Num(h - bottom) + "\" stroke=\"#888\"/>";
  svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(left) +
         "\" y2=\"" + Num(h - bottom) + "\" stroke=\"#888\"/>";
  svg += "<text x=\"4\" y=\"" + Num(top + 10) + "\" font-size=\"11\">" +
         HtmlEscape(vmax) + "</text>";
  svg += "<text x=\"4\" y=\"" + Num(h - bottom) + "\" font-size=\"11\">0</text>";
  svg += "<text x=\"" + Num(w - right - 60) + "\" y=\"" + Num(h - 8) +
         "\" font-size=\"11\">" + fmt::format("{:.0f} s", tmax) + "</text>";
  return svg;
}

}  // namespace

std::string LineChart(const std::string& title, const std::vector<ChartLine>& lines,
                      const std::function<std::string(double)>& label) {
  const double w = 560, h = 200, left = 70, bottom = 30, top = 24, right = 12;
  double tmax = 0, vmax = 0;
  bool any = false;
  for (const ChartLine& l : lines)
    for (const auto& [t, v] : l.points) {
      tmax = std::max(tmax, t);
      vmax = std::max(vmax, v);
      any = true;
    }
  if (tmax <= 0) tmax = 1;
  if (vmax <= 0) vmax = 1;
  auto x = [&](double t) { return left + (w - left - right) * t / tmax; };
  auto y = [&](double v) { return h - bottom - (h - bottom - top) * v / vmax; };
  std::string svg = "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    fmt::format("{:.0f}", w) + "\" height=\"" + fmt::format("{:.0f}", h) +
                    "\" role=\"img\">" +
                    Frame(title, w, h, left, right, top, bottom, label(vmax), tmax);
  if (!any) svg += "<text x=\"200\" y=\"100\" font-size=\"12\">no data yet</text>";
  std::string legend;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].points.empty()) continue;
    const std::string color = kPalette[i % kColors];
    const bool dashed = i == 1 || i >= kColors;
    std::string pts;
    for (const auto& [t, v] : lines[i].points) pts += Num(x(t)) + "," + Num(y(v)) + " ";
    svg += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" +
           (dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + pts + "\"/>";
    if (!lines[i].name.empty())
      legend += "<span style=\"color:" + color + "\">&#9632; " +
                HtmlEscape(lines[i].name) + "</span> ";
  }
  svg += "</svg>";
  if (!legend.empty()) svg += "<figcaption>" + legend + "</figcaption>";
  return svg + "</figure>\n";
}

}  // namespace crawler::report
