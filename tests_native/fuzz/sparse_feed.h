// Drives a sans-IO parse over a SparseSource that holds nothing at first, answering each
// need_bytes from `data`, as the JS readers do. Shared by the fuzz targets: the loop must
// converge and never ask for bytes past the end, or the target traps.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/source.h"

namespace amn::fuzz {

template <class Parse>
auto parse_sparse(const uint8_t* data, size_t size, const std::string& name, Parse parse) {
  FileSet set;
  auto owned = std::make_unique<SparseSource>(size);
  SparseSource* sparse = owned.get();
  set.add(name, std::move(owned));
  for (int round = 0; round < 64; ++round) {
    auto result = parse(set);
    if (result || result.error().code != ErrorCode::need_bytes) return result;
    for (const auto& r : result.error().need_bytes) {
      if (r.offset > size || r.length > size - r.offset) __builtin_trap();  // asked past the end
      (void)sparse->add_copy(r.offset, {data + r.offset, static_cast<size_t>(r.length)});
    }
  }
  __builtin_trap();  // the sparse loop must converge
}

}  // namespace amn::fuzz
