#include "core/float_text.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

// How the loop's answer is reached without its snprintf + strtod per digit count, and why
// it is the same answer (printf and strtod round correctly, halfway cases to even, in
// glibc and musl; the loop relied on that too):
// - Integers below 2^24 (float) or 2^53 (double) are their own digits, trailing zeros
//   dropped: those digits read back exactly, and fewer digits round to another integer,
//   which reads back as itself (or, at 2^24 or 2^53 and above, not below it).
// - Digits, exact route: the value is m x 2^e, so its n-digit rounding is
//   m x 5^k x 2^(e+k) (k = n - 1 - exponent) rounded half to even, computed exactly in
//   128-bit integers when numerator and denominator fit; the decimal exponent is found
//   the same way (log10's guess, corrected until the leading digit is 1..9).
// - Digits, printf route (what does not fit: large exponents, denormals): one `%.16e`
//   gives D, the value to 17 significant digits. Rounding D to n < 17 digits gives what
//   `%.{n-1}e` of the value gives unless D's digits after the n-th are exactly 5 then
//   zeros: every halfway point between two n-digit numbers is a 17-digit number, and the
//   value lies closer to D than to any other 17-digit number, so no halfway point lies
//   strictly between the value and D, or at D unless D is one. In that one case (a tie
//   in D, true or made by rounding) `%.{n-1}e` itself is asked.
// - Reading back: a decimal w x 10^q with w <= 2^24 and |q| <= 10 (float), or w <= 2^53
//   and |q| <= 22 (double), is exactly w times or divided by an exact power of ten, and
//   one IEEE multiplication or division rounds it correctly (Clinger's fast path), as
//   strtod or strtof would. A float candidate with more digits takes the double fast path
//   and is rounded again to float unless that lands exactly halfway between two floats
//   (reads_back). The rest are read by strtod or strtof themselves.
// - Text: %g with precision P prints the digits of %.{P-1}e, in fixed notation when that
//   exponent X satisfies -4 <= X < P, with trailing zeros of the fraction dropped.
// tests_native/test_float_text.cpp compares all of it with the loop on every target.

namespace amn {
namespace {

// The fast paths need float and double operations rounded to their own type, not wider.
static_assert(FLT_EVAL_METHOD == 0, "float arithmetic must be evaluated in float");

template <class F>
struct Traits;

template <>
struct Traits<float> {
  static constexpr int kMaxDigits = 9;
  static constexpr float kExactInt = 16777216.0f;  // 2^24
  static constexpr uint64_t kFastMantissa = uint64_t(1) << 24;
  static constexpr int kFastExp = 10;
  static float pow10(int q) {
    static constexpr float kPow[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
    return kPow[q];
  }
  static float parse(const char* s) { return std::strtof(s, nullptr); }
};

template <>
struct Traits<double> {
  static constexpr int kMaxDigits = 17;
  static constexpr double kExactInt = 9007199254740992.0;  // 2^53
  static constexpr uint64_t kFastMantissa = uint64_t(1) << 53;
  static constexpr int kFastExp = 22;
  static double pow10(int q) {
    static constexpr double kPow[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    return kPow[q];
  }
  static double parse(const char* s) { return std::strtod(s, nullptr); }
};

constexpr uint64_t kPow10Int[] = {1ull,
                                  10ull,
                                  100ull,
                                  1000ull,
                                  10000ull,
                                  100000ull,
                                  1000000ull,
                                  10000000ull,
                                  100000000ull,
                                  1000000000ull,
                                  10000000000ull,
                                  100000000000ull,
                                  1000000000000ull,
                                  10000000000000ull,
                                  100000000000000ull,
                                  1000000000000000ull,
                                  10000000000000000ull,
                                  100000000000000000ull};

// Writes n's decimal digits at out, which holds 20 (no NUL); returns how many.
int write_uint(char* out, uint64_t n) { return static_cast<int>(std::to_chars(out, out + 20, n).ptr - out); }

// Reads "d[.ddd]e±x" (what %e prints for a finite non-negative value) into digits.
void read_e_text(const char* text, DecimalDigits& d) {
  int count = 0;
  const char* p = text;
  for (; *p != 'e'; ++p) {
    if (*p != '.') d.digits[count++] = *p;
  }
  d.digits[count] = '\0';
  d.count = count;
  d.exp10 = std::atoi(p + 1);
}

// Whether w x 10^q (w > 0) reads back as a (positive) through the target's strtod.
template <class F>
bool reads_back(uint64_t w, int q, F a) {
  using T = Traits<F>;
  while (w % 10 == 0) {
    w /= 10;
    ++q;
  }
  if (w <= T::kFastMantissa && q >= -T::kFastExp && q <= T::kFastExp) {
    const F fw = static_cast<F>(w);
    const F back = q < 0 ? fw / T::pow10(-q) : fw * T::pow10(q);
    return back == a;
  }
  if constexpr (sizeof(F) == 4) {
    // Too many digits for float arithmetic: the double fast path, then to float. Rounding
    // twice gives strtof's float unless the double lands exactly halfway between two
    // floats (every such point is a double, so the exact value lies on the same side of
    // any other); in the normal range that is mantissa bits 28..0 = 1 followed by zeros.
    using D = Traits<double>;
    if (w <= D::kFastMantissa && q >= -D::kFastExp && q <= D::kFastExp) {
      const double dw = static_cast<double>(w);
      const double back = q < 0 ? dw / D::pow10(-q) : dw * D::pow10(q);
      uint64_t bits;
      std::memcpy(&bits, &back, sizeof bits);
      const bool halfway = (bits & 0x1FFFFFFF) == 0x10000000;
      if (!halfway && back >= static_cast<double>(FLT_MIN) && back <= static_cast<double>(FLT_MAX)) {
        return static_cast<float>(back) == a;
      }
    }
  }
  char text[48];
  int len = write_uint(text, w);
  std::snprintf(text + len, sizeof text - static_cast<size_t>(len), "e%d", q);
  return T::parse(text) == a;
}

__extension__ typedef unsigned __int128 u128;

// 5^k for k <= 54 (5^54 < 2^126), with bit lengths.
struct Pow5 {
  u128 p[55];
  int bits[55];
  constexpr Pow5() : p(), bits() {
    u128 x = 1;
    for (int k = 0; k < 55; ++k) {
      p[k] = x;
      int b = 0;
      for (u128 y = x; y; y >>= 1) ++b;
      bits[k] = b;
      x *= 5;
    }
  }
};
constexpr Pow5 kPow5;

// A positive value as m x 2^e (m odd), to be scaled by powers of ten in 128 bits.
struct Binary {
  uint64_t m;
  int e;
  int m_bits;
};

template <class F>
Binary binary_of(F a) {
  int ex = 0;
  const F f = std::frexp(a, &ex);
  constexpr int kDigits = std::numeric_limits<F>::digits;
  uint64_t m = static_cast<uint64_t>(std::ldexp(f, kDigits));
  int e = ex - kDigits;
  const int tz = __builtin_ctzll(m);
  m >>= tz;
  e += tz;
  return {m, e, 64 - __builtin_clzll(m)};
}

// a x 10^k = m x 5^k x 2^(e+k) as num / den, when both fit (den < 2^126); the quotient
// rounded half to even (as printf rounds the exact value) and whether it was exact.
bool scaled(const Binary& b, int k, u128& quotient, u128& num_out, u128& den_out) {
  if (k > 54 || k < -54) return false;
  const int s = b.e + k;
  const int num_bits = b.m_bits + (k > 0 ? kPow5.bits[k] : 0) + (s > 0 ? s : 0);
  const int den_bits = (k < 0 ? kPow5.bits[-k] : 1) + (s < 0 ? -s : 0);
  if (num_bits > 128 || den_bits > 126) return false;
  u128 num = static_cast<u128>(b.m) * (k > 0 ? kPow5.p[k] : 1);
  if (s > 0) num <<= s;
  u128 den = k < 0 ? kPow5.p[-k] : 1;
  if (s < 0) den <<= -s;
  // With k >= 0, den is a power of two: a shift (the common case, and no 128-bit divide).
  quotient = k >= 0 ? (s < 0 ? num >> -s : num) : num / den;
  num_out = num;
  den_out = den;
  return true;
}

bool rounded_scaled(const Binary& b, int k, uint64_t& w) {
  u128 q, num, den;
  if (!scaled(b, k, q, num, den)) return false;
  const u128 rem = num - q * den;
  if (2 * rem > den || (2 * rem == den && (q & 1))) ++q;
  w = static_cast<uint64_t>(q);
  return true;
}

// The decimal exponent of a (floor of log10), exactly, when the scaling fits.
bool exponent_of(const Binary& b, double a, int& x) {
  x = static_cast<int>(std::floor(std::log10(a)));
  for (int tries = 0; tries < 4; ++tries) {
    u128 q, num, den;
    if (!scaled(b, -x, q, num, den)) return false;
    if (q >= 10) ++x;
    else if (q == 0) --x;
    else return true;
  }
  return false;
}

template <class F>
DecimalDigits shortest(F v) {
  using T = Traits<F>;
  DecimalDigits d;
  d.negative = std::signbit(v);
  const F a = std::fabs(v);
  if (a == 0) {
    d.count = 1;
    d.digits[0] = '0';
    return d;
  }
  if (a < T::kExactInt && a == std::trunc(a)) {
    const int len = write_uint(d.digits, static_cast<uint64_t>(a));
    int count = len;
    while (count > 1 && d.digits[count - 1] == '0') --count;
    d.digits[count] = '\0';
    d.count = count;
    d.exp10 = len - 1;
    return d;
  }
  // The exact route: n-digit roundings from the binary value in 128-bit integers.
  const Binary b = binary_of(a);
  int x = 0;
  const bool exact = exponent_of(b, static_cast<double>(a), x);
  // The printf route, for what does not fit: D, "d.dddddddddddddddde±x", the value to 17
  // significant digits, made at the first digit count that needs it.
  char D[17];
  int e17 = 0;
  bool have_d = false;
  for (int n = 1; n <= T::kMaxDigits; ++n) {
    uint64_t w = 0;
    int exp10 = x;
    if (!exact || !rounded_scaled(b, n - 1 - x, w)) {
      if (!have_d) {
        char text[40];
        std::snprintf(text, sizeof text, "%.16e", static_cast<double>(a));
        D[0] = text[0];
        for (int i = 1; i < 17; ++i) D[i] = text[i + 1];
        e17 = std::atoi(text + 19);
        have_d = true;
      }
      w = 0;
      exp10 = e17;
      for (int i = 0; i < n; ++i) w = w * 10 + static_cast<uint64_t>(D[i] - '0');
      if (n < 17) {
        bool rest = false;
        for (int i = n + 1; i < 17; ++i) rest |= D[i] != '0';
        if (D[n] > '5' || (D[n] == '5' && rest)) ++w;
        if (D[n] == '5' && !rest) {  // a tie in D: ask printf
          char e[40];
          std::snprintf(e, sizeof e, "%.*e", n - 1, static_cast<double>(a));
          read_e_text(e, d);
          w = 0;
          for (int i = 0; i < n; ++i) w = w * 10 + static_cast<uint64_t>(d.digits[i] - '0');
          exp10 = d.exp10;
        }
      }
    }
    if (w == kPow10Int[n]) {  // rounded up to 10^n: one digit more in the exponent
      w = kPow10Int[n - 1];
      ++exp10;
    }
    if (n == T::kMaxDigits || reads_back<F>(w, exp10 - (n - 1), a)) {
      d.count = n;
      d.exp10 = exp10;
      write_uint(d.digits, w);
      d.digits[n] = '\0';
      return d;
    }
  }
  return d;  // not reached: the last digit count is taken as it is, as the loop did
}

template <class F>
void append_g(std::string& out, F v) {
  const DecimalDigits d = shortest_digits(v);
  if (d.negative) out += '-';
  const int p = d.count;
  const int x = d.exp10;
  int end = p;  // the digits without trailing zeros (the first one stays)
  while (end > 1 && d.digits[end - 1] == '0') --end;
  if (x >= -4 && x < p) {
    if (x >= 0) {
      // The integer part is x + 1 <= p digits, all present; the fraction loses its zeros.
      out.append(d.digits, static_cast<size_t>(x) + 1);
      if (end > x + 1) {
        out += '.';
        out.append(d.digits + x + 1, static_cast<size_t>(end - x - 1));
      }
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-x - 1), '0');
      out.append(d.digits, static_cast<size_t>(end));
    }
    return;
  }
  out += d.digits[0];
  if (end > 1) {
    out += '.';
    out.append(d.digits + 1, static_cast<size_t>(end - 1));
  }
  out += 'e';
  out += x < 0 ? '-' : '+';
  const int ax = x < 0 ? -x : x;
  if (ax < 10) out += '0';
  char exp[20];
  out.append(exp, static_cast<size_t>(write_uint(exp, static_cast<uint64_t>(ax))));
}

}  // namespace

DecimalDigits shortest_digits(double v) { return shortest(v); }
DecimalDigits shortest_digits(float v) { return shortest(v); }
void append_shortest_g(std::string& out, double v) { append_g(out, v); }
void append_shortest_g(std::string& out, float v) { append_g(out, v); }

}  // namespace amn
