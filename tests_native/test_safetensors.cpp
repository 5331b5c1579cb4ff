#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include <simdjson.h>

#include "convert/execute.h"
#include "convert/plan.h"
#include "formats/safetensors/parse.h"
#include "formats/safetensors/write.h"
#include "support.h"

using namespace amn;
using amn::test::make_safetensors;
using amn::test::open_memory;

namespace {

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string error_of(const std::vector<uint8_t>& file) {
  auto m = open_memory(file);
  REQUIRE_FALSE(m);
  return std::string(error_code_name(m.error().code)) + ": " + m.error().message;
}

}  // namespace

TEST_CASE("a small valid file parses with offsets, metadata and counts", "[safetensors]") {
  auto data = f32_bytes({1, 2, 3, 4, 5, 6});
  data.push_back(7);
  auto file = make_safetensors(
      R"({"__metadata__":{"format":"pt","note":"h\u00e9"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"U8","shape":[1],"data_offsets":[24,25]}})",
      data);
  auto m = open_memory(file);
  REQUIRE(m);
  CHECK(m->format == amn::ModelFormat::safetensors);
  REQUIRE(m->tensors.size() == 2);
  CHECK(m->tensors[0].name == "w");
  CHECK(m->tensors[0].shape == std::vector<uint64_t>{2, 3});
  CHECK(m->tensors[0].offset == m->files[0].header_bytes);
  CHECK(m->tensors[1].offset == m->files[0].header_bytes + 24);
  CHECK(m->parameter_count() == 7);
  CHECK(m->tensor_bytes() == 25);
  REQUIRE(m->metadata.size() == 2);
  CHECK(m->metadata[1].second == "h\xc3\xa9");
}

TEST_CASE("each header defect has its own message", "[safetensors]") {
  const auto four = f32_bytes({1});
  CHECK_THAT(error_of({1, 2, 3}), Catch::Contains("shorter than 8 bytes"));
  CHECK_THAT(error_of(make_safetensors(R"([])", four)), Catch::Contains("not a JSON object"));
  // JSON faults in words, with their file offset (the header starts at byte 8).
  CHECK_THAT(error_of(make_safetensors(R"({"a":1,})", four)),
             Catch::Contains("invalid JSON in header: expected a string key, found '}' at byte 15"));
  CHECK_THAT(error_of(make_safetensors("{\"a\xff\":1}", four)),
             Catch::Contains("invalid JSON in header: invalid UTF-8 (byte 0xFF) at byte 11"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four)),
             Catch::Contains("duplicate tensor name"));
  // Names in messages go through core/text.h's quote: control characters and DEL as '?'.
  CHECK_THAT(error_of(make_safetensors("{\"a\x7f\\u0001b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                       "\"a\x7f\\u0001b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", four)),
             Catch::Contains("duplicate tensor name 'a??b'"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", four)),
             Catch::Contains("unknown dtype"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four)),
             Catch::Contains("size mismatch"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_bytes({1, 2}))),
             Catch::Contains("hole before the first tensor"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", f32_bytes({1, 2, 3}))),
             Catch::Contains("hole"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_bytes({1, 2}))),
             Catch::Contains("overlap"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1, 2}))),
             Catch::Contains("trailing"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four)),
             Catch::Contains("truncated"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,4]}})", four)),
             Catch::Contains("overflows"));
  CHECK_THAT(error_of(make_safetensors(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", {0, 0})),
             Catch::Contains("whole number of bytes"));
  CHECK_THAT(error_of(make_safetensors(R"({"__metadata__":{"k":1}})", {})), Catch::Contains("not a string"));
}

TEST_CASE("a header length that cannot fit the file says: not a safetensors file", "[safetensors]") {
  std::vector<uint8_t> file(16, 0);
  const uint64_t n = 100'000'001;
  for (int i = 0; i < 8; ++i) file[i] = static_cast<uint8_t>(n >> (8 * i));
  auto m = open_memory(file);
  REQUIRE_FALSE(m);
  CHECK(m.error().code == ErrorCode::parse);
  CHECK(m.error().message ==
        "safetensors: not a safetensors file: its first 8 bytes, read as the header length, say 100000001 bytes, "
        "but only 8 bytes follow them");
  // The issue's example: a text file under a .safetensors name.
  const std::string text = "This is a README saved under the wrong name; it holds no tensors.\n";
  auto t = open_memory(std::vector<uint8_t>(text.begin(), text.end()));
  REQUIRE_FALSE(t);
  CHECK(t.error().code == ErrorCode::parse);
  CHECK_THAT(t.error().message, Catch::Contains("not a safetensors file"));
}

TEST_CASE("a header length that fits the file but passes the format maximum is a limit error", "[safetensors]") {
  // A 100 MB file, sparse: only its first window is ever fed.
  const uint64_t n = 100'000'001, size = 8 + n + 64;
  std::vector<uint8_t> head(kSafetensorsReadAhead, ' ');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<uint8_t>(n >> (8 * i));
  head[8] = '{';
  FileSet set;
  auto source = std::make_unique<SparseSource>(size);
  REQUIRE(source->add_copy(0, head));
  set.add("big.safetensors", std::move(source));
  auto m = open_model(set, {});
  REQUIRE_FALSE(m);
  CHECK(m.error().code == ErrorCode::limit);
  CHECK_THAT(m.error().message, Catch::Contains("header too large: length 100000001"));
}

TEST_CASE("an index that is not JSON says what is wrong and where", "[safetensors]") {
  const std::string text = R"({"weight_map": {"a": "a.safetensors",}})";
  const std::vector<uint8_t> index(text.begin(), text.end());  // MemorySource views it
  FileSet set;
  set.add("model.safetensors.index.json", std::make_unique<MemorySource>(index));
  auto m = open_model(set, {});
  REQUIRE_FALSE(m);
  CHECK(m.error().code == ErrorCode::parse);
  CHECK_THAT(m.error().message,
             Catch::Contains("model.safetensors.index.json: not valid JSON: expected a string key, found '}' at byte 37"));
  CHECK(m.error().offset == 37);
}

TEST_CASE("a remote-style open takes one round for small headers, two for large", "[safetensors]") {
  auto file = make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1}));
  auto one = amn::test::open_sparse({{"m.safetensors", file}});
  REQUIRE(one.model);
  CHECK(one.rounds == 2);  // round 1 asks, round 2 parses
  CHECK(one.bytes_fed == file.size());

  std::string header = "{";
  std::vector<uint8_t> data;
  for (int i = 0; i < 3000; ++i) {
    if (i) header += ",";
    header += "\"layer." + std::to_string(i) + ".weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(i * 4) + "," + std::to_string(i * 4 + 4) + "]}";
    auto b = f32_bytes({static_cast<float>(i)});
    data.insert(data.end(), b.begin(), b.end());
  }
  header += "}";
  REQUIRE(header.size() > kSafetensorsReadAhead);
  auto big = make_safetensors(header, data);
  auto two = amn::test::open_sparse({{"m.safetensors", big}});
  REQUIRE(two.model);
  CHECK(two.rounds == 3);
  CHECK(two.bytes_fed == big.size() - data.size());  // the header, nothing of the data
  CHECK(two.model->tensors.size() == 3000);
}

TEST_CASE("the writer's header re-parses and is 8-byte aligned", "[safetensors][write]") {
  std::vector<TensorSpec> specs = {{"we\"ird\\name\n", DType::BF16, {2, 2}, 8}, {"s", DType::F32, {}, 4}};
  std::vector<std::pair<std::string, std::string>> meta = {{"format", "pt"}};
  auto header = safetensors_header(specs, meta);
  CHECK(header.size() % 8 == 0);
  std::vector<uint8_t> file = header;
  file.resize(header.size() + 12, 0);
  auto m = open_memory(file);
  REQUIRE(m);
  REQUIRE(m->tensors.size() == 2);
  CHECK(m->tensors[0].name == "we\"ird\\name\n");
  CHECK(m->tensors[1].shape.empty());
  CHECK(m->tensors[1].elements == 1);
  CHECK(m->metadata == meta);
}

TEST_CASE("convert plans split large casts and produce a re-readable file", "[safetensors][convert]") {
  std::vector<uint8_t> data = f32_bytes({1.0f, -2.5f, 3.14159f, 65504.0f});
  data.push_back(42);
  auto file = make_safetensors(
      R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"i":{"dtype":"I8","shape":[1],"data_offsets":[16,17]}})",
      data);
  FileSet set;
  set.add("m.safetensors", std::make_unique<MemorySource>(file));
  auto m = open_model(set, {});
  REQUIRE(m);
  auto plan = plan_convert(*m, cast_options(DType::BF16));
  REQUIRE(plan);
  CHECK(plan->tensors[0].dtype == DType::BF16);
  CHECK(plan->tensors[1].dtype == DType::I8);  // not a float: copied as stored
  struct VecSink : Sink {
    std::vector<uint8_t> bytes;
    Status write(std::span<const uint8_t> b) override {
      bytes.insert(bytes.end(), b.begin(), b.end());
      return {};
    }
  } sink;
  REQUIRE(execute_plan(*plan, set, sink));
  auto out = open_memory(sink.bytes);
  REQUIRE(out);
  const auto& t = out->tensors[0];
  const uint8_t* p = sink.bytes.data() + t.offset;
  // 1.0 -> 0x3F80, -2.5 -> 0xC020, 3.14159 -> 0x4049, 65504 -> 0x4780 (RNE)
  CHECK((p[0] | p[1] << 8) == 0x3F80);
  CHECK((p[2] | p[3] << 8) == 0xC020);
  CHECK((p[4] | p[5] << 8) == 0x4049);
  CHECK((p[6] | p[7] << 8) == 0x4780);
  CHECK(sink.bytes.back() == 42);

  // A tensor larger than one piece is split without losing elements.
  const uint64_t n = kMaxPieceBytes / 2 + 3;  // bf16 output > one piece
  TensorRecord big{"big", DType::F32, {n}, n, 0, 0, n * 4};
  Model fake;
  fake.files.push_back({"x", n * 4, 0});
  fake.tensors.push_back(big);
  auto split = plan_convert(fake, cast_options(DType::BF16));
  REQUIRE(split);
  CHECK(split->pieces.size() == 3);
  uint64_t total = 0;
  for (const auto& piece : split->pieces) total += piece.count;
  CHECK(total == n);
  CHECK(split->data_bytes == n * 2);
}

TEST_CASE("unrecognised files are unsupported, not parse errors", "[open]") {
  std::vector<uint8_t> junk(100, 'x');
  auto m = open_memory(junk, "weights.bin");
  REQUIRE_FALSE(m);
  CHECK(m.error().code == ErrorCode::unsupported);
}

TEST_CASE("model_files_in_folder picks the index, else every shard", "[open]") {
  CHECK(model_files_in_folder({"config.json", "b.safetensors", "a.safetensors", "README.md"}) ==
        std::vector<std::string>{"a.safetensors", "b.safetensors", "config.json"});
  CHECK(model_files_in_folder({"model.safetensors.index.json", "model-00001-of-00002.safetensors"}) ==
        std::vector<std::string>{"model.safetensors.index.json", "model-00001-of-00002.safetensors"});
  CHECK(model_files_in_folder({"README.md"}).empty());
  // The quantizers' own configs follow config.json, in GPTQModel's lookup order; alone
  // they are not a model.
  CHECK(model_files_in_folder({"quant_config.json", "model.safetensors", "quantize_config.json", "config.json"}) ==
        std::vector<std::string>{"model.safetensors", "config.json", "quantize_config.json", "quant_config.json"});
  CHECK(model_files_in_folder({"quantize_config.json", "config.json"}).empty());
  // Without safetensors or GGUF: a PyTorch index (it names its shards), else the first
  // PyTorch file, else the first NumPy file; config.json rides along.
  CHECK(model_files_in_folder({"pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json", "config.json"}) ==
        std::vector<std::string>{"pytorch_model.bin.index.json", "config.json"});
  CHECK(model_files_in_folder({"b.npz", "a.pth", "x.npy"}) == std::vector<std::string>{"a.pth"});
  CHECK(model_files_in_folder({"b.npz", "x.npy"}) == std::vector<std::string>{"b.npz"});
  CHECK(model_files_in_folder({"model.safetensors", "pytorch_model.bin"}) == std::vector<std::string>{"model.safetensors"});
}

// The broken fixtures (fixtures/safetensors/broken/manifest.json): each is rejected with
// its code and message, through the sparse (remote-style) path too.
TEST_CASE("every broken fixture is rejected with its specific error", "[safetensors][fixtures]") {
  const auto manifest = amn::test::read_file(amn::test::fixture_path("safetensors/broken/manifest.json"));
  REQUIRE(!manifest.empty());
  simdjson::dom::parser parser;
  simdjson::dom::array entries;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(manifest.data()), manifest.size()).get_array().get(entries));
  size_t count = 0;
  for (auto e : entries) {
    std::string_view file, code, contains;
    REQUIRE(!e["file"].get_string().get(file));
    REQUIRE(!e["code"].get_string().get(code));
    REQUIRE(!e["contains"].get_string().get(contains));
    const auto bytes = amn::test::read_file(amn::test::fixture_path("safetensors/broken/" + std::string(file)));
    auto m = open_memory(bytes);
    INFO(file);
    REQUIRE_FALSE(m);
    CHECK(error_code_name(m.error().code) == code);
    std::string lower = m.error().message;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string want(contains);
    for (auto& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    CHECK_THAT(lower, Catch::Contains(want));
    ++count;
  }
  CHECK(count >= 30);
}

// The valid fixtures parse to exactly what the generator recorded.
TEST_CASE("every valid fixture parses to its expected records", "[safetensors][fixtures]") {
  for (const auto& entry : std::filesystem::directory_iterator(amn::test::fixture_path("safetensors/expected"))) {
    const auto text = amn::test::read_file(entry.path().string());
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    REQUIRE(!parser.parse(reinterpret_cast<const char*>(text.data()), text.size()).get(expected));
    std::string_view file;
    REQUIRE(!expected["file"].get_string().get(file));
    INFO(file);
    auto m = open_memory(amn::test::read_file(amn::test::fixture_path("safetensors/" + std::string(file))));
    REQUIRE(m);
    simdjson::dom::array tensors;
    REQUIRE(!expected["tensors"].get_array().get(tensors));
    REQUIRE(m->tensors.size() == tensors.size());
    for (auto t : tensors) {
      std::string_view name, dtype;
      uint64_t offset, nbytes;
      REQUIRE(!t["name"].get_string().get(name));
      REQUIRE(!t["dtype"].get_string().get(dtype));
      REQUIRE(!t["offset"].get_uint64().get(offset));
      REQUIRE(!t["nbytes"].get_uint64().get(nbytes));
      const TensorRecord* found = m->find(name);
      REQUIRE(found);
      const auto& got = *found;
      CHECK(dtype_name(got.dtype) == dtype);
      CHECK(got.offset == offset);
      CHECK(got.nbytes == nbytes);
      std::vector<uint64_t> shape;
      simdjson::dom::array dims;
      REQUIRE(!t["shape"].get_array().get(dims));
      for (auto d : dims) shape.push_back(d.get_uint64().value_unsafe());
      CHECK(got.shape == shape);
    }
  }
}

TEST_CASE("a broken config.json is a warning in words, with the byte", "[safetensors]") {
  auto file = make_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1}));
  const std::string config = R"({"model_type": "llama",})";
  auto opened = amn::test::open_sparse({{"model.safetensors", file},
                                        {"config.json", std::vector<uint8_t>(config.begin(), config.end())}});
  REQUIRE(opened.model);
  REQUIRE(opened.model->warnings.size() == 1);
  CHECK(opened.model->warnings[0] ==
        "config.json is not valid JSON (expected a string key, found '}' at byte 23); ignored");
}
