// The native, in-process side of the NumPy / PyTorch comparison (bench/numpy_torch.py runs
// it beside torch.load and numpy.load on the same files): what `amn inspect` costs without
// the process start.
//
//   bench_numpy_torch inspect FILE...   per file: open_model, and open_model + model-info JSON
//   bench_numpy_torch npy FILE.npy      seconds per NPY header: open + parse, and parse alone
//
// One line per measure, "key<TAB>seconds" (best of `runs` after one warm-up run), for the
// driver to read.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_util.h"
#include "core/source.h"
#include "session/open.h"
#include "report/report.h"

namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Opens `path` as the CLI does (mmap, the file's own name, so detection sees the
// extension) and parses every header; aborts on any error, so a broken run cannot time.
template <class Use>
void open_and_parse(const std::string& path, Use use) {
  auto source = amn::MmapSource::open(path);
  if (!source) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), source.error().message.c_str());
    std::exit(1);
  }
  amn::FileSet files;
  files.add(base_name(path), std::move(source).value());
  auto model = amn::open_model(files, {});
  if (!model) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), model.error().message.c_str());
    std::exit(1);
  }
  use(*model);
}

double best(int runs, auto fn) {
  fn();  // warm the page cache and the allocator
  return amn::bench::best_seconds(runs, fn);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "inspect") != 0 && std::strcmp(argv[1], "npy") != 0)) {
    std::fprintf(stderr, "usage: bench_numpy_torch inspect FILE... | npy FILE.npy\n");
    return 2;
  }
  const int runs = 5;
  if (std::strcmp(argv[1], "inspect") == 0) {
    for (int i = 2; i < argc; ++i) {
      const std::string path = argv[i];
      size_t tensors = 0;
      const double parse = best(runs, [&] {
        open_and_parse(path, [&](const amn::Model& m) { tensors = m.tensors.size(); });
      });
      const double info = best(runs, [&] {
        open_and_parse(path, [&](const amn::Model& m) {
          if (amn::model_info_json(m).empty()) std::abort();
        });
      });
      std::printf("open\t%s\t%.6f\t%zu\n", base_name(path).c_str(), parse, tensors);
      std::printf("info\t%s\t%.6f\t%zu\n", base_name(path).c_str(), info, tensors);
    }
    return 0;
  }
  // Many headers per timed run, so the clock's resolution does not matter. Two measures:
  // with the file opened each time (mmap + munmap: the kernel's share, which numpy.load's
  // mmap pays too), and the parse alone on an open file (what npyjs.parse does on bytes).
  const std::string path = argv[2];
  const int headers = 2000;
  const double opened = best(runs, [&] {
    for (int i = 0; i < headers; ++i)
      open_and_parse(path, [](const amn::Model& m) {
        if (m.tensors.size() != 1) std::abort();
      });
  });
  auto source = amn::MmapSource::open(path);
  if (!source) return 1;
  amn::FileSet files;
  files.add(base_name(path), std::move(source).value());
  const double parsed = best(runs, [&] {
    for (int i = 0; i < headers; ++i) {
      auto m = amn::open_model(files, {});
      if (!m || m->tensors.size() != 1) std::abort();
    }
  });
  std::printf("npy-open\t%s\t%.9f\t1\n", base_name(path).c_str(), opened / headers);
  std::printf("npy-parse\t%s\t%.9f\t1\n", base_name(path).c_str(), parsed / headers);
  return 0;
}
