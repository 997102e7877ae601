// Inline SVG line charts for the HTML reports (`crawler stats --html`,
// `crawler cluster-stats --html`): self-contained, no script, no asset.
// Each line is (seconds, value) points over one shared time axis from 0;
// the y axis from 0 to the largest value.
#ifndef CRAWLER_REPORT_SVG_CHART_H_
#define CRAWLER_REPORT_SVG_CHART_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace crawler::report {

struct ChartLine {
  std::string name;  // in the legend ("": no legend entry)
  std::vector<std::pair<double, double>> points;
};

// `label` writes the y axis's top value. Lines past the palette's eight
// colours repeat them, dashed.
std::string LineChart(const std::string& title, const std::vector<ChartLine>& lines,
                      const std::function<std::string(double)>& label);

std::string HtmlEscape(const std::string& s);
// 1234567 -> "1,234,567" (a double rounded, below 0 as 0): the reports' counts.
std::string Count(uint64_t v);
std::string Count(double v);

}  // namespace crawler::report

#endif  // CRAWLER_REPORT_SVG_CHART_H_
