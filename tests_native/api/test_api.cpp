// The public C++ API as a program sees it: only <anamnesis/anamnesis.hpp>, linked against
// libanamnesis.so. What the examples do not cover: errors and their codes, limits, the
// default output name, refusals, overwriting and cancelling.
#include <anamnesis/anamnesis.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using anamnesis::ConvertOptions;
using anamnesis::Model;

namespace {

const std::string kFixtures = AMN_FIXTURES_DIR;
const std::string kMlp = kFixtures + "/models/tiny-mlp/model.safetensors";

// A scratch folder holding a copy of tiny-mlp, removed afterwards.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("amn-api-test-" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(kMlp, dir / "model.safetensors");
  }
  ~Scratch() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("api: open reports errors with their stable codes") {
  auto missing = Model::open(kFixtures + "/no-such-model.safetensors");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == "io");
  CHECK(missing.error().offset == -1);

  anamnesis::Limits zero;
  zero.max_item_count = 0;
  auto bad = Model::open(kMlp, zero);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == "invalid_argument");
  CHECK(bad.error().message.find("maxItemCount") != std::string::npos);

  anamnesis::Limits tight;
  tight.max_item_count = 3;  // tiny-mlp has 11 tensors
  auto limited = Model::open(kMlp, tight);
  REQUIRE_FALSE(limited);
  CHECK(limited.error().code == "limit");
}

TEST_CASE("api: listing and reports") {
  auto model = Model::open(kMlp);
  REQUIRE(model);
  CHECK(model->format() == "safetensors");
  const auto tensors = model->tensors();
  REQUIRE(tensors.size() == 11);
  CHECK(tensors.back().name == "model.layers.0.fc2.weight");
  CHECK(tensors.back().dtype == "BF16");
  CHECK(tensors.back().bytes == 8192);
  CHECK(model->info_json().rfind("{\n  \"amn_info_version\": 1,\n  \"format\": \"safetensors\"", 0) == 0);
  CHECK(model->inspect_text().find("parameters") != std::string::npos);
  CHECK(std::string(anamnesis::version()) == "0.1.0");
  CHECK(std::string(anamnesis::implementation()).size() > 0);
}

TEST_CASE("api: a quantized weight is one tensor, read dequantized") {
  auto model = Model::open(kFixtures + "/quantized/gptq/w4_g128_sym_v1/model.safetensors");
  REQUIRE(model);
  const auto tensors = model->tensors();
  REQUIRE(tensors.size() == 1);
  CHECK(tensors[0].scheme == "gptq");
  CHECK(tensors[0].dtype == "F16");
  auto t = model->tensor(tensors[0].name);
  REQUIRE(t);
  CHECK(t->dtype == "F16");
  CHECK(t->data.size() == 256 * 512 * 2);
  auto expected = Model::open(kFixtures + "/quantized/gptq/w4_g128_sym_v1/expected.safetensors");
  REQUIRE(expected);
  auto want = expected->tensor(tensors[0].name);
  REQUIRE(want);
  CHECK(t->data == want->data);
}

TEST_CASE("api: tensor errors") {
  auto model = Model::open(kMlp);
  REQUIRE(model);
  auto none = model->tensor("nope");
  REQUIRE_FALSE(none);
  CHECK(none.error().code == "not_found");
  auto bogus = model->tensor("model.final_norm.bias", "f8");
  REQUIRE_FALSE(bogus);
  CHECK(bogus.error().code == "invalid_argument");
  auto cast = model->tensor("model.final_norm.bias", "bf16");
  REQUIRE(cast);
  CHECK(cast->dtype == "BF16");
  CHECK(cast->shape == std::vector<uint64_t>{32});
  CHECK(cast->data.size() == 64);
}

TEST_CASE("api: convert names, refuses, overwrites and cancels as amn does") {
  Scratch scratch;
  auto model = Model::open((scratch.dir / "model.safetensors").string());
  REQUIRE(model);
  ConvertOptions options;
  options.dtype = "bf16";
  options.sync = false;
  auto written = model->convert(options);
  REQUIRE(written);
  CHECK(written->path == (scratch.dir / "model-bf16.safetensors").string());  // amn's default name
  CHECK_FALSE(written->folder);
  CHECK(written->files == std::vector<std::string>{written->path});
  CHECK(written->tensors == 11);
  CHECK(fs::file_size(written->path) == written->bytes);

  auto again = model->convert(options);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == "exists");
  CHECK(again.error().message.find("overwrite") != std::string::npos);

  options.overwrite = true;
  int calls = 0;
  options.progress = [&](uint64_t, uint64_t) { return ++calls < 2; };  // cancel at the second call
  options.output = (scratch.dir / "cancelled.safetensors").string();
  auto cancelled = model->convert(options);
  REQUIRE_FALSE(cancelled);
  CHECK(cancelled.error().code == "cancelled");
  CHECK_FALSE(fs::exists(options.output));
  for (const auto& entry : fs::directory_iterator(scratch.dir)) {
    CHECK(entry.path().filename().string().rfind(".amn-tmp", 0) != 0);  // no temporary left
  }

  options.progress = nullptr;
  options.output = (scratch.dir / "model.safetensors").string();
  auto input = model->convert(options);
  REQUIRE_FALSE(input);
  CHECK(input.error().code == "invalid_argument");  // never an input, even with overwrite

  options.output.clear();
  options.shards = anamnesis::Shards::one;
  options.max_shard_bytes = 1000;
  auto contradiction = model->convert(options);
  REQUIRE_FALSE(contradiction);
  CHECK(contradiction.error().code == "invalid_argument");
  CHECK(contradiction.error().message.find("maxShardSize") != std::string::npos);

  ConvertOptions gguf;
  gguf.to = "gguf";
  gguf.shards = anamnesis::Shards::input;
  auto unsupported = model->convert(gguf);
  REQUIRE_FALSE(unsupported);
  CHECK(unsupported.error().code == "unsupported");
}
