// The plain text table every human report prints (inspect, parse, forget).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace amn {

// A plain text table: columns sized to their widest cell; numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right)
      : right_(std::move(right)) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const {
    std::vector<size_t> width(right_.size(), 0);
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], display_width(r[c]));
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t c = 0; c < r.size(); ++c) {
        const size_t pad = width[c] - display_width(r[c]);
        if (c) line += "  ";
        if (right_[c]) line.append(pad, ' ');
        line += r[c];
        if (!right_[c] && c + 1 < r.size()) line.append(pad, ' ');
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  // UTF-8 code points, so non-ASCII names do not skew the columns.
  static size_t display_width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace amn
