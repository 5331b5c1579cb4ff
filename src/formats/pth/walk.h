// Reading a checkpoint's unpickled value graph without calling anything: tensors
// (_rebuild_tensor_v2 and friends over persistent-id storages) named by their path in
// nested dicts and lists ("model.layer.weight", "optimizer.state.0.momentum_buffer"),
// and every other value kept as JSON for the report. The graph may share values (memo
// GETs) and even contain itself; the walk is bounded in visits and depth.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "formats/pickle/vm.h"
#include "formats/pth/torch_globals.h"

namespace amn::pth {

// A storage as a persistent id names it: ('storage', type, key, location, numel) in
// the ZIP form; the legacy form adds view metadata (view key, offset, size) or None.
struct StorageRef {
  std::string key;
  const StorageType* type = nullptr;
  std::string location;
  uint64_t numel = 0;            // storage elements of `type`
  uint64_t view_offset = 0;      // legacy storage views: elements into the root storage
};

struct FoundTensor {
  std::string name;
  StorageRef storage;
  uint64_t storage_offset = 0;   // elements into the storage (view offset included)
  std::vector<uint64_t> shape;
  std::vector<uint64_t> strides; // elements, as stored
};

struct Walked {
  std::vector<FoundTensor> tensors;
  std::vector<std::pair<std::string, std::string>> values;  // path, JSON text
  uint64_t values_omitted = 0;  // beyond kMaxReportedValues
};

// Non-tensor values reported (the rest are counted): a training checkpoint's optimizer
// state can hold thousands of small entries.
inline constexpr uint64_t kMaxReportedValues = 1000;

// Walks from the pickle's root. `legacy`: persistent ids carry view metadata.
Result<Walked> walk_checkpoint(const pickle::Pickle& p, bool legacy, const ParseLimits& limits);

// The storage a persistent-id value names (every storage of a legacy file must be
// known, including ones no tensor reaches).
Result<StorageRef> storage_ref(const pickle::Pickle& p, uint32_t persistent_id, bool legacy);

// A value rendered as JSON (bounded: long containers and strings are cut short).
std::string value_json(const pickle::Pickle& p, uint32_t v);

}  // namespace amn::pth
