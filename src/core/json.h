// Writing JSON text (reading is simdjson's job): escaped strings, and a small streaming
// writer for the compact documents the surfaces exchange with the core (statuses, plan
// views, requests). The pretty-printed model-info document has its own printer
// (report/info_json.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace amn {

// Appends s as a JSON string literal (quotes included). s must be valid UTF-8.
void append_json_string(std::string& out, std::string_view s);

// Appends n in decimal, without a temporary string (the info document writes several
// numbers per tensor).
void append_uint(std::string& out, uint64_t n);
void append_int(std::string& out, int64_t n);

// Appends dims as a JSON array of integers: "[4096, 11008]" (", " between them).
void append_dims(std::string& out, const std::vector<uint64_t>& dims);

// A float as Python's repr() writes it (and so json.dumps): the shortest digits that
// read back as d, fixed notation for exponents -4..15 ("0.05", "1.0"), else "1e-05",
// "1.5e+16"; NaN, Infinity, -Infinity. Producers' JSON written by Python (a
// bitsandbytes quant_state's nested_offset) is matched byte for byte with it.
std::string python_float_repr(double d);

// Compact JSON, written in order: w.begin_object().key("a").value(1).end_object().
// Commas are placed by the writer; nesting must be balanced by the caller.
class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(uint64_t n);
  JsonWriter& value(int64_t n);
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(unsigned n) { return value(static_cast<uint64_t>(n)); }
  JsonWriter& value(double d);  // shortest text that reads back as d; non-finite: null
  JsonWriter& null();
  JsonWriter& raw(std::string_view json);  // an already-serialised JSON value
  // A string, or null when empty.
  JsonWriter& string_or_null(std::string_view s) { return s.empty() ? null() : value(s); }
  JsonWriter& strings(const std::vector<std::string>& items);  // an array of strings
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void separate();  // the comma before a value or key, unless it follows a key
  std::string out_;
  std::vector<bool> has_items_;
  bool after_key_ = false;
};

}  // namespace amn
