// The pickle machine's internals, shared by machine.cpp (values, stack, memo, the run
// loop) and step.cpp (what each opcode does). Callers use vm.h.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/text.h"
#include "formats/pickle/opcodes.h"
#include "formats/pickle/vm.h"

namespace amn::pickle::internal {

// Values 0..2 are shared singletons: a flood of NONE opcodes costs stack slots only.
constexpr uint32_t kNoneValue = 0, kFalseValue = 1, kTrueValue = 2;
// Bytes of bookkeeping one working-set unit stands for (a stack slot, a container slot,
// a memo entry), charged against max_total_bytes beside the values themselves.
constexpr uint64_t kUnitBytes = 16;

// Text from the stream shown in messages: at most this many bytes (core/text.h printable).
constexpr size_t kShownChars = 120;
const char* kind_name(Kind k);  // "a tuple", "an object", ...
Record empty_container(Kind kind);
bool has_children(Kind k);

class Machine {
 public:
  Machine(std::span<const uint8_t> bytes, const ParseLimits& limits, const Options& options)
      : in_(bytes), limits_(effective_limits(limits)), opt_(options) {}

  Result<Pickle> run();

 private:
  Error parse_error(const std::string& what) const {
    return make_error(ErrorCode::parse, "pickle: " + what + " at offset " + num(opt_.base_offset + op_pos_),
                      opt_.base_offset + op_pos_);
  }
  Error truncated(const std::string& what) const {
    if (opt_.more_may_follow) return make_error(ErrorCode::need_bytes, "pickle: window ends inside the stream");
    return parse_error("the stream ends inside " + what + " (truncated)");
  }
  Status need(uint64_t n, const char* what) {
    if (in_.size() - pos_ < n) return truncated(what);
    return {};
  }
  Status charge(uint64_t units, uint64_t bytes);
  Result<uint32_t> new_value(const Record& r, uint64_t extra_bytes = 0);
  uint64_t add_text(std::string_view s);
  void link(Record::Span& list, size_t from);  // stack_[from..] become children in `list`
  void finish();
  Status push(uint32_t v);
  Result<uint32_t> pop(const char* op);
  Result<uint32_t> top(const char* op);
  Result<size_t> pop_mark(const char* op);  // stack position of the innermost mark
  Status add_child(uint32_t container, uint32_t child);
  Result<std::string_view> read_line(const char* op);
  Result<uint64_t> read_uint(unsigned n, const char* op);
  Status push_string(Kind kind, uint64_t n, const char* op);
  Status global(std::string module, std::string name);
  Status make_object(uint32_t callee, uint32_t args, uint32_t kwargs, const char* op);
  Status memo_put(uint64_t index);
  Status memo_get(uint64_t index);
  Status sequence(Kind kind, size_t from);
  Status step(Op op, bool& stop);
  Error disallowed_error() const;

  std::span<const uint8_t> in_;
  ParseLimits limits_;
  Options opt_;
  uint64_t pos_ = 0;
  uint64_t op_pos_ = 0;
  Pickle out_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::unordered_map<std::string, size_t> global_index_;
  // While running, a container's children are a chain of runs in out_.slots, newest
  // first (APPENDS may add to a list long after other values were made); finish()
  // leaves each container one contiguous run. Every slot was charged as a unit.
  struct Chunk {
    uint32_t at, size, next;
  };
  std::vector<Chunk> chunks_;
  uint64_t units_ = 0;   // working set: values + container slots + memo entries + stack + marks
  uint64_t bytes_ = 0;
  uint64_t disallowed_ = 0;
};

}  // namespace amn::pickle::internal
