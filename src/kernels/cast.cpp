// cast_floats and implementation selection. The SIMD kernels (cast-inl.h) are compiled
// here once per Highway target: foreach_target.h re-includes this file per target.
// On x86-64 several targets are built and chosen at run time (libhwy); on aarch64 and
// WASM, CMake defines HWY_COMPILE_ONLY_STATIC and the one target is a direct call.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cast.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cast-inl.h"

#if HWY_ONCE
#include <array>
#include <atomic>
#include <cstdlib>

#include "kernels/cast.h"

// libhwy (run-time CPU detection) is linked only when targets are not static.
#ifndef HWY_COMPILE_ONLY_STATIC
#define AMN_HWY_RUNTIME_DISPATCH 1
#else
#define AMN_HWY_RUNTIME_DISPATCH 0
#endif

namespace amn {

HWY_EXPORT(CastFloats);

namespace {

struct NamedTarget {
  int64_t target;
  std::string_view name;
};
// Lower-case names of the Highway targets this code can be built for. HWY_SCALAR is
// renamed: "scalar" means our reference code.
constexpr NamedTarget kTargetNames[] = {
    {HWY_SCALAR, "hwy_scalar"}, {HWY_EMU128, "emu128"},   {HWY_SSSE3, "ssse3"},
    {HWY_SSE4, "sse4"},         {HWY_AVX2, "avx2"},       {HWY_AVX3, "avx3"},
    {HWY_AVX3_DL, "avx3_dl"},   {HWY_NEON, "neon"},       {HWY_SVE, "sve"},
    {HWY_SVE2, "sve2"},         {HWY_SVE_256, "sve_256"}, {HWY_SVE2_128, "sve2_128"},
    {HWY_WASM, "wasm"},         {HWY_WASM_EMU256, "wasm_emu256"},
};

std::string_view target_name(int64_t target) {
  for (const auto& t : kTargetNames) {
    if (t.target == target) return t.name;
  }
  return "unknown";
}

constexpr std::string_view kScalar = "scalar";

struct Impls {
  std::array<std::string_view, 65> names{};
  std::array<int64_t, 65> targets{};  // parallel to names; 0 for "scalar"
  size_t count = 0;
  int64_t best = 0;  // what Highway picks by itself
};

// Compiled targets the CPU supports, read before anything is forced.
Impls find_impls() {
  Impls impls;
  impls.names[0] = kScalar;
  impls.count = 1;
#if AMN_HWY_RUNTIME_DISPATCH
  const int64_t live = hwy::SupportedTargets() & HWY_TARGETS;
#else
  const int64_t live = HWY_STATIC_TARGET;
#endif
  // Better targets have lower bits: list from the highest bit down (weakest first).
  for (int bit = 62; bit >= 0; --bit) {
    const int64_t target = int64_t{1} << bit;
    if ((live & target) == 0) continue;
    impls.names[impls.count] = target_name(target);
    impls.targets[impls.count] = target;
    ++impls.count;
    impls.best = target;
  }
  return impls;
}

std::atomic<bool> g_use_scalar{false};

bool select(const Impls& impls, std::string_view name) {
  for (size_t i = 0; i < impls.count; ++i) {
    if (impls.names[i] != name) continue;
    if (impls.targets[i] == 0) {
      g_use_scalar.store(true, std::memory_order_relaxed);
      return true;
    }
#if AMN_HWY_RUNTIME_DISPATCH
    // 0 removes the mock: the default target again, as if nothing had been forced.
    hwy::SetSupportedTargetsForTest(impls.targets[i] == impls.best ? 0 : impls.targets[i]);
#endif
    g_use_scalar.store(false, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// Built once, at first use; AMN_FORCE_IMPL is applied then. An unknown name leaves the
// default here (the core never fails from inside a kernel); check_forced_impl() is what
// refuses it, and every surface that reads the environment calls that first.
const Impls& impls() {
  static const Impls found = find_impls();
  static const bool env_applied = [] {
    if (const char* forced = std::getenv("AMN_FORCE_IMPL")) select(found, forced);
    return true;
  }();
  (void)env_applied;
  return found;
}

}  // namespace

void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count) {
  impls();
  if (g_use_scalar.load(std::memory_order_relaxed)) {
    scalar::cast_floats(from, to, in, out, count);
    return;
  }
  HWY_DYNAMIC_DISPATCH(CastFloats)(from, to, in, out, count);
}

std::string_view active_impl_name() {
  impls();
  if (g_use_scalar.load(std::memory_order_relaxed)) return kScalar;
#if AMN_HWY_RUNTIME_DISPATCH
  const int64_t live = hwy::SupportedTargets() & HWY_TARGETS;  // honours the mock
  return target_name(live & -live);
#else
  return target_name(HWY_STATIC_TARGET);
#endif
}

std::span<const std::string_view> available_impls() {
  const Impls& found = impls();
  return {found.names.data(), found.count};
}

bool force_impl(std::string_view name) { return select(impls(), name); }

Status check_forced_impl() {
  const char* forced = std::getenv("AMN_FORCE_IMPL");
  if (forced == nullptr) return {};
  const Impls& found = impls();
  std::string names;
  for (size_t i = 0; i < found.count; ++i) {
    if (found.names[i] == forced) return {};
    names += (i ? ", " : "") + std::string(found.names[i]);
  }
  return make_error(ErrorCode::invalid_argument, "AMN_FORCE_IMPL=" + std::string(forced) +
                                                     " is not an implementation of this build on this CPU (available: " +
                                                     names + ")");
}

bool reference_impl_forced() {
  impls();
  return g_use_scalar.load(std::memory_order_relaxed);
}

}  // namespace amn
#endif  // HWY_ONCE
