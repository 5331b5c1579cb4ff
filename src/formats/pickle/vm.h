// A pickle virtual machine that builds values and never calls anything. Protocols 0-5
// as CPython's pickle.py writes them; every global is checked against a caller-given
// allowlist and recorded (the verdict is reported, like picklescan/fickling, but
// allowlist-based); REDUCE / NEWOBJ / BUILD become Object values for the caller to
// interpret. Bounded: payloads by the bytes that remain, the working set (values,
// container slots, memo entries, stack) by ParseLimits, nesting by kHardMaxPickleDepth,
// each with O(1) accounting per opcode. Spec and choices: docs/formats/pytorch.md.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/limits.h"

namespace amn::pickle {

inline constexpr uint32_t kNoValue = ~uint32_t{0};
// Containers within containers. Real checkpoints nest a handful of levels; CPython's
// own recursion limit (1000) stops far deeper pickles from loading at all.
inline constexpr uint32_t kHardMaxPickleDepth = 256;

enum class Kind : uint8_t {
  none, boolean, integer, big_integer, floating, string, bytes,
  tuple, list, dict, set, frozenset,
  global,          // module + name (never resolved to anything callable)
  object,          // REDUCE / NEWOBJ / INST / OBJ of a global, with BUILD state and appended items
  persistent_id,   // BINPERSID / PERSID: `callee` holds the pid value
};

// One value as the caller reads it: a view into the Pickle that made it (valid while
// that Pickle lives), built by Pickle::at from the compact record below.
struct Value {
  Kind kind = Kind::none;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  // string / bytes: the payload (UTF-8 for strings, as stored); big_integer: the
  // little-endian two's-complement bytes (or, when name is "decimal", protocol 0's
  // decimal text); global: the module.
  std::string_view text;
  std::string_view name;                // global: the qualified name
  std::span<const uint32_t> items;      // tuple / list / set / frozenset; object: APPENDed items
  std::span<const uint32_t> entries;    // dict; object: SETITEMed (key, value) pairs, flattened
  uint32_t callee = kNoValue;           // object: the global; persistent_id: the pid
  uint32_t args = kNoValue;             // object: the argument tuple
  uint32_t kwargs = kNoValue;           // object (NEWOBJ_EX): keyword arguments
  uint32_t state = kNoValue;            // object: the last BUILD state
  uint32_t depth = 0;                   // containers below this one (0: a scalar)
};

// How a value is stored: 40 bytes, its strings and child lists out of line (in
// Pickle::text and Pickle::slots), because a checkpoint makes thousands of them and
// first-touching their pages was most of the time a parse took.
struct Record {
  Kind kind = Kind::none;
  uint8_t flag = 0;     // boolean: its value; big_integer: 1 when kept as decimal text
  uint32_t depth = 0;   // containers below this one (0: a scalar)
  struct Span {
    uint32_t at, size;  // in Pickle::slots
  };
  struct Node {
    Span items, entries;
    uint32_t callee, args, kwargs, state;
  };
  struct Text {
    uint64_t at, size;  // in Pickle::text
  };
  union {
    int64_t integer;
    double floating;
    Text text;          // string, bytes, big_integer
    uint32_t global;    // global: index in Pickle::globals
    Node node;          // containers, object, persistent_id (node.callee)
  };
  Record() : node{{0, 0}, {0, 0}, kNoValue, kNoValue, kNoValue, kNoValue} {}
};
static_assert(sizeof(Record) <= 40, "a value record should stay small: thousands are made per checkpoint");

// A global the pickle names, with the allowlist's verdict.
struct GlobalRef {
  std::string module;
  std::string name;
  bool allowed = false;
  uint64_t count = 0;         // how many GLOBAL / STACK_GLOBAL / INST opcodes name it
  uint64_t first_offset = 0;  // file offset of the first
};

struct Pickle {
  std::vector<Record> values;   // arena; values refer to each other by index (shared, as memo GETs are)
  std::string text;             // every string, bytes and big integer payload, back to back
  std::vector<uint32_t> slots;  // every container's children, each container's contiguous
  uint32_t root = kNoValue;
  uint32_t protocol = 0;
  uint64_t end = 0;           // bytes consumed, STOP included
  std::vector<GlobalRef> globals;  // in order of first appearance

  Value at(uint32_t i) const;  // i < values.size()
  size_t size() const { return values.size(); }
};

using AllowFn = bool (*)(std::string_view module, std::string_view name);

struct Options {
  AllowFn allowed = nullptr;  // nullptr: every global is disallowed
  uint64_t base_offset = 0;   // file offset of bytes[0], for error offsets
  // The stream may continue past `bytes` (a window of a larger file): running out before
  // STOP is then ErrorCode::need_bytes with no ranges, for the caller to widen the window.
  bool more_may_follow = false;
  // A pickle refusing a global still runs to STOP, so that every global is listed; this
  // many disallowed names are spelled out in the error, the rest counted.
  uint32_t max_named_in_error = 8;
};

// Runs one pickle from bytes[0] to its STOP. Errors: parse (malformed, truncated),
// unsupported (PROTO > 5, extension registry, out-of-band buffers), limit (working set,
// depth), disallowed_global (naming module.name; the run is complete, so `globals` of
// the error is not available: the message lists them).
Result<Pickle> run(std::span<const uint8_t> bytes, const ParseLimits& limits, const Options& options);

// "module.name"
std::string global_name(const GlobalRef& g);

}  // namespace amn::pickle
