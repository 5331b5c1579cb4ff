// The shortest decimal text that reads back as the same float or double, written once for
// the JSON writer, Python-style repr and the GGUF details. It exists because emscripten
// 3.1.6's libc++ has no floating-point std::to_chars (`em++` calls
// `std::to_chars(p, end, 1.5)` a deleted function), and the text must be the same byte
// for byte natively, under qemu and in WASM. The definition is the one the three call
// sites had as loops: for digits = 1, 2, ... the correctly rounded `%.{digits}g` (or
// `%.{digits-1}e`) text of the value, until strtod (strtof for a float) reads it back as
// the value. The helper reaches the same digits with integer arithmetic (or one snprintf
// where that does not fit) instead of one snprintf and one strtod per digit count
// (float_text.cpp says how, and why it is the same).
#pragma once
#include <string>

namespace amn {

// A finite value as sign, significant digits and a decimal exponent: the value is
// d[0].d[1]d[2]... x 10^exp10. count is the loop's digit count (1 for zero).
struct DecimalDigits {
  bool negative = false;
  int count = 0;
  int exp10 = 0;
  char digits[24] = {};  // count ASCII digits, NUL-terminated
};

// The first digit count whose correctly rounded digits read back as v through strtod
// (double) or strtof (float). v must be finite.
DecimalDigits shortest_digits(double v);
DecimalDigits shortest_digits(float v);

// Appends what `%.{count}g` prints for those digits: the shortest %g text that reads back
// as v ("0.1", "-1234.5", "1e-05", "1.2345678e+20", "-0"). v must be finite.
void append_shortest_g(std::string& out, double v);
void append_shortest_g(std::string& out, float v);

}  // namespace amn
