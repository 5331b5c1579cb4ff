// Helpers for the quantized-kernel tests (test_quant_*.cpp): a fixture safetensors file
// opened by our own parser, the producer's canonical output cast to each target with
// PyTorch's rules, a byte-difference count, and a loop over every implementation.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cast.h"
#include "support.h"

namespace amn::test::quant_fixtures {

// A fixture safetensors file held in memory, with its tensors' bytes.
struct StFile {
  std::vector<uint8_t> bytes;
  Model model;
  const TensorRecord& tensor(const std::string& name) const {
    const auto* t = model.find(name);
    INFO(name);
    REQUIRE(t != nullptr);
    return *t;
  }
  std::span<const uint8_t> data(const std::string& name) const {
    const auto& t = tensor(name);
    return {bytes.data() + t.offset, static_cast<size_t>(t.nbytes)};
  }
};

inline StFile open_fixture(const std::string& rel) {
  StFile f;
  f.bytes = read_file(fixture_path(rel));
  INFO(rel);
  REQUIRE(!f.bytes.empty());
  auto m = open_memory(f.bytes);
  REQUIRE(m.ok());
  f.model = std::move(*m);
  return f;
}

inline size_t esize(DType t) { return dtype_info(t).block_bytes; }

// The canonical result (in `from`) cast to `to` with PyTorch's rules (cast.h).
inline std::vector<uint8_t> expected_as(std::span<const uint8_t> canonical, DType from, DType to) {
  const size_t n = canonical.size() / esize(from);
  std::vector<uint8_t> v(n * esize(to));
  cast_floats(from, to, canonical.data(), v.data(), n);
  return v;
}

// The producer's bytes of `name` in target `to`: the expected file's "<name>@bf16" /
// "@f16" / "@f32" tensor when it has one (the integer families' exact product rounded
// once to that target: fixtures/quantized/make_round_once.py), else its canonical tensor
// (in `canonical`) cast with PyTorch's rules.
inline std::vector<uint8_t> expected_for(const StFile& f, const std::string& name, DType canonical, DType to) {
  const std::string suffix = to == DType::BF16 ? "@bf16" : to == DType::F16 ? "@f16" : "@f32";
  if (to != canonical && f.model.find(name + suffix) != nullptr) {
    const auto d = f.data(name + suffix);
    return {d.begin(), d.end()};
  }
  return expected_as(f.data(name), canonical, to);
}

// A fixture tensor's values as F32 (exact for the float dtypes the encoders read).
inline std::vector<float> as_f32(const StFile& f, const std::string& name) {
  const auto& t = f.tensor(name);
  std::vector<float> v(t.elements);
  cast_floats(t.dtype, DType::F32, f.data(name).data(), reinterpret_cast<uint8_t*>(v.data()), t.elements);
  return v;
}

// A fixture tensor's stored bytes.
inline std::vector<uint8_t> bytes_of(const StFile& f, const std::string& name) {
  const auto d = f.data(name);
  return {d.begin(), d.end()};
}

// Bytes that differ; every byte when the sizes differ.
inline size_t differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return ~size_t{0};
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

inline constexpr DType kTargets[] = {DType::BF16, DType::F16, DType::F32};

// Runs check(to) for every target dtype under every implementation this binary can run
// (kernels/cast.h: the reference first, then each Highway target), then restores the default.
template <class Fn>
void for_each_impl_and_target(const Fn& check) {
  struct Restore {
    std::string saved{active_impl_name()};
    ~Restore() { force_impl(saved); }
  } restore;
  for (auto impl : available_impls()) {
    REQUIRE(force_impl(impl));
    INFO("implementation " << impl);
    for (DType to : kTargets) check(to);
  }
}

}  // namespace amn::test::quant_fixtures
