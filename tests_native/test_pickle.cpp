// The pickle VM: values CPython's pickle writes (protocols 0-5), the allowlist verdicts,
// and the hostile pickles (one defect each, fixtures/pickle/manifest.json), which must be
// refused with their specific code and message, within bounded memory.
#include <catch2/catch.hpp>
#include <simdjson.h>

#include "formats/pickle/vm.h"
#include "formats/pth/torch_globals.h"
#include "formats/pth/walk.h"
#include "support.h"

using namespace amn;
using amn::test::jv;
using pickle::Kind;

namespace {

Result<pickle::Pickle> run_bytes(const std::vector<uint8_t>& b, const ParseLimits& limits = {}) {
  pickle::Options o;
  o.allowed = pth::torch_global_allowed;
  return pickle::run(b, limits, o);
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

// Pickles as CPython wrote them (/usr/bin/python3 -c "print(pickle.dumps(...).hex())").
std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// The VM and then the checkpoint walk: the hostile files that only a walk of the value
// graph can expose (memo replay, cycles) fail there.
Status run_and_walk(const std::vector<uint8_t>& b, const ParseLimits& limits) {
  AMN_ASSIGN(auto p, run_bytes(b, limits));
  AMN_ASSIGN(auto w, pth::walk_checkpoint(p, false, limits));
  (void)w;
  return {};
}

}  // namespace

TEST_CASE("pickle: protocol 2 values from CPython", "[pickle]") {
  // pickle.dumps({'a': [1, -2, 2**40, 1.5, None, True], 'b': (b'xy', 'é'), 'c': {3}}, 2):
  // protocol 2 writes bytes through _codecs.encode and sets through __builtin__.set.
  const auto b = from_hex(
      "80027d71002858010000006171015d7102284b014afeffffff8a06000000000001473ff80000000000004e88655801000000627103635f"
      "636f646563730a656e636f64650a710458020000007879710558060000006c6174696e3171068671075271085802000000c3a9710986710a"
      "580100000063710b635f5f6275696c74696e5f5f0a7365740a710c5d710d4b036185710e52710f752e");
  auto p = run_bytes(b);
  if (!p) FAIL(p.error().message);
  CHECK(p->protocol == 2);
  CHECK(p->end == b.size());
  const auto& root = p->at(p->root);
  REQUIRE(root.kind == Kind::dict);
  REQUIRE(root.entries.size() == 6);
  const auto& list = p->at(root.entries[1]);
  REQUIRE(list.kind == Kind::list);
  REQUIRE(list.items.size() == 6);
  CHECK(p->at(list.items[0]).integer == 1);
  CHECK(p->at(list.items[1]).integer == -2);
  CHECK(p->at(list.items[2]).integer == (int64_t{1} << 40));
  CHECK(p->at(list.items[3]).floating == 1.5);
  CHECK(p->at(list.items[4]).kind == Kind::none);
  CHECK(p->at(list.items[5]).boolean);
  REQUIRE(p->globals.size() == 2);
  CHECK(pickle::global_name(p->globals[0]) == "_codecs.encode");
  CHECK(p->globals[0].allowed);
  CHECK(pickle::global_name(p->globals[1]) == "__builtin__.set");
  CHECK(pth::value_json(*p, p->root) == R"({"a":[1,-2,1099511627776,1.5,null,true],"b":[{"bytes":2},"é"],"c":[3]})");
}

TEST_CASE("pickle: protocol 4 framing, memoize and stack globals", "[pickle]") {
  // pickle.dumps([{'k': 1}, {'k': 1}], 4): the second dict's key is a memo GET.
  const auto b = from_hex("80049515000000000000005d94287d948c016b944b01737d9468024b0173652e");
  auto p = run_bytes(b);
  if (!p) FAIL(p.error().message);
  CHECK(p->protocol == 4);
  CHECK(pth::value_json(*p, p->root) == R"([{"k":1},{"k":1}])");
}

TEST_CASE("pickle: the allowlist names every refused global", "[pickle]") {
  const auto b = bytes_of("\x80\x02(cos\nsystem\ncbuiltins\neval\ncos\nsystem\nl.");
  auto p = run_bytes(b);
  REQUIRE(!p);
  CHECK(p.error().code == ErrorCode::disallowed_global);
  CHECK(p.error().message == "pickle: refers to globals outside the allowlist (never called): os.system, builtins.eval");
  CHECK(p.error().offset == 3);
}

TEST_CASE("pickle: hostile files, one defect each", "[pickle]") {
  simdjson::dom::parser parser;
  auto manifest = parser.load(test::fixture_path("pickle/manifest.json"));
  REQUIRE(!manifest.error());
  size_t n = 0;
  for (auto e : jv(manifest.get_array())) {
    const std::string file(jv(e["file"].get_string()));
    INFO(file);
    ParseLimits limits;
    uint64_t items = 0;
    if (!e["limits"]["max_item_count"].get(items)) limits.max_item_count = items;
    const auto bytes = test::read_file(test::fixture_path("pickle/hostile/" + file));
    REQUIRE(!bytes.empty());
    auto r = run_and_walk(bytes, limits);
    REQUIRE(!r);
    CHECK(error_code_name(r.error().code) == jv(e["code"].get_string()));
    CHECK_THAT(r.error().message, Catch::Contains(std::string(jv(e["contains"].get_string()))));
    ++n;
  }
  CHECK(n >= 20);
}

TEST_CASE("pickle: a NONE flood fits the default limits only within max_item_count", "[pickle]") {
  std::vector<uint8_t> flood = {0x80, 0x02};
  flood.insert(flood.end(), 5000, 'N');
  flood.push_back('.');
  CHECK(run_bytes(flood));  // 5000 stack slots: fine by default
  ParseLimits tight;
  tight.max_item_count = 4000;
  auto r = run_bytes(flood, tight);
  REQUIRE(!r);
  CHECK(r.error().code == ErrorCode::limit);
}

TEST_CASE("pickle: a window that ends early asks for more only when told it may", "[pickle]") {
  const auto b = from_hex("80025d7100284b014b02652e");  // pickle.dumps([1, 2], 2)
  for (size_t n = 0; n < b.size(); ++n) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    pickle::Options o;
    o.more_may_follow = true;
    auto r = pickle::run(cut, {}, o);
    REQUIRE(!r);
    CHECK(r.error().code == ErrorCode::need_bytes);
    o.more_may_follow = false;
    auto s = pickle::run(cut, {}, o);
    REQUIRE(!s);
    CHECK(s.error().code == ErrorCode::parse);
  }
}

TEST_CASE("pickle: a FRAME longer than the bytes after it is refused at its offset", "[pickle]") {
  // pickle.dumps([{'k': 1}, {'k': 1}], 4) announces a 21-byte frame, exactly what follows.
  const auto b = from_hex("80049515000000000000005d94287d948c016b944b01737d9468024b0173652e");
  REQUIRE(run_bytes(b));
  for (uint64_t length : {uint64_t{22}, uint64_t{1} << 62, ~uint64_t{0}}) {
    INFO(length);
    auto patched = b;
    for (int k = 0; k < 8; ++k) patched[3 + k] = static_cast<uint8_t>(length >> (8 * k));
    auto r = run_bytes(patched);
    REQUIRE(!r);
    CHECK(r.error().code == ErrorCode::parse);
    CHECK(r.error().offset == 2);
    CHECK_THAT(r.error().message, Catch::Contains("FRAME of " + std::to_string(length) + " bytes") &&
                                      Catch::Contains("at offset 2"));
    // A window of a longer stream asks for more instead.
    pickle::Options o;
    o.more_may_follow = true;
    auto w = pickle::run(patched, {}, o);
    REQUIRE(!w);
    CHECK(w.error().code == ErrorCode::need_bytes);
  }
}
