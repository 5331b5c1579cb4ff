#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "session/output.h"

namespace amn::cli {

ProgressBar::ProgressBar(std::string label, bool quiet)
    : label_(std::move(label)), enabled_(!quiet && ::isatty(2) == 1) {}

void ProgressBar::clear() {
  if (enabled_ && last_permille_ >= 0) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
  last_permille_ = -1;
}

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  const int permille = static_cast<int>(done * 1000 / total);
  if (permille == last_permille_) return;  // redraw at most 1000 times
  last_permille_ = permille;
  const std::string line = progress_line(label_, done, total);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace amn::cli
