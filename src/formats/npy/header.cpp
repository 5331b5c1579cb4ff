#include "formats/npy/header.h"

#include <cstdio>
#include <cstring>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/text.h"
#include "formats/npy/literal.h"

namespace amn::npy {
namespace {

constexpr uint64_t kMaxDim = uint64_t(INT64_MAX);  // NumPy sizes are intp

Error parse_error(std::string message, uint64_t offset) {
  return make_error(ErrorCode::parse, "npy: " + std::move(message), offset);
}

std::string quoted(std::string_view s) {
  PyValue v;
  v.kind = PyKind::str;
  v.text = std::string(s.substr(0, 80));
  return describe_literal(v);
}

struct DescrType {
  DType dtype;
  bool big_endian;
  bool complex128;
  uint64_t itemsize;
};

// A dtype string as NumPy writes dtype.str: byte order, kind, size ("<f4", "|b1", ">c16").
Result<DescrType> parse_descr(std::string_view d, uint64_t at) {
  const std::string q = quoted(d);
  std::string_view rest = d;
  char order = '=';
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '|' || rest[0] == '=')) {
    order = rest[0];
    rest.remove_prefix(1);
  }
  if (rest.empty()) return parse_error("descr " + q + " names no type", at);
  const char kind = rest[0];
  std::string_view digits = rest.substr(1);
  uint64_t size = 0;
  bool size_ok = !digits.empty() && digits.size() <= 6 && digits[0] != '0';
  for (char c : digits) {
    if (c < '0' || c > '9') size_ok = false;
    else size = size * 10 + static_cast<uint64_t>(c - '0');
  }
  if (kind == 'O') {
    return make_error(ErrorCode::unsupported,
                      "npy: descr " + q + " is an object array: its elements are pickled Python objects, which are "
                      "never loaded", at);
  }
  if (kind == 'M' || kind == 'm') {
    return make_error(ErrorCode::unsupported, "npy: descr " + q + " (datetime / timedelta) is not supported", at);
  }
  if (kind == 'S' || kind == 'U' || kind == 'a') {
    return make_error(ErrorCode::unsupported, "npy: descr " + q + " (a string array) is not supported", at);
  }
  if (!size_ok) {
    return make_error(ErrorCode::unsupported,
                      "npy: descr " + q + " is not a type string of the form <kind><size> (such as '<f4')", at);
  }
  DescrType t{DType::F32, false, false, size};
  bool known = true;
  switch (kind) {
    case 'b':
      known = size == 1;
      t.dtype = DType::BOOL;
      break;
    case 'i':
      if (size == 1) t.dtype = DType::I8;
      else if (size == 2) t.dtype = DType::I16;
      else if (size == 4) t.dtype = DType::I32;
      else if (size == 8) t.dtype = DType::I64;
      else known = false;
      break;
    case 'u':
      if (size == 1) t.dtype = DType::U8;
      else if (size == 2) t.dtype = DType::U16;
      else if (size == 4) t.dtype = DType::U32;
      else if (size == 8) t.dtype = DType::U64;
      else known = false;
      break;
    case 'f':
      if (size == 2) t.dtype = DType::F16;
      else if (size == 4) t.dtype = DType::F32;
      else if (size == 8) t.dtype = DType::F64;
      else known = false;
      break;
    case 'c':
      if (size == 8) t.dtype = DType::C64;
      else if (size == 16) t.dtype = DType::F64, t.complex128 = true;
      else known = false;
      break;
    case 'V':
      // ml_dtypes' bfloat16 (JAX) is saved as a 2-byte void; NumPy itself never writes one
      // for numbers.
      known = size == 2;
      t.dtype = DType::BF16;
      break;
    default:
      known = false;
  }
  if (!known) {
    std::string why = "is not supported";
    if ((kind == 'f' && size > 8) || (kind == 'c' && size > 16)) why = "(extended precision) is not supported";
    else if (kind == 'V') why = "(a " + num(size) + "-byte void or structured item) is not supported";
    return make_error(ErrorCode::unsupported, "npy: descr " + q + " " + why, at);
  }
  if (order == '|' && size > 1 && kind != 'V') {
    return parse_error("descr " + q + ": byte order '|' (not applicable) is only valid for one-byte types", at);
  }
  // '=' is the writer's native order; NumPy always writes '<' or '>', so '=' comes from
  // hand-written headers on little-endian machines in practice (docs/formats/numpy.md).
  t.big_endian = order == '>' && size > 1;
  return t;
}

const PyValue* find_key(const PyValue& dict, std::string_view key) {
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    if (dict.keys[i].kind == PyKind::str && dict.keys[i].text == key) return &dict.items[i];
  }
  return nullptr;
}

}  // namespace

std::string version_text(const Preamble& p) { return num(p.major) + "." + num(p.minor); }

Result<Preamble> read_preamble(std::span<const uint8_t> head, uint64_t base, uint64_t size) {
  if (size < kPreambleMin || head.size() < kPreambleMin) {
    if (size >= 6 && head.size() >= 6 && std::memcmp(head.data(), kMagic, 6) != 0) {
      // A short stream that is not NPY at all deserves the magic message.
    } else {
      return parse_error("truncated: " + num(size) + " bytes, too short for an NPY header (at least " +
                             num(kPreambleMin) + ")", base);
    }
  }
  if (std::memcmp(head.data(), kMagic, 6) != 0) {
    char hex[40];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x %02x %02x", head[0], head[1], head[2], head[3], head[4],
                  head[5]);
    return parse_error(std::string("bad magic: expected \\x93NUMPY (93 4e 55 4d 50 59), found ") + hex, base);
  }
  Preamble p;
  p.major = head[6];
  p.minor = head[7];
  if (p.minor != 0 || p.major < 1 || p.major > 3) {
    return make_error(ErrorCode::unsupported,
                      "npy: format version " + version_text(p) + " is not supported (NumPy writes 1.0, 2.0 and 3.0)",
                      base + 6);
  }
  if (p.major == 1) {
    p.text_offset = 10;
    p.text_bytes = load_le(head.data() + 8, 2);
  } else {
    if (size < 12) {
      return parse_error("truncated: " + num(size) + " bytes, too short for a version " + version_text(p) +
                             " NPY header (at least 12)", base);
    }
    if (head.size() < 12) return make_error(ErrorCode::internal, "npy: read_preamble needs 12 bytes", base);
    p.text_offset = 12;
    p.text_bytes = load_le(head.data() + 8, 4);
  }
  if (p.text_bytes > kHardMaxHeaderText) {
    return make_error(ErrorCode::limit,
                      "npy: header too long: " + num(p.text_bytes) + " bytes, more than the " +
                          num(kHardMaxHeaderText) + " NumPy reads without trusting the file",
                      base + 8);
  }
  if (p.total() > size) {
    return parse_error("truncated header: it claims " + num(p.text_bytes) + " bytes but only " +
                           num(size - p.text_offset) + " follow the preamble", base + 8);
  }
  return p;
}

Result<Header> parse_header(std::span<const uint8_t> bytes, const Preamble& p, uint64_t base) {
  if (bytes.size() < p.total()) return make_error(ErrorCode::internal, "npy: parse_header needs the whole header", base);
  const uint64_t text_at = base + p.text_offset;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + p.text_offset),
                              static_cast<size_t>(p.text_bytes));
  // 3.0 headers are UTF-8; 1.0 and 2.0 are latin-1, where every byte is a character.
  if (p.major == 3 && !valid_utf8(text)) {
    return parse_error("a version 3.0 header is not valid UTF-8", text_at);
  }
  LiteralOptions options;
  options.allow_long_suffix = p.major <= 2;
  AMN_ASSIGN(PyValue root, parse_python_literal(text, text_at, options));
  if (root.kind != PyKind::dict) {
    return parse_error("the header is not a dict: " + describe_literal(root), text_at + root.offset);
  }
  for (size_t i = 0; i < root.keys.size(); ++i) {
    const PyValue& k = root.keys[i];
    if (k.kind != PyKind::str) {
      return parse_error("header key " + describe_literal(k) + " is not a string", text_at + k.offset);
    }
    if (k.text != "descr" && k.text != "fortran_order" && k.text != "shape") {
      return parse_error("unexpected key " + describe_literal(k) +
                             " in the header (NumPy requires exactly 'descr', 'fortran_order' and 'shape')",
                         text_at + k.offset);
    }
    // Python keeps the last of duplicate keys; a reader that kept the first would see
    // another array, so a duplicate is refused rather than resolved.
    for (size_t j = 0; j < i; ++j) {
      if (root.keys[j].text == k.text) {
        return parse_error("duplicate key " + describe_literal(k) + " in the header", text_at + k.offset);
      }
    }
  }
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!find_key(root, key)) return parse_error(std::string("the header has no '") + key + "' key", text_at);
  }

  Header h;
  h.preamble = p;
  const PyValue& descr = *find_key(root, "descr");
  if (descr.kind == PyKind::list) {
    return make_error(ErrorCode::unsupported,
                      "npy: structured dtype (descr is a list of fields: " + describe_literal(descr) + ") is not supported",
                      text_at + descr.offset);
  }
  if (descr.kind != PyKind::str) {
    return parse_error("descr is not a dtype string: " + describe_literal(descr), text_at + descr.offset);
  }
  AMN_ASSIGN(DescrType type, parse_descr(descr.text, text_at + descr.offset));
  h.descr = descr.text;
  h.dtype = type.dtype;
  h.big_endian = type.big_endian;
  h.complex128 = type.complex128;
  h.itemsize = type.itemsize;

  const PyValue& fortran = *find_key(root, "fortran_order");
  if (fortran.kind != PyKind::boolean) {
    return parse_error("fortran_order is not a bool: " + describe_literal(fortran), text_at + fortran.offset);
  }
  h.fortran_order = fortran.truth;

  const PyValue& shape = *find_key(root, "shape");
  const uint64_t shape_at = text_at + shape.offset;
  if (shape.kind != PyKind::tuple) return parse_error("shape is not a tuple: " + describe_literal(shape), shape_at);
  const uint64_t max_rank = kHardMaxDims - (h.complex128 ? 1 : 0);
  if (shape.items.size() > max_rank) {
    return make_error(ErrorCode::limit,
                      "npy: shape has " + num(shape.items.size()) + " dimensions, more than " + num(max_rank) +
                          (h.complex128 ? " (complex128 adds one)" : ""),
                      shape_at);
  }
  // As NumPy's array constructor: itemsize times every non-zero dimension must fit intp,
  // even when a zero dimension makes the array empty.
  uint64_t span = h.itemsize;
  bool empty = false;
  for (const PyValue& d : shape.items) {
    if (d.kind != PyKind::integer) {
      return parse_error("shape is not a tuple of integers: " + describe_literal(shape), text_at + d.offset);
    }
    if (d.negative) return parse_error("shape has a negative dimension: " + describe_literal(shape), text_at + d.offset);
    if (d.too_big || d.magnitude > kMaxDim) {
      return parse_error("shape overflow: dimension " + describe_literal(d) + " exceeds 2^63-1", text_at + d.offset);
    }
    h.shape.push_back(d.magnitude);
    if (d.magnitude == 0) {
      empty = true;
      continue;
    }
    auto m = checked_mul(span, d.magnitude);
    if (!m || *m > kMaxDim) {
      return parse_error("shape overflow: " + describe_literal(shape) + " of " + num(h.itemsize) +
                             "-byte items exceeds 2^63-1 bytes", shape_at);
    }
    span = *m;
  }
  const uint64_t elements = empty ? 0 : span / h.itemsize;
  h.elements = elements;
  h.data_bytes = empty ? 0 : span;
  return h;
}

}  // namespace amn::npy
