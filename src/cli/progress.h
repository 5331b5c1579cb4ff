// A one-line progress bar on stderr, only when stderr is a terminal.
#pragma once
#include <cstdint>
#include <string>

namespace amn::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total);

 private:
  std::string label_;
  bool enabled_;
  int last_permille_ = -1;
};

}  // namespace amn::cli
