// Freshness of a continuous crawl (what [recrawl] is for), measured from the
// ground truth of a changing testsite: page i changes as a Poisson process
// of its own rate (tests/testsite/site.h), and its ETag names the version
// served. For each [recrawl] rule the real crawler revisits the site for
// --seconds, its politeness (--delay-s between fetches of the one host)
// fixing the fetch budget; then, from the WARC (warcio index), the archived
// copy of each page at time t is the version of its last full capture
// (its ETag; its time the site's log's, to the microsecond), and
// freshness is the share of (page, t) over [warm-up, end] where that is
// the page's version at t (Site::Version), and age the mean over (page, t)
// of how long the archived copy has been stale (0 while fresh; else t - the
// first change after it, Site::ChangeTime). Also printed: the freshness and
// age that a uniform and the optimal schedule (Cho and Garcia-Molina 2003:
// the Lagrange solution, each page's rate known) would reach at the budget
// the crawl used, from the pages' true rates. The optimal schedule never
// revisits a page that changes too fast for the budget, whose age grows
// without bound; its age is given with such pages revisited at the crawl's
// max_interval_s (8 x the interval), as the crawler does.
//   build/tests/freshness_bench [--pages 100] [--change-mean-s 2]
//       [--change-model log-uniform|cho] [--delay-s 0.0833] [--seconds 400]
//       [--warmup-s 100] [--adapt fixed,adaptive,change-rate,change-rate:0.08]
//       (change-rate:W: with recrawl.age_weight W)
//   build/tests/freshness_bench --bounds [--pages 100] [--change-mean-s 2]
//       [--change-model log-uniform|cho]
//       (no crawl: a uniform and the optimal schedule's freshness on the
//       site's true rates at budgets of 0.1 .. 4 fetches per page per mean
//       change interval, and at 0.25, the crawls', the front between
//       freshness and age: PrintFront)
// Prints numbers; asserts nothing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "crawl_output.h"
#include "site.h"
#include "testsite_process.h"

namespace {

namespace fs = std::filesystem;
using crawler::testing::TestSite;
using crawler::testing::WarcRecord;
using crawler::testsite::Site;
using crawler::testsite::SiteOptions;

// The defaults are the earlier 6 s / 0.25 s / 300 s scaled by 1/3 in time
// and 3x in length: the same budget per change (one visit per page per
// ~4.2 mean change intervals), with four times the visits per page to learn
// from (a continuous crawl runs for weeks), in 400 s per rule.
struct Args {
  uint32_t pages = 100;
  double change_mean_s = 2, delay_s = 0.25 / 3, seconds = 400, warmup_s = 100;
  std::string change_model = "log-uniform";
  std::vector<std::string> adapt = {"fixed", "adaptive", "change-rate",
                                    "change-rate:0.08"};
  bool bounds = false;
};

double UnixNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double MonotonicNow() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double WarcTime(const std::string& date) {  // "2026-11-27T15:20:01Z"
  std::tm tm{};
  if (strptime(date.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0;
  return static_cast<double>(timegm(&tm));
}

// (1 - e^-x) / x: a page of rate l visited every 1/f seconds is fresh this
// share of the time.
double Fresh(double l, double f) {
  if (l <= 0) return 1;
  if (f <= 0) return 0;
  const double x = l / f;
  return (1 - std::exp(-x)) / x;
}

// The mean age of a page of rate l visited every 1/f seconds: over a
// period I, E[max(0, t - first change)] averaged over t in [0, I], which is
// I/2 - 1/l + (1 - e^-lI) / (l^2 I).
double Age(double l, double f) {
  if (l <= 0) return 0;
  if (f <= 0) return std::numeric_limits<double>::infinity();
  const double i = 1 / f;
  return i / 2 - 1 / l + (1 - std::exp(-l * i)) / (l * l * i);
}

// What a schedule reaches at mean frequency f: freshness and age.
struct Bound {
  double fresh = 0, age = 0;
};

// Uniform (every page at frequency f) and optimal (the Lagrange solution:
// 1 - (1 + x) e^-x = mu l, x = l / f_i, and f_i = 0 where mu l >= 1) mean
// freshness at mean frequency f; the optimal's age with its f_i at least
// `floor_f` (the crawl's 1 / max_interval_s).
std::pair<Bound, Bound> Bounds(const std::vector<double>& rates, double f,
                               double floor_f) {
  const auto n = static_cast<double>(rates.size());
  Bound uniform;
  for (double l : rates) {
    uniform.fresh += Fresh(l, f) / n;
    uniform.age += Age(l, f) / n;
  }
  auto x_of = [](double y) {
    double lo = 0, hi = 200;
    for (int i = 0; i < 80; ++i) {
      const double m = (lo + hi) / 2;
      (1 - (1 + m) * std::exp(-m) < y ? lo : hi) = m;
    }
    return (lo + hi) / 2;
  };
  auto freqs = [&](double mu) {
    std::vector<double> fs;
    for (double l : rates) fs.push_back(l <= 0 || mu * l >= 1 ? 0 : l / x_of(mu * l));
    return fs;
  };
  double lo = 1e-9, hi = 1e6, mu = 1;
  for (int i = 0; i < 100; ++i) {
    mu = std::sqrt(lo * hi);
    double sum = 0;
    for (double v : freqs(mu)) sum += v;
    (sum / n > f ? lo : hi) = mu;
  }
  Bound optimal;
  std::vector<double> fs = freqs(mu);
  for (size_t i = 0; i < rates.size(); ++i) {
    optimal.fresh += Fresh(rates[i], fs[i]) / n;
    optimal.age += Age(rates[i], std::max(fs[i], floor_f)) / n;
  }
  return {uniform, optimal};
}

struct Capture {
  double t;
  uint64_t version;
};

// The crawl's --set flags for rule `adapt` ("change-rate:W": with
// recrawl.age_weight W): one revisit of every page per cycle at the
// politeness limit is the fixed rule's interval; the others move within
// [1/4, 8] x it.
std::string CrawlSets(const Args& a, const std::string& adapt, double interval) {
  const std::string rule = adapt.substr(0, adapt.find(':'));
  const std::string age_weight =
      adapt.find(':') == std::string::npos ? "0" : adapt.substr(adapt.find(':') + 1);
  std::ostringstream sets;
  sets << " --set recrawl.enabled=true --set recrawl.adapt=" << rule
       << " --set recrawl.age_weight=" << age_weight
       << " --set recrawl.interval_s=" << interval
       << " --set recrawl.min_interval_s=" << interval / 4
       << " --set recrawl.max_interval_s=" << interval * 8
       << " --set crawl.max_duration_s=" << a.seconds
       << " --set frontier.min_delay_s=" << a.delay_s
       << " --set 'crawl.include=[\"/p/[0-9]+[.]html$\", \"^http://[^/]+/$\"]'";
  return sets.str();
}

// What the crawl archived: each page's full captures (the archived copy) in
// time order, and its fetches after the warm-up (the budget used).
struct Archived {
  std::map<std::string, std::vector<Capture>> captures;
  std::map<std::string, std::pair<uint32_t, uint32_t>> page;  // URL -> (h, i)
  uint64_t fetches = 0;
  uint64_t unmatched = 0;  // records not in the site's log
};

// `served`: when each answer (200 or 304) to a URL was written, on the
// site's clock, in order: the time of the WARC's k-th response or revisit
// of that URL, whose WARC-Date has whole seconds only (at one visit per
// 8 s, half a second early is a bias of ~6% freshness).
Archived ReadArchive(const std::string& out,
                     std::map<std::string, std::vector<double>>& served, double warmup_s,
                     double epoch) {
  Archived got;
  std::map<std::string, size_t> seen;
  for (const WarcRecord& w : crawler::testing::WarcRecords(out)) {
    if (w.type != "response" && w.type != "revisit") continue;
    const std::vector<double>& times = served[w.uri];
    const size_t k = seen[w.uri]++;
    got.unmatched += k >= times.size();
    const double t = k < times.size() ? times[k] : WarcTime(w.date) - epoch;
    if (w.type == "revisit" || w.status == "200") got.fetches += t >= warmup_s;
    unsigned h = 0, i = 0;
    unsigned long long v = 0;
    if (w.type != "response" || w.status != "200" ||
        std::sscanf(w.etag.c_str(), "\"%u-%u-%llu\"", &h, &i, &v) != 3)
      continue;
    got.captures[w.uri].push_back({t, v});
    got.page[w.uri] = {h, i};
  }
  return got;
}

// Freshness and age over (page, t) after the warm-up, and each page's true
// rate.
struct Measured {
  double fresh = 0, age = 0;
  std::vector<double> rates;
};

Measured Measure(const Args& a, Archived& got) {
  SiteOptions so;
  so.pages = a.pages;
  so.hosts = 1;
  so.seed = 1;
  so.change_mean_s = a.change_mean_s;
  so.change_model = a.change_model;
  const Site truth(so);
  Measured m;
  double samples = 0;
  for (auto& [url, caps] : got.captures) {
    std::sort(caps.begin(), caps.end(),
              [](const Capture& x, const Capture& y) { return x.t < y.t; });
    const auto [h, i] = got.page[url];
    m.rates.push_back(truth.ChangeRate(h, i));
    size_t k = 0;
    for (double t = a.warmup_s; t < a.seconds; t += 0.2) {
      while (k < caps.size() && caps[k].t <= t) ++k;
      const bool is_fresh = k > 0 && caps[k - 1].version == truth.Version(h, i, t);
      m.fresh += is_fresh;
      // Stale since the first change after the archived version (from the
      // start when nothing is archived yet).
      if (!is_fresh)
        m.age += t - (k > 0 ? truth.ChangeTime(h, i, caps[k - 1].version + 1) : 0);
      samples += 1;
    }
  }
  if (samples > 0) {
    m.fresh /= samples;
    m.age /= samples;
  }
  return m;
}

void RunPolicy(const Args& a, const std::string& adapt, const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The site's clock: Unix time since `epoch`; its request log's is
  // CLOCK_MONOTONIC, read here at the same moment.
  const double epoch = UnixNow();
  const double mono_epoch = MonotonicNow();
  char epoch_arg[64];
  std::snprintf(epoch_arg, sizeof(epoch_arg), "%.3f", epoch);
  TestSite site("--pages " + std::to_string(a.pages) + " --hosts 1 --seed 1" +
                    " --change-mean-s " + std::to_string(a.change_mean_s) +
                    " --change-model " + a.change_model + " --epoch " + epoch_arg,
                dir + "/requests.log");
  site.WriteSeeds(dir + "/seeds.txt");
  const double interval = a.pages * a.delay_s;
  const std::string out = dir + "/out";
  crawler::testing::CommandResult r = crawler::testing::RunCommand(
      std::string(CRAWLER_BINARY) + " crawl --seeds " + dir + "/seeds.txt --out " + out +
      CrawlSets(a, adapt, interval));
  if (r.exit_code != 0) {
    std::fprintf(stderr, "freshness_bench: the crawl failed:\n%s\n", r.output.c_str());
    std::exit(1);
  }
  site.Stop();
  std::map<std::string, std::vector<double>> served;
  for (const crawler::testing::ServedRequest& q : site.Requests())
    if (q.status == 200 || q.status == 304)
      served[q.Url()].push_back(static_cast<double>(q.end_us) / 1e6 - mono_epoch);
  Archived got = ReadArchive(out, served, a.warmup_s, epoch);
  const Measured m = Measure(a, got);
  const double f = static_cast<double>(got.fetches) /
                   (static_cast<double>(got.captures.size()) * (a.seconds - a.warmup_s));
  const auto [uniform, optimal] = Bounds(m.rates, f, 1 / (interval * 8));
  std::printf(
      "%-16s %zu pages, %llu fetches after the warm-up (%.4f per page per s, %.2f per "
      "mean change interval): freshness %.3f (%.1f%% of the optimal), age %.2f s; at "
      "this budget a uniform schedule %.3f (age %.2f s), the optimal %.3f (age %.2f "
      "s)\n",
      adapt.c_str(), got.captures.size(), static_cast<unsigned long long>(got.fetches), f,
      f * a.change_mean_s, m.fresh, 100 * m.fresh / optimal.fresh, m.age, uniform.fresh,
      uniform.age, optimal.fresh, optimal.age);
  if (got.unmatched > 0)
    std::printf("  (%llu records not in the site's log: timed by their WARC-Date)\n",
                static_cast<unsigned long long>(got.unmatched));
  std::fflush(stdout);
}

// The front between freshness and age of periodic schedules at mean
// frequency f, on `rates`: for each price of age nu, each page's frequency
// (a log grid from f / 8 up, as the crawl's max_interval_s allows) that
// maximizes freshness - nu x age - mu x frequency, mu set so the mean is f.
// Freshness is concave and age convex in a page's frequency, so the scan
// traces the whole front.
void PrintFront(const std::vector<double>& rates, double f) {
  std::vector<double> grid;
  for (int k = -24; k < 40; ++k) grid.push_back(f * std::exp2(k / 8.0));
  const auto n = static_cast<double>(rates.size());
  for (double nu : {0.0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1}) {
    std::vector<double> pick(rates.size());
    auto solve = [&](double mu) {
      double sum = 0;
      for (size_t i = 0; i < rates.size(); ++i) {
        double best = -1e300;
        for (double g : grid) {
          const double v = Fresh(rates[i], g) - nu * Age(rates[i], g) - mu * g;
          if (v > best) best = v, pick[i] = g;
        }
        sum += pick[i];
      }
      return sum / n;
    };
    double lo = 1e-6, hi = 1e4;
    for (int it = 0; it < 60; ++it) {
      const double mu = std::sqrt(lo * hi);
      (solve(mu) > f ? lo : hi) = mu;
    }
    solve(hi);
    double fresh = 0, age = 0;
    for (size_t i = 0; i < rates.size(); ++i) {
      fresh += Fresh(rates[i], pick[i]) / n;
      age += Age(rates[i], pick[i]) / n;
    }
    std::printf("  front, price of age %.3f per s: freshness %.3f, age %.2f s\n", nu,
                fresh, age);
  }
}

// The schedules' bounds on the site's true rates, without a crawl.
void PrintBounds(const Args& a) {
  SiteOptions so;
  so.pages = a.pages;
  so.hosts = 1;
  so.seed = 1;
  so.change_mean_s = a.change_mean_s;
  so.change_model = a.change_model;
  const Site truth(so);
  std::vector<double> rates;
  for (uint32_t i = 0; i < a.pages; ++i) rates.push_back(truth.ChangeRate(0, i));
  for (double per_change : {0.1, 0.25, 0.5, 1.0, 2.0, 4.0}) {
    const double f = per_change / a.change_mean_s;
    const auto [uniform, optimal] = Bounds(rates, f, f / 8);
    std::printf(
        "%.2f fetches per page per mean change interval: uniform %.3f (age %.2f s), "
        "optimal %.3f (%.2fx; age %.2f s)\n",
        per_change, uniform.fresh, uniform.age, optimal.fresh,
        optimal.fresh / uniform.fresh, optimal.age);
    if (per_change == 0.25) PrintFront(rates, f);  // the crawls' budget
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int k = 1; k < argc; ++k) {
    const std::string flag = argv[k];
    if (flag == "--bounds") {
      a.bounds = true;
      continue;
    }
    if (k + 1 >= argc) {
      std::fprintf(stderr, "freshness_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++k];
    if (flag == "--pages") {
      a.pages = static_cast<uint32_t>(std::stoul(value));
    } else if (flag == "--change-model") {
      a.change_model = value;
    } else if (flag == "--change-mean-s") {
      a.change_mean_s = std::stod(value);
    } else if (flag == "--delay-s") {
      a.delay_s = std::stod(value);
    } else if (flag == "--seconds") {
      a.seconds = std::stod(value);
    } else if (flag == "--warmup-s") {
      a.warmup_s = std::stod(value);
    } else if (flag == "--adapt") {
      a.adapt.clear();
      std::stringstream list(value);
      for (std::string p; std::getline(list, p, ',');) a.adapt.push_back(p);
    } else {
      std::fprintf(stderr, "freshness_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (a.bounds) {
    PrintBounds(a);
    return 0;
  }
  std::printf(
      "freshness_bench: %u pages on one host, changing every %.1f s on average (each "
      "at its own rate: %s), one fetch per %.3f s, %.0f s per rule (the first %.0f s "
      "not measured)\n",
      a.pages, a.change_mean_s,
      a.change_model == "cho" ? "20% at 8x, half never, the rest 1/8..8x"
                              : "log-uniform 1/8..8x",
      a.delay_s, a.seconds, a.warmup_s);
  for (const std::string& adapt : a.adapt)
    RunPolicy(a, adapt,
              (fs::temp_directory_path() /
               ("crawler-freshness-" + a.change_model + "-" + adapt))
                  .string());
  return 0;
}
