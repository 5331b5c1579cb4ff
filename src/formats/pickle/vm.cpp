#include "formats/pickle/vm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "core/checked.h"

namespace amn::pickle {
namespace {

// Values 0..2 are shared singletons: a flood of NONE opcodes costs stack slots only.
constexpr uint32_t kNoneValue = 0, kFalseValue = 1, kTrueValue = 2;
// Bytes of bookkeeping one working-set unit stands for (a stack slot, a container slot,
// a memo entry), charged against max_total_bytes beside the values themselves.
constexpr uint64_t kUnitBytes = 16;

std::string num(uint64_t v) { return std::to_string(v); }

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 120)) out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
  if (s.size() > 120) out += "...";
  return out;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "None";
    case Kind::boolean: return "a bool";
    case Kind::integer: case Kind::big_integer: return "an int";
    case Kind::floating: return "a float";
    case Kind::string: return "a str";
    case Kind::bytes: return "bytes";
    case Kind::tuple: return "a tuple";
    case Kind::list: return "a list";
    case Kind::dict: return "a dict";
    case Kind::set: return "a set";
    case Kind::frozenset: return "a frozenset";
    case Kind::global: return "a global";
    case Kind::object: return "an object";
    case Kind::persistent_id: return "a persistent id";
  }
  return "a value";
}

Record empty_container(Kind kind) {
  Record r;
  r.kind = kind;
  r.node.items = r.node.entries = {kNoValue, 0};
  return r;
}

class Vm {
 public:
  Vm(std::span<const uint8_t> bytes, const ParseLimits& limits, const Options& options)
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
  Status step(uint8_t op, bool& stop);
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

Status Vm::charge(uint64_t units, uint64_t bytes) {
  units_ += units;
  bytes_ = checked_add(bytes_, checked_add(bytes, units * kUnitBytes).value_or(UINT64_MAX)).value_or(UINT64_MAX);
  if (units_ > limits_.max_item_count) {
    return make_error(ErrorCode::limit, "pickle: the working set (values, container slots, memo entries, stack) exceeds max_item_count (" +
                                            num(limits_.max_item_count) + ") at offset " + num(opt_.base_offset + op_pos_),
                      opt_.base_offset + op_pos_);
  }
  if (bytes_ > limits_.max_total_bytes) {
    return make_error(ErrorCode::limit, "pickle: the values need more than max_total_bytes (" + num(limits_.max_total_bytes) +
                                            ") of memory at offset " + num(opt_.base_offset + op_pos_),
                      opt_.base_offset + op_pos_);
  }
  return {};
}

Result<uint32_t> Vm::new_value(const Record& r, uint64_t extra_bytes) {
  AMN_TRY(charge(1, sizeof(Record) + extra_bytes));
  out_.values.push_back(r);
  return static_cast<uint32_t>(out_.values.size() - 1);
}

// Appends a payload to the text arena; its offset there.
uint64_t Vm::add_text(std::string_view s) {
  const uint64_t at = out_.text.size();
  out_.text.append(s);
  return at;
}

void Vm::link(Record::Span& list, size_t from) {
  const auto n = static_cast<uint32_t>(stack_.size() - from);
  if (n == 0) return;
  const auto at = static_cast<uint32_t>(out_.slots.size());
  out_.slots.insert(out_.slots.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
  list.size += n;
  // Children added right after the container's last ones extend that run.
  if (list.at != kNoValue && chunks_[list.at].at + chunks_[list.at].size == at) {
    chunks_[list.at].size += n;
    return;
  }
  chunks_.push_back({at, n, list.at});
  list.at = static_cast<uint32_t>(chunks_.size() - 1);
}

bool has_children(Kind k) {
  return k == Kind::tuple || k == Kind::list || k == Kind::dict || k == Kind::set || k == Kind::frozenset ||
         k == Kind::object;
}

// One contiguous run per container: a single chain link is used where it lies, longer
// chains are copied, oldest first, to the end of the slots (at most doubling them).
void Vm::finish() {
  for (Record& r : out_.values) {
    if (!has_children(r.kind)) continue;
    for (Record::Span* list : {&r.node.items, &r.node.entries}) {
      if (list->at == kNoValue) {
        *list = {0, 0};
        continue;
      }
      const Chunk& head = chunks_[list->at];
      if (head.next == kNoValue) {
        list->at = head.at;
        continue;
      }
      const size_t base = out_.slots.size();
      out_.slots.resize(base + list->size);
      size_t end = base + list->size;
      for (uint32_t k = list->at; k != kNoValue; k = chunks_[k].next) {
        const Chunk& c = chunks_[k];
        end -= c.size;
        std::copy_n(out_.slots.begin() + c.at, c.size, out_.slots.begin() + static_cast<std::ptrdiff_t>(end));
      }
      list->at = static_cast<uint32_t>(base);
    }
  }
  chunks_ = {};
}

Status Vm::push(uint32_t v) {
  AMN_TRY(charge(1, 0));
  stack_.push_back(v);
  return {};
}

Result<uint32_t> Vm::pop(const char* op) {
  if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
    return parse_error(std::string(op) + " finds no value on the stack");
  }
  const uint32_t v = stack_.back();
  stack_.pop_back();
  --units_;
  return v;
}

Result<uint32_t> Vm::top(const char* op) {
  if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
    return parse_error(std::string(op) + " finds no value on the stack");
  }
  return stack_.back();
}

Result<size_t> Vm::pop_mark(const char* op) {
  if (marks_.empty()) return parse_error(std::string(op) + " finds no MARK");
  const size_t m = marks_.back();
  marks_.pop_back();
  --units_;
  return m;
}

Status Vm::add_child(uint32_t container, uint32_t child) {
  AMN_TRY(charge(1, 0));
  Record& c = out_.values[container];
  const uint32_t d = out_.values[child].depth + 1;
  if (d > c.depth) {
    if (d > kHardMaxPickleDepth) {
      return make_error(ErrorCode::limit, "pickle: values nest deeper than " + num(kHardMaxPickleDepth) +
                                              " levels at offset " + num(opt_.base_offset + op_pos_),
                        opt_.base_offset + op_pos_);
    }
    c.depth = d;
  }
  return {};
}

Result<std::string_view> Vm::read_line(const char* op) {
  const auto* begin = in_.data() + pos_;
  const auto* nl = static_cast<const uint8_t*>(std::memchr(begin, '\n', in_.size() - pos_));
  if (!nl) return truncated(std::string(op) + "'s text argument");
  std::string_view line(reinterpret_cast<const char*>(begin), static_cast<size_t>(nl - begin));
  pos_ += line.size() + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Result<uint64_t> Vm::read_uint(unsigned n, const char* op) {
  AMN_TRY(need(n, op));
  uint64_t v = 0;
  for (unsigned k = n; k-- > 0;) v = (v << 8) | in_[pos_ + k];
  pos_ += n;
  return v;
}

Status Vm::push_string(Kind kind, uint64_t n, const char* op) {
  // Checked against what remains before anything is allocated.
  AMN_TRY(need(n, op));
  if (n > limits_.max_single_alloc) {
    return make_error(ErrorCode::limit, "pickle: " + std::string(op) + " of " + num(n) +
                                            " bytes exceeds max_single_alloc at offset " + num(opt_.base_offset + op_pos_),
                      opt_.base_offset + op_pos_);
  }
  AMN_TRY(charge(0, n));  // before the copy
  Record r;
  r.kind = kind;
  r.text = {add_text({reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(n)}), n};
  pos_ += n;
  AMN_ASSIGN(const uint32_t id, new_value(r));
  return push(id);
}

Status Vm::global(std::string module, std::string name) {
  if (module.empty() || name.empty()) return parse_error("a global with an empty module or name");
  std::string key = module + '\n' + name;
  auto it = global_index_.find(key);
  size_t gi;
  if (it == global_index_.end()) {
    AMN_TRY(charge(1, module.size() + name.size() + sizeof(GlobalRef)));
    GlobalRef g;
    g.module = module;
    g.name = name;
    g.allowed = opt_.allowed && opt_.allowed(module, name);
    g.first_offset = opt_.base_offset + op_pos_;
    gi = out_.globals.size();
    out_.globals.push_back(std::move(g));
    global_index_.emplace(std::move(key), gi);
  } else {
    gi = it->second;
  }
  GlobalRef& g = out_.globals[gi];
  ++g.count;
  if (!g.allowed) ++disallowed_;
  Record r;
  r.kind = Kind::global;
  r.global = static_cast<uint32_t>(gi);  // the names live once, in globals
  AMN_ASSIGN(const uint32_t id, new_value(r));
  return push(id);
}

// Nothing is called: the object records what would have been, for the caller to
// interpret (or refuse). Only a global may be "called", so no value smuggled in through
// the stack (the result of another REDUCE, a string) can stand in for a callable.
Status Vm::make_object(uint32_t callee, uint32_t args, uint32_t kwargs, const char* op) {
  const Record& c = out_.values[callee];
  if (c.kind != Kind::global) {
    return make_error(ErrorCode::disallowed_global,
                      "pickle: " + std::string(op) + " would call " + kind_name(c.kind) +
                          ", not a global: refused at offset " + num(opt_.base_offset + op_pos_),
                      opt_.base_offset + op_pos_);
  }
  if (args != kNoValue && out_.values[args].kind != Kind::tuple) {
    return parse_error(std::string(op) + "'s arguments are " + kind_name(out_.values[args].kind) + ", not a tuple");
  }
  Record r;
  r.kind = Kind::object;
  r.node.callee = callee;
  r.node.args = args;
  r.node.kwargs = kwargs;
  r.node.items = r.node.entries = {kNoValue, 0};
  AMN_ASSIGN(const uint32_t id, new_value(r));
  if (args != kNoValue) AMN_TRY(add_child(id, args));
  if (kwargs != kNoValue) AMN_TRY(add_child(id, kwargs));
  return push(id);
}

Status Vm::memo_put(uint64_t index) {
  AMN_ASSIGN(const uint32_t v, top("PUT"));
  auto [it, fresh] = memo_.emplace(index, v);
  if (fresh) return charge(1, 0);
  it->second = v;
  return {};
}

Status Vm::memo_get(uint64_t index) {
  auto it = memo_.find(index);
  if (it == memo_.end()) return parse_error("GET of memo entry " + num(index) + ", which was never PUT");
  return push(it->second);
}

// Pops the values above stack position `from` into a new container.
Status Vm::sequence(Kind kind, size_t from) {
  AMN_ASSIGN(const uint32_t id, new_value(empty_container(kind)));
  const size_t n = stack_.size() - from;
  for (size_t k = from; k < stack_.size(); ++k) AMN_TRY(add_child(id, stack_[k]));
  link(out_.values[id].node.items, from);
  stack_.resize(from);
  units_ -= n;
  return push(id);
}

int64_t sign_extend(uint64_t v, unsigned bytes) {
  if (bytes == 0) return 0;
  if (bytes >= 8) return static_cast<int64_t>(v);
  const unsigned shift = 64 - 8 * bytes;
  return static_cast<int64_t>(v << shift) >> shift;
}

bool parse_decimal(std::string_view s, int64_t& out) {
  if (!s.empty() && s.back() == 'L') s.remove_suffix(1);  // protocol 0 longs
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = neg ? -v : v;
  return true;
}

Status Vm::step(uint8_t op, bool& stop) {
  switch (op) {
    case 0x80: {  // PROTO
      AMN_ASSIGN(const uint64_t p, read_uint(1, "PROTO"));
      if (p > 5) return make_error(ErrorCode::unsupported, "pickle: protocol " + num(p) + " (this reader knows 0 to 5)", opt_.base_offset + op_pos_);
      out_.protocol = static_cast<uint32_t>(p);
      return {};
    }
    case 0x95: {  // FRAME: the next n bytes hold whole opcodes. CPython's unpickler reads
      // the frame before running it and refuses one that runs past the data ("pickle data
      // was truncated"), so a frame must fit in what remains; otherwise it is only a hint.
      AMN_ASSIGN(const uint64_t n, read_uint(8, "FRAME"));
      if (n > in_.size() - pos_) return truncated("a FRAME of " + num(n) + " bytes");
      return {};
    }
    case '.': {  // STOP
      AMN_ASSIGN(out_.root, pop("STOP"));
      stop = true;
      return {};
    }
    case '(':
      AMN_TRY(charge(1, 0));
      marks_.push_back(stack_.size());
      return {};
    case '0': {  // POP (of a bare mark too, as CPython does)
      if (!marks_.empty() && marks_.back() == stack_.size()) {
        marks_.pop_back();
        --units_;
        return {};
      }
      AMN_ASSIGN(const uint32_t v, pop("POP"));
      (void)v;
      return {};
    }
    case '1': {  // POP_MARK
      AMN_ASSIGN(const size_t m, pop_mark("POP_MARK"));
      units_ -= stack_.size() - m;
      stack_.resize(m);
      return {};
    }
    case '2': {  // DUP
      AMN_ASSIGN(const uint32_t v, top("DUP"));
      return push(v);
    }
    case 'N': return push(kNoneValue);
    case 0x88: return push(kTrueValue);
    case 0x89: return push(kFalseValue);
    case 'J': case 'K': case 'M': {  // BININT, BININT1, BININT2
      const unsigned n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
      AMN_ASSIGN(const uint64_t raw, read_uint(n, "BININT"));
      Record r;
      r.kind = Kind::integer;
      r.integer = op == 'J' ? sign_extend(raw, 4) : static_cast<int64_t>(raw);
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case 0x8a: case 0x8b: {  // LONG1, LONG4
      AMN_ASSIGN(const uint64_t n, read_uint(op == 0x8a ? 1 : 4, "LONG"));
      AMN_TRY(need(n, "LONG"));
      if (n > limits_.max_single_alloc) return parse_error("a LONG4 of " + num(n) + " bytes");
      Record r;
      if (n <= 8) {
        uint64_t raw = 0;
        for (uint64_t k = n; k-- > 0;) raw = (raw << 8) | in_[pos_ + k];
        r.kind = Kind::integer;
        r.integer = sign_extend(raw, static_cast<unsigned>(n));
      } else {
        AMN_TRY(charge(0, n));  // before the copy
        r.kind = Kind::big_integer;
        r.text = {add_text({reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(n)}), n};
      }
      pos_ += n;
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case 'I': case 'L': {  // INT, LONG (protocol 0 text)
      AMN_ASSIGN(const std::string_view line, read_line(op == 'I' ? "INT" : "LONG"));
      if (op == 'I' && (line == "00" || line == "01")) return push(line == "01" ? kTrueValue : kFalseValue);
      Record r;
      r.kind = Kind::integer;
      int64_t small = 0;
      if (parse_decimal(line, small)) {
        r.integer = small;
      } else {
        std::string_view digits = line;
        if (!digits.empty() && digits.back() == 'L') digits.remove_suffix(1);
        if (digits.empty() || digits.find_first_not_of("+-0123456789") != std::string_view::npos) {
          return parse_error("INT/LONG text '" + printable(line) + "' is not a number");
        }
        AMN_TRY(charge(0, digits.size()));  // before the copy
        r.kind = Kind::big_integer;  // kept as decimal text; marked by the flag (name "decimal")
        r.flag = 1;
        r.text = {add_text(digits), digits.size()};
      }
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case 'G': {  // BINFLOAT: big-endian IEEE double
      AMN_TRY(need(8, "BINFLOAT"));
      uint64_t raw = 0;
      for (int k = 0; k < 8; ++k) raw = (raw << 8) | in_[pos_ + k];
      pos_ += 8;
      Record r;
      r.kind = Kind::floating;
      std::memcpy(&r.floating, &raw, 8);
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case 'F': {  // FLOAT (text)
      AMN_ASSIGN(const std::string_view line, read_line("FLOAT"));
      std::string s(line);
      char* end = nullptr;
      Record r;
      r.kind = Kind::floating;
      r.floating = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) return parse_error("FLOAT text '" + printable(line) + "' is not a number");
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case 'X': case 0x8c: case 0x8d: {  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      AMN_ASSIGN(const uint64_t n, read_uint(op == 'X' ? 4 : op == 0x8c ? 1 : 8, "BINUNICODE"));
      return push_string(Kind::string, n, "a string");
    }
    case 'T': case 'U': {  // BINSTRING, SHORT_BINSTRING (Python 2 str, read as text)
      AMN_ASSIGN(const uint64_t n, read_uint(op == 'T' ? 4 : 1, "BINSTRING"));
      return push_string(Kind::string, n, "a string");
    }
    case 'B': case 'C': case 0x8e: case 0x96: {  // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
      AMN_ASSIGN(const uint64_t n, read_uint(op == 'B' ? 4 : op == 'C' ? 1 : 8, "BINBYTES"));
      return push_string(Kind::bytes, n, "a bytes value");
    }
    case 'S': case 'V': {  // STRING (quoted repr), UNICODE (raw-unicode-escape): kept as written
      AMN_ASSIGN(std::string_view line, read_line(op == 'S' ? "STRING" : "UNICODE"));
      if (op == 'S') {
        if (line.size() < 2 || (line.front() != '\'' && line.front() != '"') || line.back() != line.front()) {
          return parse_error("STRING argument is not quoted");
        }
        line = line.substr(1, line.size() - 2);
      }
      AMN_TRY(charge(0, line.size()));  // before the copy
      Record r;
      r.kind = Kind::string;
      r.text = {add_text(line), line.size()};
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case ']': case ')': case '}': case 0x8f: {  // EMPTY_LIST, EMPTY_TUPLE, EMPTY_DICT, EMPTY_SET
      AMN_ASSIGN(const uint32_t id, new_value(empty_container(op == ']' ? Kind::list : op == ')' ? Kind::tuple
                                                               : op == '}' ? Kind::dict : Kind::set)));
      return push(id);
    }
    case 'l': case 't': case 0x91: {  // LIST, TUPLE, FROZENSET (from the mark)
      AMN_ASSIGN(const size_t m, pop_mark(op == 'l' ? "LIST" : op == 't' ? "TUPLE" : "FROZENSET"));
      return sequence(op == 'l' ? Kind::list : op == 't' ? Kind::tuple : Kind::frozenset, m);
    }
    case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
      const size_t n = op - 0x84u;
      if (stack_.size() < n || (!marks_.empty() && stack_.size() - marks_.back() < n)) {
        return parse_error("TUPLE" + num(n) + " finds fewer than " + num(n) + " values on the stack");
      }
      return sequence(Kind::tuple, stack_.size() - n);
    }
    case 'd': {  // DICT (from the mark)
      AMN_ASSIGN(const size_t m, pop_mark("DICT"));
      if ((stack_.size() - m) % 2) return parse_error("DICT with an odd number of values");
      AMN_ASSIGN(const uint32_t id, new_value(empty_container(Kind::dict)));
      for (size_t k = m; k < stack_.size(); ++k) AMN_TRY(add_child(id, stack_[k]));
      link(out_.values[id].node.entries, m);
      units_ -= stack_.size() - m;
      stack_.resize(m);
      return push(id);
    }
    case 'a': case 'e': case 0x90: {  // APPEND, APPENDS, ADDITEMS
      size_t from;
      if (op == 'a') {
        if (stack_.size() < 2 || (!marks_.empty() && stack_.size() - marks_.back() < 2)) return parse_error("APPEND needs a list and a value");
        from = stack_.size() - 1;
      } else {
        AMN_ASSIGN(from, pop_mark(op == 'e' ? "APPENDS" : "ADDITEMS"));
        if (from == 0 || (!marks_.empty() && marks_.back() >= from)) return parse_error("APPENDS/ADDITEMS finds no container below the MARK");
      }
      const uint32_t target = stack_[from - 1];
      const Kind k = out_.values[target].kind;
      const bool ok = op == 0x90 ? (k == Kind::set || k == Kind::object) : (k == Kind::list || k == Kind::object);
      if (!ok) return parse_error(std::string(op == 0x90 ? "ADDITEMS" : "APPEND") + " to " + kind_name(k));
      for (size_t i = from; i < stack_.size(); ++i) AMN_TRY(add_child(target, stack_[i]));
      link(out_.values[target].node.items, from);
      units_ -= stack_.size() - from;
      stack_.resize(from);
      return {};
    }
    case 's': case 'u': {  // SETITEM, SETITEMS
      size_t from;
      if (op == 's') {
        if (stack_.size() < 3 || (!marks_.empty() && stack_.size() - marks_.back() < 3)) return parse_error("SETITEM needs a dict, a key and a value");
        from = stack_.size() - 2;
      } else {
        AMN_ASSIGN(from, pop_mark("SETITEMS"));
        if (from == 0 || (!marks_.empty() && marks_.back() >= from)) return parse_error("SETITEMS finds no dict below the MARK");
        if ((stack_.size() - from) % 2) return parse_error("SETITEMS with an odd number of values");
      }
      const uint32_t target = stack_[from - 1];
      const Kind k = out_.values[target].kind;
      if (k != Kind::dict && k != Kind::object) return parse_error("SETITEM on " + std::string(kind_name(k)));
      for (size_t i = from; i < stack_.size(); ++i) AMN_TRY(add_child(target, stack_[i]));
      link(out_.values[target].node.entries, from);
      units_ -= stack_.size() - from;
      stack_.resize(from);
      return {};
    }
    case 'c': {  // GLOBAL "module\nname\n"
      AMN_ASSIGN(const std::string_view module, read_line("GLOBAL"));
      std::string m(module);
      AMN_ASSIGN(const std::string_view name, read_line("GLOBAL"));
      return global(std::move(m), std::string(name));
    }
    case 0x93: {  // STACK_GLOBAL
      AMN_ASSIGN(const uint32_t name, pop("STACK_GLOBAL"));
      AMN_ASSIGN(const uint32_t module, pop("STACK_GLOBAL"));
      if (out_.values[name].kind != Kind::string || out_.values[module].kind != Kind::string) {
        return parse_error("STACK_GLOBAL's module and name are not strings");
      }
      const auto text_of = [&](uint32_t v) {
        const Record::Text t = out_.values[v].text;
        return std::string(out_.text, static_cast<size_t>(t.at), static_cast<size_t>(t.size));
      };
      return global(text_of(module), text_of(name));
    }
    case 'R': {  // REDUCE
      AMN_ASSIGN(const uint32_t args, pop("REDUCE"));
      AMN_ASSIGN(const uint32_t callee, pop("REDUCE"));
      return make_object(callee, args, kNoValue, "REDUCE");
    }
    case 0x81: {  // NEWOBJ
      AMN_ASSIGN(const uint32_t args, pop("NEWOBJ"));
      AMN_ASSIGN(const uint32_t cls, pop("NEWOBJ"));
      return make_object(cls, args, kNoValue, "NEWOBJ");
    }
    case 0x92: {  // NEWOBJ_EX
      AMN_ASSIGN(const uint32_t kwargs, pop("NEWOBJ_EX"));
      AMN_ASSIGN(const uint32_t args, pop("NEWOBJ_EX"));
      AMN_ASSIGN(const uint32_t cls, pop("NEWOBJ_EX"));
      if (out_.values[kwargs].kind != Kind::dict) return parse_error("NEWOBJ_EX's keyword arguments are not a dict");
      return make_object(cls, args, kwargs, "NEWOBJ_EX");
    }
    case 'i': {  // INST "module\nname\n", arguments from the mark
      AMN_ASSIGN(const std::string_view module, read_line("INST"));
      std::string m(module);
      AMN_ASSIGN(const std::string_view name, read_line("INST"));
      AMN_ASSIGN(const size_t mark, pop_mark("INST"));
      AMN_TRY(sequence(Kind::tuple, mark));
      AMN_ASSIGN(const uint32_t args, pop("INST"));
      AMN_TRY(global(std::move(m), std::string(name)));
      AMN_ASSIGN(const uint32_t cls, pop("INST"));
      return make_object(cls, args, kNoValue, "INST");
    }
    case 'o': {  // OBJ: class and arguments from the mark
      AMN_ASSIGN(const size_t mark, pop_mark("OBJ"));
      if (stack_.size() == mark) return parse_error("OBJ finds no class after the MARK");
      const uint32_t cls = stack_[mark];
      AMN_TRY(sequence(Kind::tuple, mark + 1));
      AMN_ASSIGN(const uint32_t args, pop("OBJ"));
      AMN_ASSIGN(const uint32_t c, pop("OBJ"));
      (void)c;
      return make_object(cls, args, kNoValue, "OBJ");
    }
    case 'b': {  // BUILD
      AMN_ASSIGN(const uint32_t state, pop("BUILD"));
      AMN_ASSIGN(const uint32_t target, top("BUILD"));
      if (out_.values[target].kind != Kind::object) {
        // BUILD on a class or a plain value would run __setstate__ / setattr on it.
        return make_error(ErrorCode::disallowed_global,
                          std::string("pickle: BUILD sets the state of ") + kind_name(out_.values[target].kind) +
                              ", not of an object: refused at offset " + num(opt_.base_offset + op_pos_),
                          opt_.base_offset + op_pos_);
      }
      AMN_TRY(add_child(target, state));
      out_.values[target].node.state = state;
      return {};
    }
    case 'p': {  // PUT (text index)
      AMN_ASSIGN(const std::string_view line, read_line("PUT"));
      int64_t idx;
      if (!parse_decimal(line, idx) || idx < 0) return parse_error("PUT index '" + printable(line) + "'");
      return memo_put(static_cast<uint64_t>(idx));
    }
    case 'q': case 'r': {  // BINPUT, LONG_BINPUT
      AMN_ASSIGN(const uint64_t idx, read_uint(op == 'q' ? 1 : 4, "BINPUT"));
      return memo_put(idx);
    }
    case 0x94:  // MEMOIZE
      return memo_put(memo_.size());
    case 'g': {  // GET (text index)
      AMN_ASSIGN(const std::string_view line, read_line("GET"));
      int64_t idx;
      if (!parse_decimal(line, idx) || idx < 0) return parse_error("GET index '" + printable(line) + "'");
      return memo_get(static_cast<uint64_t>(idx));
    }
    case 'h': case 'j': {  // BINGET, LONG_BINGET
      AMN_ASSIGN(const uint64_t idx, read_uint(op == 'h' ? 1 : 4, "BINGET"));
      return memo_get(idx);
    }
    case 'P': case 'Q': {  // PERSID (text), BINPERSID
      uint32_t pid;
      if (op == 'P') {
        AMN_ASSIGN(const std::string_view line, read_line("PERSID"));
        AMN_TRY(charge(0, line.size()));  // before the copy
        Record s;
        s.kind = Kind::string;
        s.text = {add_text(line), line.size()};
        AMN_ASSIGN(pid, new_value(s));
      } else {
        AMN_ASSIGN(pid, pop("BINPERSID"));
      }
      Record r;
      r.kind = Kind::persistent_id;
      r.node.callee = pid;
      AMN_ASSIGN(const uint32_t id, new_value(r));
      AMN_TRY(add_child(id, pid));
      return push(id);
    }
    case 0x82: case 0x83: case 0x84:
      return make_error(ErrorCode::unsupported, "pickle: EXT opcodes (the copyreg extension registry) at offset " + num(opt_.base_offset + op_pos_),
                        opt_.base_offset + op_pos_);
    case 0x97: case 0x98:
      return make_error(ErrorCode::unsupported, "pickle: out-of-band buffers (NEXT_BUFFER / READONLY_BUFFER) at offset " + num(opt_.base_offset + op_pos_),
                        opt_.base_offset + op_pos_);
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", op);
      return parse_error(std::string("unknown opcode ") + buf);
    }
  }
}

Result<Pickle> Vm::run() {
  // Real checkpoints make about one value per 7 pickle bytes (ResNet-50's 39 KB data.pkl:
  // 5,600). Reserving up front spares the doublings' copies, and the page faults of
  // first-touching each larger block (a cost that dominates parsing on some VMs). Capped:
  // a hostile stream cannot make this reserve much (values are charged as they come).
  out_.values.reserve(std::min<size_t>(in_.size() / 6 + 16, size_t{1} << 15));
  out_.slots.reserve(std::min<size_t>(in_.size() / 6 + 16, size_t{1} << 15));
  out_.text.reserve(std::min<size_t>(in_.size() / 4, size_t{1} << 18));
  for (Kind k : {Kind::none, Kind::boolean, Kind::boolean}) {
    Record r;
    r.kind = k;
    r.flag = out_.values.size() == kTrueValue;
    AMN_TRY(new_value(r));
  }
  bool stop = false;
  while (!stop) {
    op_pos_ = pos_;
    if (pos_ >= in_.size()) {
      if (opt_.more_may_follow) return make_error(ErrorCode::need_bytes, "pickle: window ends inside the stream");
      return parse_error("the stream ends before STOP (truncated)");
    }
    const uint8_t op = in_[pos_++];
    auto st = step(op, stop);
    // A refused global outranks what went wrong after it (a hostile stream that is also
    // truncated or malformed is reported for the global it names).
    if (!st && st.error().code != ErrorCode::need_bytes && disallowed_) return disallowed_error();
    if (!st) return std::move(st).error();
  }
  out_.end = pos_;
  if (disallowed_) return disallowed_error();
  finish();
  return std::move(out_);
}

Error Vm::disallowed_error() const {
  {
    std::string names;
    uint64_t named = 0, distinct = 0;
    uint64_t first = kNoOffset;
    for (const auto& g : out_.globals) {
      if (g.allowed) continue;
      ++distinct;
      if (first == kNoOffset) first = g.first_offset;
      if (named < opt_.max_named_in_error) {
        names += (named ? ", " : "") + printable(global_name(g));
        ++named;
      }
    }
    if (distinct > named) names += " and " + num(distinct - named) + " more";
    return make_error(ErrorCode::disallowed_global,
                      "pickle: refers to " + std::string(distinct == 1 ? "a global" : "globals") +
                          " outside the allowlist (never called): " + names,
                      first);
  }
}

}  // namespace

Result<Pickle> run(std::span<const uint8_t> bytes, const ParseLimits& limits, const Options& options) {
  Vm vm(bytes, limits, options);
  return vm.run();
}

std::string global_name(const GlobalRef& g) { return g.module + "." + g.name; }

Value Pickle::at(uint32_t i) const {
  const Record& r = values[i];
  Value v;
  v.kind = r.kind;
  v.depth = r.depth;
  const auto children = [&](Record::Span s) {
    return s.size == 0 ? std::span<const uint32_t>() : std::span<const uint32_t>(slots.data() + s.at, s.size);
  };
  switch (r.kind) {
    case Kind::none: break;
    case Kind::boolean: v.boolean = r.flag != 0; break;
    case Kind::integer: v.integer = r.integer; break;
    case Kind::floating: v.floating = r.floating; break;
    case Kind::big_integer:
      if (r.flag) v.name = "decimal";
      [[fallthrough]];
    case Kind::string: case Kind::bytes:
      v.text = std::string_view(text).substr(static_cast<size_t>(r.text.at), static_cast<size_t>(r.text.size));
      break;
    case Kind::global:
      v.text = globals[r.global].module;
      v.name = globals[r.global].name;
      break;
    case Kind::persistent_id: v.callee = r.node.callee; break;
    case Kind::tuple: case Kind::list: case Kind::dict: case Kind::set: case Kind::frozenset: case Kind::object:
      v.items = children(r.node.items);
      v.entries = children(r.node.entries);
      v.callee = r.node.callee;
      v.args = r.node.args;
      v.kwargs = r.node.kwargs;
      v.state = r.node.state;
      break;
  }
  return v;
}

}  // namespace amn::pickle
