// core/float_text.h against the loops it replaced, written here as they were: for digits =
// 1, 2, ... snprintf until strtod (strtof for a float) reads the text back as the value.
// The corpus is random bit patterns of both types, every power of two and of ten and
// their neighbours, denormals, the extremes, integers around 2^24 and 2^53, and short
// decimals; the three call sites' texts (JsonWriter, python_float_repr, GGUF details)
// are each compared with their own old loop.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/float_text.h"
#include "core/json.h"

using namespace amn;

namespace {

// JsonWriter::value(double) and the GGUF details' FLOAT64 before core/float_text.h.
std::string old_g_double(double d) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

// The GGUF details' FLOAT32 (its integer shortcut gave the loop's text, which is checked).
std::string old_g_float(float v) {
  char buf[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

// python_float_repr before core/float_text.h.
std::string old_repr(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  char buf[48];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string text(buf);
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  const size_t e = text.find('e');
  const int exp10 = std::atoi(text.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.') digits += text[i];
  }
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
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ex[8];
    std::snprintf(ex, sizeof ex, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += ex;
  }
  return sign + out;
}

std::string new_g(double d) {
  std::string s;
  append_shortest_g(s, d);
  return s;
}

std::string new_g(float v) {
  std::string s;
  append_shortest_g(s, v);
  return s;
}

std::string json_double(double d) {
  JsonWriter w;
  w.value(d);
  return w.take();
}

float float_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

double double_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// v, its neighbours (k steps each way) and v negated; finite ones only.
template <class F>
void around(std::vector<F>& out, F v, int k) {
  for (int s = -k; s <= k; ++s) {
    auto u = bits_of(v);
    const auto x = s < 0 ? u - static_cast<decltype(u)>(-s) : u + static_cast<decltype(u)>(s);
    F f;
    std::memcpy(&f, &x, sizeof f);
    if (!std::isfinite(f)) continue;
    out.push_back(f);
    if (s == 0) out.push_back(-f);
  }
}

// The values a loop is most likely to get wrong, for either type.
template <class F>
std::vector<F> edge_values() {
  std::vector<F> v;
  const int max_exp = std::numeric_limits<F>::max_exponent;
  const int min_exp = std::numeric_limits<F>::min_exponent - std::numeric_limits<F>::digits;
  for (int e = min_exp; e < max_exp; ++e) around(v, std::ldexp(F(1), e), 2);  // every power of two
  for (int e = -330; e <= 310; ++e) {                                          // every power of ten
    const F p = static_cast<F>(std::strtod(("1e" + std::to_string(e)).c_str(), nullptr));
    if (std::isfinite(p) && p != 0) around(v, p, 2);
  }
  around(v, std::numeric_limits<F>::max(), 3);
  around(v, std::numeric_limits<F>::min(), 3);
  around(v, std::numeric_limits<F>::denorm_min(), 40);
  around(v, F(0), 40);  // 0, -0 and the smallest denormals
  // Integers around the last exactly counted ones (2^24, 2^53), and their multiples of 10.
  const double top = sizeof(F) == 4 ? 16777216.0 : 9007199254740992.0;
  for (int k = -300; k <= 300; ++k) {
    v.push_back(static_cast<F>(top + k));
    v.push_back(static_cast<F>(-top - k));
    v.push_back(static_cast<F>(top + 10.0 * k));
  }
  for (int k = 0; k <= 2000; ++k) {
    v.push_back(static_cast<F>(k));
    v.push_back(static_cast<F>(-k * 10));
  }
  // Short decimals, halves and the like, as token scores and hyperparameters are.
  const char* texts[] = {"0.1", "0.2", "0.3", "1e-5", "1e-6", "1e-05", "123456789", "1234567890123456789", "0.0001234",
                         "-1234.5", "3.14159", "2.5", "0.5", "9.5", "99.5", "0.05", "1e16", "1.5e16", "1e15", "1e-4",
                         "1e-3", "999999.95", "9.9999995", "0.30000000000000004", "1e21", "1e22", "1e23",
                         "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "3.4028235e38", "1.17549435e-38",
                         "1.4e-45", "16777217", "9007199254740993", "500000", "10000.5", "0.000099999"};
  for (const char* t : texts) around(v, static_cast<F>(std::strtod(t, nullptr)), 3);
  // Multiples of small decimals: k/10, k/100, k/1000 (n-digit ties and near-ties).
  for (int k = 1; k <= 3000; ++k) {
    v.push_back(static_cast<F>(k / 10.0));
    v.push_back(static_cast<F>(-k / 100.0));
    v.push_back(static_cast<F>(k / 1000.0));
    v.push_back(static_cast<F>(k + 0.5));
    v.push_back(static_cast<F>(-k * 0.25));
  }
  return v;
}

// Values with few significant bits: exact decimals whose n-digit rounding is a true tie.
template <class F>
void few_bits(std::vector<F>& v, std::mt19937_64& rng, int count) {
  for (int i = 0; i < count; ++i) {
    const uint64_t m = rng() >> (64 - 1 - static_cast<int>(rng() % 30));
    const int e = static_cast<int>(rng() % 80) - 40;
    v.push_back(std::ldexp(static_cast<F>(m), e));
  }
}

}  // namespace

TEST_CASE("float_text: float texts are the old strtof loop's, on edges and random bits") {
  std::vector<float> values = edge_values<float>();
  std::mt19937_64 rng(20261128);
  few_bits(values, rng, 20000);
  for (int i = 0; i < 200000; ++i) {
    const float f = float_bits(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) values.push_back(f);
  }
  // Scores as a vocabulary has them: a few digits, a sign, a small exponent.
  for (int i = 0; i < 100000; ++i) {
    const double x = static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000);
    values.push_back(static_cast<float>(x / std::pow(10.0, static_cast<double>(rng() % 9))));
  }
  size_t bad = 0;
  for (float f : values) {
    const std::string want = old_g_float(f);
    const std::string got = new_g(f);
    if (got != want && bad++ < 10) FAIL_CHECK("float bits " << bits_of(f) << ": " << got << " != " << want);
  }
  INFO(values.size() << " floats");
  CHECK(bad == 0);
  CHECK(values.size() > 250000);
}

TEST_CASE("float_text: double texts are the old strtod loops', on edges and random bits") {
  std::vector<double> values = edge_values<double>();
  std::mt19937_64 rng(11282026);
  few_bits(values, rng, 20000);
  for (int i = 0; i < 20000; ++i) {
    const double d = double_bits(rng());
    if (std::isfinite(d)) values.push_back(d);
  }
  // Floats widened to double (what GGUF FLOAT32 hyperparameters become in python_float_repr).
  for (int i = 0; i < 10000; ++i) {
    const float f = float_bits(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) values.push_back(static_cast<double>(f));
  }
  size_t bad = 0;
  size_t i = 0;
  for (double d : values) {
    const std::string want = old_g_double(d);
    const std::string got = new_g(d);
    if (got != want && bad++ < 10) FAIL_CHECK("double bits " << bits_of(d) << ": " << got << " != " << want);
    const std::string json = json_double(d);
    if (json != want && bad++ < 10) FAIL_CHECK("JsonWriter bits " << bits_of(d) << ": " << json << " != " << want);
    // python_float_repr's digits are the same helper's: every other value keeps the
    // WASM run of this test short (musl's printf is slow on big exponents).
    if (i++ % 2) continue;
    const std::string repr_want = old_repr(d);
    const std::string repr = python_float_repr(d);
    if (repr != repr_want && bad++ < 10) FAIL_CHECK("repr bits " << bits_of(d) << ": " << repr << " != " << repr_want);
  }
  INFO(values.size() << " doubles");
  CHECK(bad == 0);
  CHECK(values.size() > 60000);
}

TEST_CASE("float_text: the texts people read, and what JSON cannot hold") {
  CHECK(new_g(-1234.5f) == "-1234.5");
  CHECK(new_g(0.0001234f) == "0.0001234");
  CHECK(new_g(1e-5f) == "1e-05");
  CHECK(new_g(-0.0f) == "-0");
  CHECK(new_g(0.1) == "0.1");
  CHECK(new_g(1230.0) == "1.23e+03");  // %g's rule: 3 digits, exponent 3
  CHECK(new_g(123456789.0f) == "1.2345679e+08");
  CHECK(new_g(5e-324) == "5e-324");
  CHECK(new_g(16777215.0f) == "16777215");
  CHECK(python_float_repr(0.05) == "0.05");
  CHECK(python_float_repr(-0.0) == "-0.0");
  CHECK(python_float_repr(1e16) == "1e+16");
  CHECK(python_float_repr(std::numeric_limits<double>::infinity()) == "Infinity");
  CHECK(python_float_repr(-std::numeric_limits<double>::infinity()) == "-Infinity");
  CHECK(python_float_repr(std::nan("")) == "NaN");
  CHECK(json_double(std::nan("")) == "null");
  CHECK(json_double(-std::numeric_limits<double>::infinity()) == "null");
  const DecimalDigits d = shortest_digits(-1234.5f);
  CHECK(d.negative);
  CHECK(d.count == 5);
  CHECK(d.exp10 == 3);
  CHECK(std::string(d.digits) == "12345");
}
