#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "report/report.h"

namespace amn::cli {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(::isatty(2) == 1) {}

ProgressBar::~ProgressBar() {
  if (enabled_ && last_permille_ >= 0) std::fputs("\r\033[K", stderr);
}

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  const int permille = static_cast<int>(done * 1000 / total);
  if (permille == last_permille_) return;  // redraw at most 1000 times
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, ' ');
  std::fprintf(stderr, "\r%s [%s] %3d%%  %s / %s\033[K", label_.c_str(), bar.c_str(), permille / 10,
               human_bytes(done).c_str(), human_bytes(total).c_str());
  std::fflush(stderr);
}

}  // namespace amn::cli
