// Build by hand (not in CMake yet): g++ -std=c++20 -O2 -Idedup/include -I. -Ibase/include \
//   tests/bench/fpr_experiment.cc build/dedup/libcrawler_dedup.a build/base/libcrawler_base.a -lxxhash
// Usage: a.out [N=25000] [SEEDS=20] [ENGINE_K=4000] [ERROR=0.01]
// Experiment (issue 14 section 3): is the chain's estimated FPR honest?
// For each start capacity, insert N distinct new keys into a fresh filter;
// count keys wrongly reported present (actual), and sum the filter's
// estimated FPR before each insert, refreshed every `every` keys (fresh
// ~= exact) and the engine's way (refreshed every K keys, 0 at first).
#include <cstdio>
#include <string>
#include "dedup/filter.h"
using namespace crawler::dedup;
int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? std::stoull(argv[1]) : 25000;
  int seeds = argc > 2 ? std::stoi(argv[2]) : 20;
  uint64_t engine_k = argc > 3 ? std::stoull(argv[3]) : 4000;
  double error = argc > 4 ? std::stod(argv[4]) : 0.01;
  for (uint64_t cap : {100, 200, 400, 1000, 25000}) {
    double fresh = 0, engine = 0; uint64_t actual = 0; double final_fpr = 0; uint32_t layers = 0;
    for (int seed = 0; seed < seeds; ++seed) {
      FilterOptions o; o.capacity = cap; o.error_rate = error;
      auto f = Filter::Create(o).value();
      double fpr_fresh = 0, fpr_engine = 0;
      for (uint64_t i = 0; i < n; ++i) {
        if (i % 50 == 0) fpr_fresh = f->Stats().estimated_fpr;
        if (i % engine_k == 0 && i > 0) fpr_engine = f->Stats().estimated_fpr;
        fresh += fpr_fresh; engine += fpr_engine;
        std::string key = "http://host" + std::to_string(seed) + ".test/p/" + std::to_string(i) + ".html";
        if (f->TryInsert(key) == InsertResult::kPresent) ++actual;
      }
      auto st = f->Stats(); final_fpr += st.estimated_fpr; layers = st.layers_max;
    }
    std::printf("cap %6lu: actual FPs %.2f/run, expected (fresh) %.2f, (engine, every %lu, 0 first) %.2f; end FPR %.4f%%, layers %u\n",
      cap, double(actual)/seeds, fresh/seeds, engine_k, engine/seeds, 100*final_fpr/seeds, layers);
  }
}
