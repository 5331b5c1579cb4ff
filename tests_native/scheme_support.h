// Helpers for the scheme tests (test_schemes*.cpp): a quantized fixture opened with its
// config.json as a folder is, the producer's expected tensors, and one logical tensor
// planned and executed.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "support.h"

namespace amn::test::schemes {

// A model file and its config.json (when there is one), opened as a folder is.
struct Opened {
  std::vector<uint8_t> model_bytes, config_bytes;
  std::vector<std::vector<uint8_t>> more_bytes;  // other files' (MemorySource only views them)
  FileSet files;
  Result<Model> model = make_error(ErrorCode::internal, "not opened");
};

inline std::unique_ptr<Opened> open_fixture(const std::string& dir, const std::string& stem) {
  auto o = std::make_unique<Opened>();
  o->model_bytes = test::read_file(test::fixture_path(dir + "/" + stem + ".safetensors"));
  o->config_bytes = test::read_file(test::fixture_path(dir + "/" + stem + ".config.json"));
  REQUIRE(!o->model_bytes.empty());
  o->files.add("model.safetensors", std::make_unique<MemorySource>(o->model_bytes));
  if (!o->config_bytes.empty()) o->files.add("config.json", std::make_unique<MemorySource>(o->config_bytes));
  o->model = open_model(o->files, {});
  return o;
}

struct Expected {
  DType dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

inline std::map<std::string, Expected> expected_tensors(const std::string& path) {
  auto bytes = test::read_file(path);
  auto m = amn::test::open_memory(bytes);
  REQUIRE(m);
  std::map<std::string, Expected> out;
  for (const auto& t : m->tensors) {
    out[t.name] = {t.dtype, t.shape,
                   std::vector<uint8_t>(bytes.begin() + t.offset, bytes.begin() + t.offset + t.nbytes)};
  }
  return out;
}

inline const LogicalTensor* logical(const Model& m, const std::string& name) {
  for (const auto& l : m.logical) if (l.name == name) return &l;
  return nullptr;
}

inline Result<std::vector<uint8_t>> dequantized(Opened& o, const std::string& name, std::optional<DType> to) {
  AMN_ASSIGN(auto plan, plan_tensor(*o.model, name, to));
  test::VecSink sink;
  AMN_TRY(execute_plan(plan, o.files, sink));
  return sink.bytes;
}

// A rejected file: its logical tensor carries `detect_error`, and converting fails with
// it; or (detect_error "") detection accepts it and executing fails with `execute_error`.
inline void check_rejected(Opened& o, const std::string& tensor, const std::string& scheme,
                           const std::string& detect_error, const std::string& execute_error) {
  REQUIRE(o.model);
  const LogicalTensor* l = logical(*o.model, tensor);
  REQUIRE(l);
  CHECK(l->scheme == scheme);
  CHECK(l->error == detect_error);
  auto plan = plan_convert(*o.model, cast_options(DType::BF16));
  if (!detect_error.empty()) {
    REQUIRE_FALSE(plan);
    CHECK(plan.error().code == ErrorCode::parse);
    CHECK(plan.error().message == "tensor '" + tensor + "' (" + scheme + "): " + detect_error);
    return;
  }
  REQUIRE(plan);
  VecSink sink;
  auto run = execute_plan(*plan, o.files, sink);
  REQUIRE_FALSE(run);
  CHECK(run.error().message == execute_error);
}

}  // namespace amn::test::schemes
