// The converter's handling of stored layouts that NumPy and PyTorch produce: strided
// views, Fortran order, per-tensor big-endian data. Records are built by hand here (the
// parsers' own tests cover producing them from real files); expected outputs are the
// row-major element order written out by hand.
#include <catch2/catch.hpp>

#include <cstring>

#include "convert/execute.h"
#include "convert/plan.h"
#include "support.h"

using namespace amn;
using amn::test::VecSink;

namespace {

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

TensorRecord record(std::string name, DType dtype, std::vector<uint64_t> shape, std::vector<uint64_t> strides,
                    uint64_t offset, uint64_t nbytes) {
  TensorRecord t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.elements = 1;
  for (auto d : shape) t.elements *= d;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  t.offset = offset;
  t.nbytes = nbytes;
  return t;
}

// The data section of a one-plan output (the tensor plan has no header).
Result<std::vector<uint8_t>> tensor_bytes(const Model& m, std::span<const uint8_t> file, std::string_view name,
                                          std::optional<DType> to = std::nullopt) {
  FileSet set;
  set.add("x", std::make_unique<MemorySource>(file));
  AMN_ASSIGN(auto plan, plan_tensor(m, name, to));
  VecSink sink;
  AMN_TRY(execute_plan(plan, set, sink));
  return sink.bytes;
}

std::vector<float> floats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

}  // namespace

TEST_CASE("a Fortran-order array is written row-major", "[layout]") {
  // Storage 0..5 in column-major order for shape [2, 3]: element (i, j) = i + 2 j.
  const auto file = bytes_of({0, 1, 2, 3, 4, 5});
  Model m;
  m.tensors.push_back(record("f", DType::F32, {2, 3}, {1, 2}, 0, 24));
  auto out = tensor_bytes(m, file, "f");
  REQUIRE(out);
  CHECK(floats(*out) == std::vector<float>{0, 2, 4, 1, 3, 5});
}

TEST_CASE("a view with a storage offset and a row stride gathers only its elements", "[layout]") {
  // Storage is a 3x4 matrix; the view is rows 1..2, columns 1..2 (offset 5 elements).
  std::vector<float> storage(12);
  for (int i = 0; i < 12; ++i) storage[i] = float(i);
  const auto file = bytes_of(storage);
  Model m;
  m.tensors.push_back(record("v", DType::F32, {2, 2}, {4, 1}, 5 * 4, (4 + 2) * 4));
  auto out = tensor_bytes(m, file, "v");
  REQUIRE(out);
  CHECK(floats(*out) == std::vector<float>{5, 6, 9, 10});
  // A transposed view, cast on the way out: BF16 of 5, 9, 6, 10.
  m.tensors.push_back(record("t", DType::F32, {2, 2}, {1, 4}, 5 * 4, (4 + 2) * 4));
  auto bf = tensor_bytes(m, file, "t", DType::BF16);
  REQUIRE(bf);
  CHECK(*bf == std::vector<uint8_t>{0xA0, 0x40, 0x10, 0x41, 0xC0, 0x40, 0x20, 0x41});
}

TEST_CASE("contiguous strides and size-1 dims take the plain copy path", "[layout]") {
  const auto file = bytes_of({1, 2, 3, 4});
  Model m;
  m.tensors.push_back(record("c", DType::F32, {4, 1}, {1, 99}, 0, 16));
  auto plan = plan_tensor(m, "c", std::nullopt);
  REQUIRE(plan);
  REQUIRE(plan->pieces.size() == 1);
  CHECK(plan->pieces[0].kind == PieceKind::copy);
}

TEST_CASE("a per-tensor big-endian record is swapped, strided or not", "[layout]") {
  const std::vector<uint8_t> file = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
  Model m;
  auto a = record("a", DType::I16, {3}, {}, 0, 6);
  a.big_endian = true;
  m.tensors.push_back(a);
  auto b = record("b", DType::I16, {2}, {2}, 0, 6);  // every other element
  b.big_endian = true;
  m.tensors.push_back(b);
  auto out = tensor_bytes(m, file, "a");
  REQUIRE(out);
  CHECK(*out == std::vector<uint8_t>{0x02, 0x01, 0x04, 0x03, 0x06, 0x05});
  out = tensor_bytes(m, file, "b");
  REQUIRE(out);
  CHECK(*out == std::vector<uint8_t>{0x02, 0x01, 0x06, 0x05});
}

TEST_CASE("a large view is split into pieces of whole rows", "[layout]") {
  // 1200 rows of 4000 floats, every other storage row: ~19 MB of output, more than one piece.
  const uint64_t rows = 1200, cols = 4000;
  std::vector<float> storage(rows * 2 * cols);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = float(i % 65536);
  const auto file = bytes_of(storage);
  Model m;
  m.tensors.push_back(record("big", DType::F32, {rows, cols}, {2 * cols, 1}, 0, ((rows - 1) * 2 * cols + cols) * 4));
  auto plan = plan_tensor(m, "big", std::nullopt);
  REQUIRE(plan);
  CHECK(plan->pieces.size() == 2);
  for (const auto& p : plan->pieces) CHECK(p.out_length <= kMaxPieceBytes);
  auto out = tensor_bytes(m, file, "big");
  REQUIRE(out);
  const auto v = floats(*out);
  REQUIRE(v.size() == rows * cols);
  bool all = true;
  for (uint64_t r = 0; r < rows && all; ++r) {
    for (uint64_t c = 0; c < cols; ++c) all = all && v[r * cols + c] == storage[r * 2 * cols + c];
  }
  CHECK(all);
}

TEST_CASE("strides that reach past the stored range are refused before reading", "[layout]") {
  const auto file = bytes_of({1, 2, 3, 4});
  Model m;
  m.tensors.push_back(record("past", DType::F32, {2, 2}, {3, 1}, 0, 16));  // needs 5 elements
  auto plan = plan_tensor(m, "past", std::nullopt);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == ErrorCode::parse);
  CHECK(plan.error().message == "tensor 'past': its strides reach past its storage");
  m.tensors.push_back(record("huge", DType::F32, {3, 2}, {uint64_t{1} << 62, 1}, 0, 16));
  auto huge = plan_tensor(m, "huge", std::nullopt);
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message == "tensor 'huge': its strides overflow");
  m.tensors.push_back(record("rank", DType::F32, {2, 2}, {1}, 0, 16));
  auto rank = plan_tensor(m, "rank", std::nullopt);
  REQUIRE_FALSE(rank);
  CHECK(rank.error().message == "tensor 'rank': strides and shape differ in rank");
}
