// Sharded output (convert/shard.h): boundaries, names, the index JSON and total_size,
// and Hugging Face's max-shard-size rule; every shard re-opens with the tensors' bytes.
#include <catch2/catch.hpp>

#include <map>

#include <simdjson.h>

#include "convert/execute.h"
#include "convert/shard.h"
#include "formats/gguf/kv_input.h"
#include "formats/gguf/parse.h"
#include "support.h"

using namespace amn;
using amn::test::make_safetensors;

namespace {

// A safetensors file of F32 tensors, each `name: n` elements whose values are i + base.
std::vector<uint8_t> f32_file(const std::vector<std::pair<std::string, uint64_t>>& tensors, float base) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::vector<uint8_t> data;
  for (const auto& [name, n] : tensors) {
    header += ",\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) + "],\"data_offsets\":[" +
              std::to_string(data.size()) + "," + std::to_string(data.size() + 4 * n) + "]}";
    for (uint64_t i = 0; i < n; ++i) {
      const float v = base + static_cast<float>(i);
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      data.insert(data.end(), p, p + 4);
    }
  }
  return make_safetensors(header + "}", data);
}

struct Opened {
  std::vector<std::vector<uint8_t>> bytes;  // MemorySource does not copy
  FileSet files;
  Model model;
};

std::unique_ptr<Opened> open_files(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& named) {
  auto out = std::make_unique<Opened>();
  out->bytes.reserve(named.size());
  for (const auto& [name, bytes] : named) {
    out->bytes.push_back(bytes);
    out->files.add(name, std::make_unique<MemorySource>(out->bytes.back()));
  }
  auto m = open_model(out->files, {});
  REQUIRE(m);
  out->model = std::move(m).value();
  return out;
}

// Three input shards: a (2 tensors), b (1), c (2); an index naming them.
std::unique_ptr<Opened> three_shards() {
  std::string index = R"({"metadata":{"total_size":0},"weight_map":{)"
                      R"("a.x":"model-00001-of-00003.safetensors","a.y":"model-00001-of-00003.safetensors",)"
                      R"("b.x":"model-00002-of-00003.safetensors",)"
                      R"("c.x":"model-00003-of-00003.safetensors","c.y":"model-00003-of-00003.safetensors"}})";
  return open_files({
      {"model.safetensors.index.json", std::vector<uint8_t>(index.begin(), index.end())},
      {"model-00001-of-00003.safetensors", f32_file({{"a.x", 4}, {"a.y", 2}}, 1)},
      {"model-00002-of-00003.safetensors", f32_file({{"b.x", 8}}, 10)},
      {"model-00003-of-00003.safetensors", f32_file({{"c.x", 1}, {"c.y", 3}}, 100)},
  });
}

std::vector<std::string> names_of(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& t : plan.tensors) out.push_back(t.name);
  return out;
}

std::vector<uint8_t> run(const Plan& plan, FileSet& files) {
  amn::test::VecSink sink;
  REQUIRE(execute_plan(plan, files, sink));
  REQUIRE(sink.bytes.size() == plan.output_bytes());
  return sink.bytes;
}

// The same tensors (names, dtypes, shapes, bytes) in both models.
void check_same_tensors(Opened& single, Opened& again) {
  REQUIRE(again.model.tensors.size() == single.model.tensors.size());
  for (const auto& t : single.model.tensors) {
    const TensorRecord* u = again.model.find(t.name);
    REQUIRE(u);
    CHECK(u->dtype == t.dtype);
    CHECK(u->shape == t.shape);
    auto a = single.files.read(t.file, t.offset, t.nbytes);
    auto b = again.files.read(u->file, u->offset, u->nbytes);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(std::equal(a->begin(), a->end(), b->begin(), b->end()));
  }
}

}  // namespace

TEST_CASE("a sharded input keeps its shard boundaries, names and index", "[shard]") {
  auto in = three_shards();
  REQUIRE(in->model.sharded);
  auto plan = plan_shards(in->model, cast_options(DType::BF16), {});
  REQUIRE(plan);
  REQUIRE(plan->shards.size() == 3);
  CHECK(plan->shards[0].name == "model-00001-of-00003.safetensors");
  CHECK(plan->shards[2].name == "model-00003-of-00003.safetensors");
  CHECK(names_of(plan->shards[0].plan) == std::vector<std::string>{"a.x", "a.y"});
  CHECK(names_of(plan->shards[1].plan) == std::vector<std::string>{"b.x"});
  CHECK(names_of(plan->shards[2].plan) == std::vector<std::string>{"c.x", "c.y"});
  CHECK(plan->total_size == (4 + 2 + 8 + 1 + 3) * 2);  // BF16 bytes of every tensor
  // json.dumps(index, indent=2, sort_keys=True) + "\n", as transformers writes it.
  CHECK(plan->index_json ==
        "{\n  \"metadata\": {\n    \"total_size\": 36\n  },\n  \"weight_map\": {\n"
        "    \"a.x\": \"model-00001-of-00003.safetensors\",\n"
        "    \"a.y\": \"model-00001-of-00003.safetensors\",\n"
        "    \"b.x\": \"model-00002-of-00003.safetensors\",\n"
        "    \"c.x\": \"model-00003-of-00003.safetensors\",\n"
        "    \"c.y\": \"model-00003-of-00003.safetensors\"\n  }\n}\n");

  // The shards, re-opened through the index, are the single-file conversion's tensors.
  auto whole = plan_convert(in->model, cast_options(DType::BF16));
  REQUIRE(whole);
  auto single = open_files({{"model.safetensors", run(*whole, in->files)}});
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out = {
      {"model.safetensors.index.json", std::vector<uint8_t>(plan->index_json.begin(), plan->index_json.end())}};
  for (const auto& s : plan->shards) out.emplace_back(s.name, run(s.plan, in->files));
  auto again = open_files(out);
  CHECK(again->model.sharded);
  check_same_tensors(*single, *again);
}

TEST_CASE("max shard size follows huggingface_hub's split rule", "[shard]") {
  // F32: a.x 16 B, a.y 8 B, b.x 32 B, c.x 4 B, c.y 12 B.
  auto in = three_shards();
  auto shards_of = [&](uint64_t max) {
    auto plan = plan_shards(in->model, cast_options(std::nullopt), {max});
    REQUIRE(plan);
    std::vector<std::vector<std::string>> out;
    for (const auto& s : plan->shards) out.push_back(names_of(s.plan));
    return out;
  };
  using G = std::vector<std::vector<std::string>>;
  // 24: a.x+a.y fill it; b.x (32) is larger than the limit, so it is a shard by itself,
  // appended when met, before the shard still being filled; c.x + c.y follow.
  CHECK(shards_of(24) == G{{"b.x"}, {"a.x", "a.y"}, {"c.x", "c.y"}});
  // 20: a.y would tip a.x's shard over; b.x is alone and comes before the shard being
  // filled (a.y), then c.x joins a.y and c.y tips it over.
  CHECK(shards_of(20) == G{{"a.x"}, {"b.x"}, {"a.y", "c.x"}, {"c.y"}});
  CHECK(shards_of(1000) == G{{"a.x", "a.y", "b.x", "c.x", "c.y"}});
  auto one = plan_shards(in->model, cast_options(std::nullopt), {1000});
  REQUIRE(one);
  CHECK(one->shards[0].name == "model.safetensors");  // one shard: no index, plain name
  CHECK(one->index_json.empty());
  CHECK(one->total_size == 72);
}

TEST_CASE("a one-file input gives one shard; GGUF output is not sharded", "[shard]") {
  auto in = open_files({{"model.safetensors", f32_file({{"w", 3}}, 0)}});
  auto plan = plan_shards(in->model, cast_options(DType::F16), {});
  REQUIRE(plan);
  REQUIRE(plan->shards.size() == 1);
  CHECK(plan->shards[0].name == "model.safetensors");
  ConvertOptions gguf;
  gguf.to = OutputFormat::gguf;
  auto g = plan_shards(in->model, gguf, {});
  REQUIRE_FALSE(g);
  CHECK(g.error().code == ErrorCode::unsupported);
}

// A GGUF conversion of three_shards() split with `shard`: the files, each run.
std::vector<std::pair<std::string, std::vector<uint8_t>>> gguf_split_files(Opened& in, ShardOptions shard) {
  ConvertOptions gguf;
  gguf.to = OutputFormat::gguf;
  gguf.gguf_kv.push_back(parse_gguf_kv_arg("general.name=three").value());
  shard.split_prefix = "three-f32";
  auto plan = plan_shards(in.model, gguf, shard);
  REQUIRE(plan);
  CHECK(plan->index_json.empty());
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (const auto& s : plan->shards) out.emplace_back(s.name, run(s.plan, in.files));
  return out;
}

std::vector<std::vector<std::string>> gguf_groups(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& files) {
  std::vector<std::vector<std::string>> out;
  for (const auto& [name, bytes] : files) {
    FileSet set;
    set.add(name, std::make_unique<MemorySource>(std::span<const uint8_t>(bytes)));
    auto g = parse_gguf(set, 0, {});
    REQUIRE(g);
    out.emplace_back();
    for (const auto& t : g->tensors) out.back().push_back(t.name);
  }
  return out;
}

TEST_CASE("GGUF output splits as gguf-split: names, KVs, sizes, tensor counts", "[shard][gguf]") {
  using G = std::vector<std::vector<std::string>>;
  auto in = three_shards();
  ShardOptions by_count;
  by_count.split_max_tensors = 2;
  const auto files = gguf_split_files(*in, by_count);
  REQUIRE(files.size() == 3);
  CHECK(files[0].first == "three-f32-00001-of-00003.gguf");
  CHECK(files[2].first == "three-f32-00003-of-00003.gguf");
  CHECK(gguf_groups(files) == G{{"a.x", "a.y"}, {"b.x", "c.x"}, {"c.y"}});
  for (size_t k = 0; k < files.size(); ++k) {
    FileSet set;
    set.add(files[k].first, std::make_unique<MemorySource>(std::span<const uint8_t>(files[k].second)));
    auto g = parse_gguf(set, 0, {});
    REQUIRE(g);
    // gguf-split: every KV in the first file only, then split.no (UINT16),
    // split.tensors.count (INT32), split.count (UINT16) in each, in that order.
    CHECK((g->find("general.name") != nullptr) == (k == 0));
    const size_t n = g->kv.size();
    REQUIRE(n >= 3);
    CHECK(g->kv[n - 3].first == "split.no");
    CHECK(g->kv[n - 3].second.type == GgufType::UINT16);
    CHECK(g->kv[n - 3].second.u == k);
    CHECK(g->kv[n - 2].first == "split.tensors.count");
    CHECK(g->kv[n - 2].second.type == GgufType::INT32);
    CHECK(g->kv[n - 2].second.i == 5);
    CHECK(g->kv[n - 1].first == "split.count");
    CHECK(g->kv[n - 1].second.type == GgufType::UINT16);
    CHECK(g->kv[n - 1].second.u == 3);
  }

  // Sizes count each tensor padded to 32 bytes (F32: a.x 16, a.y 8, b.x 32, c.x 4, c.y 12
  // bytes: 32 each); a file closes before a tensor that would pass the maximum.
  ShardOptions by_size;
  by_size.split_max_bytes = 64;
  CHECK(gguf_groups(gguf_split_files(*in, by_size)) == G{{"a.x", "a.y"}, {"b.x", "c.x"}, {"c.y"}});
  by_size.split_max_bytes = 95;
  CHECK(gguf_groups(gguf_split_files(*in, by_size)) == G{{"a.x", "a.y"}, {"b.x", "c.x"}, {"c.y"}});
  by_size.split_max_bytes = 96;
  CHECK(gguf_groups(gguf_split_files(*in, by_size)) == G{{"a.x", "a.y", "b.x"}, {"c.x", "c.y"}});
  // Smaller than one tensor: one tensor a file (gguf-split itself fails on the first).
  by_size.split_max_bytes = 10;
  CHECK(gguf_split_files(*in, by_size).size() == 5);

  // The split set opens as one model (amn's reader), with the unsplit file's bytes.
  ConvertOptions gguf;
  gguf.to = OutputFormat::gguf;
  gguf.gguf_kv.push_back(parse_gguf_kv_arg("general.name=three").value());
  auto whole = plan_convert(in->model, gguf);
  REQUIRE(whole);
  auto single = open_files({{"three-f32.gguf", run(*whole, in->files)}});
  auto again = open_files(files);
  CHECK(again->model.sharded);
  check_same_tensors(*single, *again);
  CHECK(gguf_split_file_name("out", 2, 17) == "out-00002-of-00017.gguf");
  CHECK(parse_split_size("2G").value() == 2000000000ull);
  CHECK(parse_split_size("500M").value() == 500000000ull);
  CHECK(parse_split_size("1GiB").value() == 1ull << 30);
  CHECK_FALSE(parse_split_size("2X"));
}

TEST_CASE("shard sizes parse as transformers writes them", "[shard]") {
  CHECK(parse_shard_size("5GB").value() == 5000000000ull);
  CHECK(parse_shard_size("500MiB").value() == 500ull << 20);
  CHECK(parse_shard_size("1.5GB").value() == 1500000000ull);
  CHECK(parse_shard_size("2kb").value() == 2000);
  CHECK(parse_shard_size("4096").value() == 4096);
  CHECK(parse_shard_size("10 MB").value() == 10000000);
  for (const char* bad : {"", "GB", "5XB", "-1GB", "1.2.3MB", "0", "0.1B", "99999999999TB"}) {
    auto r = parse_shard_size(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
  }
  CHECK(shard_file_name(12, 345) == "model-00012-of-00345.safetensors");
}

TEST_CASE("GGUF split files equal gguf-split's (fixtures/gguf_split)", "[shard][gguf]") {
  const auto input = amn::test::read_file(amn::test::fixture_path("gguf_split/split_input.gguf"));
  auto in = open_files({{"split_input.gguf", input}});
  ConvertOptions gguf;
  gguf.to = OutputFormat::gguf;
  ShardOptions shard;
  shard.split_max_tensors = 2;
  shard.split_prefix = "split";
  auto plan = plan_shards(in->model, gguf, shard);
  REQUIRE(plan);
  REQUIRE(plan->shards.size() == 3);
  for (const auto& s : plan->shards) {
    INFO(s.name);
    CHECK(run(s.plan, in->files) == amn::test::read_file(amn::test::fixture_path("gguf_split/" + s.name)));
  }
}

TEST_CASE("GGUF keep-split: a gguf-split set converted file by file is the same files", "[shard][gguf]") {
  // fixtures/gguf_ftype: gguf-split's three files of the tied model. Each output file holds
  // its input file's tensors with gguf-split's KV order (forget writes llama-quantize's).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> named;
  for (int k = 1; k <= 3; ++k) {
    const std::string name = "tiny-tied-split-0000" + std::to_string(k) + "-of-00003.gguf";
    named.emplace_back(name, amn::test::read_file(amn::test::fixture_path("gguf_ftype/" + name)));
  }
  auto in = open_files(named);
  ConvertOptions gguf;
  gguf.to = OutputFormat::gguf;
  ShardOptions shard;
  shard.keep_split = true;
  shard.split_prefix = "tiny-tied-split";
  auto plan = plan_shards(in->model, gguf, shard);
  REQUIRE(plan);
  REQUIRE(plan->shards.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    INFO(plan->shards[k].name);
    CHECK(plan->shards[k].name == named[k].first);
    CHECK(run(plan->shards[k].plan, in->files) == named[k].second);
  }
}
