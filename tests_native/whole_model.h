// A model opened from bytes in memory, kept with its files (the stats and diff tests).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model.h"
#include "core/source.h"
#include "session/open.h"

namespace amn::test {

// A model opened from bytes that every read finds (a MemorySource), kept with its files.
struct WholeModel {
  std::vector<uint8_t> bytes;
  FileSet files;
  Model model;
};

inline std::unique_ptr<WholeModel> open_whole(std::vector<uint8_t> bytes, const std::string& name) {
  auto o = std::make_unique<WholeModel>();
  o->bytes = std::move(bytes);
  o->files.add(name, std::make_unique<MemorySource>(o->bytes));
  auto m = open_model(o->files, ParseLimits{});
  REQUIRE(m);
  o->model = std::move(m).value();
  return o;
}

}  // namespace amn::test
