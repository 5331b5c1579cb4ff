// Config files read after the open (session/open.h read_late_config, the npm package's
// path opens): every safetensors fixture, opened with its config files declared up front
// (as the native amn does) and opened without them, then completed the late way unless
// config_matters_at_open says the configs could change the open, must give the same
// model-info document. This is what keeps config_matters_at_open honest: a detector that
// started using the config for tensors the rule calls plain would fail here.
#include <catch2/catch.hpp>

#include <filesystem>

#include "report/report.h"
#include "schemes/detect.h"
#include "session/open.h"
#include "support.h"

using namespace amn;
namespace fs = std::filesystem;

namespace {

struct Named {
  std::string name;  // as declared: "config.json", "quantize_config.json", ...
  std::vector<uint8_t> bytes;
};

// The config files of a fixture: `<stem>.<name>` beside it, else `<name>` in its folder.
std::vector<Named> configs_of(const fs::path& model) {
  std::vector<Named> out;
  const fs::path dir = model.parent_path();
  const std::string stem = model.stem().string();
  for (const char* name : kConfigFileNames) {
    for (const fs::path& p : {dir / (stem + "." + name), dir / name}) {
      if (fs::is_regular_file(p)) {
        out.push_back({name, test::read_file(p.string())});
        break;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("config files read late give the model an open with them gives", "[open][config]") {
  size_t late = 0, again = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::fixture_path(""))) {
    if (!e.is_regular_file() || e.path().extension() != ".safetensors") continue;
    const auto configs = configs_of(e.path());
    if (configs.empty()) continue;
    INFO(e.path().string());
    const auto bytes = test::read_file(e.path().string());

    FileSet all;
    all.add("model.safetensors", std::make_unique<MemorySource>(bytes));
    for (const auto& c : configs) all.add(c.name, std::make_unique<MemorySource>(c.bytes));
    auto with = open_model(all, {});

    FileSet alone;
    alone.add("model.safetensors", std::make_unique<MemorySource>(bytes));
    auto without = open_model(alone, {});
    if (!without) {  // a header the parser refuses: the configs are never reached
      REQUIRE(!with);
      CHECK(with.error().message == without.error().message);
      continue;
    }
    if (config_matters_at_open(*without)) {
      ++again;  // the shell declares the configs and opens again: the native open
      continue;
    }
    REQUIRE(with);  // a config cannot make an open fail when it does not matter
    for (const auto& c : configs) alone.add(c.name, std::make_unique<MemorySource>(c.bytes));
    REQUIRE(read_late_config(alone, {}, *without));
    CHECK(model_info_json(*without) == model_info_json(*with));
    CHECK(render_inspect(*without) == render_inspect(*with));
    ++late;
  }
  // Both ways are taken: quantized fixtures open again, plain ones (tiny-mlp) read late.
  CHECK(late >= 1);
  CHECK(again >= 20);
}

TEST_CASE("the config matters at open for packed weights and qweights, not for floats and buffers", "[open][config]") {
  Model m;
  m.format = ModelFormat::safetensors;
  TensorRecord t;
  t.name = "model.layers.0.mlp.down_proj.weight";
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I64, DType::BOOL}) {
    t.dtype = d;
    m.tensors = {t};
    CHECK_FALSE(config_matters_at_open(m));
  }
  for (DType d : {DType::I32, DType::U8, DType::I8, DType::U32, DType::F8_E4M3, DType::F8_E5M2, DType::I16, DType::U16}) {
    t.dtype = d;
    m.tensors = {t};
    CHECK(config_matters_at_open(m));
  }
  t.dtype = DType::F16;
  t.name = "model.layers.0.mlp.down_proj.qweight";
  m.tensors = {t};
  CHECK(config_matters_at_open(m));
  m.format = ModelFormat::gguf;  // GGUF keeps its own metadata; detection is safetensors'
  CHECK_FALSE(config_matters_at_open(m));
}

// detect_schemes leaves a model alone when none of its records is a detector's candidate
// and it has no quantization config: every fixture opened that way must be the model the
// detectors themselves make of it.
TEST_CASE("plain models skip detection and lose nothing by it", "[open][config]") {
  size_t plain = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::fixture_path(""))) {
    if (!e.is_regular_file() || e.path().extension() != ".safetensors") continue;
    INFO(e.path().string());
    const auto bytes = test::read_file(e.path().string());  // MemorySource views it
    FileSet alone;
    alone.add("model.safetensors", std::make_unique<MemorySource>(bytes));
    auto opened = open_model(alone, {});
    if (!opened || config_matters_at_open(*opened) || !opened->logical.empty()) continue;
    Model detected = *opened;
    REQUIRE(run_detectors(detected, alone));
    CHECK(detected.logical.empty());
    CHECK(detected.warnings == opened->warnings);
    CHECK(model_info_json(detected) == model_info_json(*opened));
    ++plain;
  }
  CHECK(plain >= 5);
}
