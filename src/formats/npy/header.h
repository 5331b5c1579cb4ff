// The NPY header: magic, version, header length, and the header dict (descr,
// fortran_order, shape) interpreted as NumPy's format.py does (read_array_header_1_0 /
// _2_0, descr_to_dtype). Spec and our choices: docs/formats/numpy.md.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/limits.h"

namespace amn::npy {

inline constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// Magic, version and the 2-byte length of a 1.0 header: enough to tell a header's size.
inline constexpr uint64_t kPreambleMin = 10;
// NumPy pads every header so the data starts on a 64-byte boundary and leaves room to
// grow the shape: a v1 header of up to a few dimensions is exactly 128 bytes. Reading this
// much first gets almost every header in one request and never reaches array data.
inline constexpr uint64_t kFirstRead = 128;
// NumPy >= 1.24 refuses header dicts longer than 10000 characters unless told the file is
// trusted (format.py _MAX_HEADER_SIZE); every array we can read needs far less (64 dims of
// 20 digits is ~1.5 KB). We refuse the same, whatever the version allows (v2/v3: 4 GiB).
inline constexpr uint64_t kHardMaxHeaderText = 10000;

struct Preamble {
  uint8_t major = 0, minor = 0;
  uint64_t text_offset = 0;  // where the dict text starts: 10 (v1) or 12 (v2, v3)
  uint64_t text_bytes = 0;   // the header length field
  uint64_t total() const { return text_offset + text_bytes; }  // = data start
};

// Reads the preamble from the first bytes of an NPY stream (at least kPreambleMin of them,
// or 12 for v2/v3). `base` is the stream's offset in the file (for error offsets), `size`
// the stream's length (the file, or the ZIP entry's uncompressed size).
// Errors: parse (magic, truncation), unsupported (version), limit (header length).
Result<Preamble> read_preamble(std::span<const uint8_t> head, uint64_t base, uint64_t size);

struct Header {
  Preamble preamble;
  std::string descr;          // as written: "<f4", "|b1", ">c16", "<V2"
  DType dtype = DType::F32;   // complex128 is stored as F64 with an extra trailing dim of 2
  bool big_endian = false;
  bool fortran_order = false;
  bool complex128 = false;
  std::vector<uint64_t> shape;  // as written in the header (without the complex dim)
  uint64_t itemsize = 0;        // bytes per NumPy element
  uint64_t elements = 0;        // product of shape (1 for a 0-d array)
  uint64_t data_bytes = 0;      // elements * itemsize
};

// Parses the header dict. `bytes` holds the stream from its start through at least
// preamble.total() bytes. Errors: parse (malformed literal, keys, values, shape overflow),
// unsupported (object, structured and other dtypes we cannot represent), limit (rank).
Result<Header> parse_header(std::span<const uint8_t> bytes, const Preamble& preamble, uint64_t base);

// NPY version as written: "1.0", "2.0", "3.0".
std::string version_text(const Preamble& p);

}  // namespace amn::npy
