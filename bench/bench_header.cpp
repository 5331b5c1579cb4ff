// Native safetensors header parse: open_model (simdjson parse + full validation) and the
// model-info JSON on a file made by bench/make_big_header.mjs (>= 5,000 tensors; the data
// section is a hole). Prints a markdown row per measure: median of 15 runs, in ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/source.h"
#include "session/open.h"
#include "report/report.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_header FILE.safetensors\n");
    return 2;
  }
  auto source = amn::MmapSource::open(argv[1]);
  if (!source) {
    std::fprintf(stderr, "%s\n", source.error().message.c_str());
    return 1;
  }
  amn::FileSet files;
  files.add("model.safetensors", std::move(source).value());
  auto time_ms = [](auto&& fn) {
    std::vector<double> t;
    fn();  // warm the page cache and the allocator
    for (int i = 0; i < 15; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      fn();
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  size_t tensors = 0;
  const double parse = time_ms([&] {
    auto m = amn::open_model(files, {});
    if (!m) std::abort();
    tensors = m->tensors.size();
  });
  const double with_info = time_ms([&] {
    auto m = amn::open_model(files, {});
    if (!m || amn::model_info_json(*m).empty()) std::abort();
  });
  std::printf("| anamnesis native: open_model (parse + validate), %zu tensors | %.2f |\n", tensors, parse);
  std::printf("| anamnesis native: open_model + model-info JSON | %.2f |\n", with_info);
  return 0;
}
