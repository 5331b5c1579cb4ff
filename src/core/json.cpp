#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/float_text.h"

namespace amn {

void append_json_string(std::string& out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out += '"';
  // Runs of characters that need no escape (nearly all of them) are appended at once.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

namespace {

template <class Int>
void append_integer(std::string& out, Int n) {
  char buf[20];  // 20 characters: UINT64_MAX, or INT64_MIN with its sign
  // (pointer, length): libc++'s append(first, last) copies a byte at a time.
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, n).ptr - buf));
}

}  // namespace

void append_uint(std::string& out, uint64_t n) { append_integer(out, n); }
void append_int(std::string& out, int64_t n) { append_integer(out, n); }

void append_dims(std::string& out, const std::vector<uint64_t>& dims) {
  out += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    append_uint(out, dims[i]);
  }
  out += ']';
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_ += ',';
    has_items_.back() = true;
  }
}

JsonWriter& JsonWriter::open(char c) {
  separate();
  out_ += c;
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  out_ += c;
  if (!has_items_.empty()) has_items_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  append_json_string(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t n) {
  separate();
  append_uint(out_, n);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t n) {
  separate();
  append_int(out_, n);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) return null();
  separate();
  append_shortest_g(out_, d);
  return *this;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  // The shortest digits that read back as d, and their exponent (core/float_text.h).
  const DecimalDigits dd = shortest_digits(d);
  const std::string sign = dd.negative ? "-" : "";
  const int exp10 = dd.exp10;
  std::string digits(dd.digits, static_cast<size_t>(dd.count));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    } else if (digits.size() <= static_cast<size_t>(exp10) + 1) {
      out = digits + std::string(static_cast<size_t>(exp10) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp10) + 1) + "." + digits.substr(static_cast<size_t>(exp10) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += ex;
  }
  return sign + out;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::strings(const std::vector<std::string>& items) {
  begin_array();
  for (const auto& s : items) value(s);
  return end_array();
}

}  // namespace amn
