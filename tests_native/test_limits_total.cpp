// ParseLimits::max_total_bytes holds in every parser: safetensors headers and indexes,
// .npy, .npz, ZIP central directories, torch.save archives (ZIP and legacy) — not only
// GGUF and pickle. Each is opened with a budget too small for its headers (a limit error
// naming max_total_bytes and the parser) and with the default (it opens).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/json_syntax.h"
#include "core/limits.h"
#include "session/open.h"
#include "formats/zip/zip.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

struct Files {
  std::vector<std::vector<uint8_t>> bytes;
  FileSet set;
};

// `names` under fixtures/`dir`, the first being the entry, as a folder is declared.
std::unique_ptr<Files> load(const std::string& dir, const std::vector<std::string>& names) {
  auto f = std::make_unique<Files>();
  f->bytes.reserve(names.size());
  for (const auto& n : names) {
    f->bytes.push_back(read_file(fixture_path(dir + "/" + n)));
    REQUIRE(!f->bytes.back().empty());
    f->set.add(n, std::make_unique<MemorySource>(f->bytes.back()));
  }
  return f;
}

ParseLimits total(uint64_t bytes) {
  ParseLimits l;
  l.max_total_bytes = bytes;
  return l;
}

void check_refused(Result<Model> m, const std::string& who) {
  REQUIRE_FALSE(m);
  INFO(m.error().message);
  CHECK(m.error().code == ErrorCode::limit);
  CHECK_THAT(m.error().message, Catch::Contains(who + ": the header's data needs more than max_total_bytes"));
}

}  // namespace

TEST_CASE("max_total_bytes: a safetensors header (text, JSON tape, records)", "[limits]") {
  auto f = load("models/tiny-mlp", {"model.safetensors"});
  CHECK(open_model(f->set, {}));
  check_refused(open_model(f->set, total(1000)), "safetensors");
  // The text fits, the parser's tape (14 bytes per header byte) does not.
  const uint64_t n = f->set.size(0) > 8 ? (*open_model(f->set, {})).files[0].header_bytes - 8 : 0;
  auto tape = open_model(f->set, total(n * 8));
  check_refused(std::move(tape), "safetensors");
  // The text, the tape and the metadata fit, the first tensor's record does not: the
  // error names the tensor (its label is written only when a charge fails).
  uint64_t budget = n + n * kJsonDomBytesPerByte;
  auto record = open_model(f->set, total(budget));
  while (!record && Catch::Contains("at the metadata").match(record.error().message) && budget < n * 100) {
    record = open_model(f->set, total(++budget));
  }
  REQUIRE_FALSE(record);
  CHECK(record.error().code == ErrorCode::limit);
  CHECK_THAT(record.error().message, Catch::Contains("max_total_bytes") && Catch::Contains(", at tensor '"));
}

TEST_CASE("max_total_bytes: a safetensors index", "[limits]") {
  auto f = load("models/tiny-sharded", {"model.safetensors.index.json", "model-00001-of-00003.safetensors",
                                        "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"});
  CHECK(open_model(f->set, {}));
  check_refused(open_model(f->set, total(100)), "model.safetensors.index.json");
}

TEST_CASE("max_total_bytes: .npy and .npz (and the ZIP directory under them)", "[limits]") {
  auto npy = load("numpy/valid", {"f2_be.npy"});
  CHECK(open_model(npy->set, {}));
  check_refused(open_model(npy->set, total(64)), "npy");

  auto npz = load("numpy/valid", {"savez.npz"});
  CHECK(open_model(npz->set, {}));
  check_refused(open_model(npz->set, total(64)), "zip");
  // The directory fits, the arrays' headers after it do not.
  auto archive = zip::read_archive(npz->set, 0, {});
  REQUIRE(archive);
  REQUIRE(archive->memory > 0);
  CHECK(zip::read_archive(npz->set, 0, total(archive->memory)));
  check_refused(open_model(npz->set, total(archive->memory + 16)), "npz");
}

TEST_CASE("max_total_bytes: torch.save archives, ZIP and legacy", "[limits]") {
  for (const char* name : {"dtypes.pt", "legacy_dtypes.pt"}) {
    INFO(name);
    auto f = load("torch/valid", {name});
    auto whole = open_model(f->set, {});
    REQUIRE(whole);
    // Past the ZIP directory (or at once, for the legacy form), the pickle's own bytes:
    // refused by pth's budget before the pickle VM starts.
    uint64_t directory = 0;
    if (std::string(name) == "dtypes.pt") {
      auto archive = zip::read_archive(f->set, 0, {});
      REQUIRE(archive);
      directory = archive->memory;
    }
    check_refused(open_model(f->set, total(directory + 16)), "pth");
  }
}

TEST_CASE("MemoryBudget charges saturate and say where", "[limits]") {
  MemoryBudget b(total(100), "x");
  CHECK(b.charge(60, "a"));
  CHECK(b.remaining() == 40);
  auto over = b.charge(41, "the second thing", 7);
  REQUIRE_FALSE(over);
  CHECK(over.error().offset == 7);
  CHECK(over.error().message == "x: the header's data needs more than max_total_bytes (100) of memory, at the second thing");
  CHECK(b.remaining() == 0);
  CHECK_FALSE(b.charge(UINT64_MAX, "more"));
  CHECK(b.used() == UINT64_MAX);
}
