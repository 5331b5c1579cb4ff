// A one-line progress bar on stderr, only when stderr is a terminal and not quiet. The
// line itself is the session's (progress_line), so the Node CLI draws the same.
#pragma once
#include <cstdint>
#include <string>

namespace amn::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool quiet);
  ~ProgressBar() { clear(); }
  void update(uint64_t done, uint64_t total);
  // Erases the bar, so what is printed next starts on a clean line.
  void clear();

 private:
  std::string label_;
  bool enabled_;
  int last_permille_ = -1;
};

}  // namespace amn::cli
