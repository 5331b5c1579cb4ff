// What each opcode does: Machine::step, one case per opcode (opcodes.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/bytes.h"
#include "formats/pickle/machine.h"

namespace amn::pickle::internal {
namespace {

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

}  // namespace

Status Machine::step(Op op, bool& stop) {
  switch (op) {
    case Op::PROTO: {
      AMN_ASSIGN(const uint64_t p, read_uint(1, "PROTO"));
      if (p > 5) return make_error(ErrorCode::unsupported, "pickle: protocol " + num(p) + " (this reader knows 0 to 5)", opt_.base_offset + op_pos_);
      out_.protocol = static_cast<uint32_t>(p);
      return {};
    }
    case Op::FRAME: {  // the next n bytes hold whole opcodes. CPython's unpickler reads the
      // frame before running it and refuses one that runs past the data ("pickle data
      // was truncated"), so a frame must fit in what remains; otherwise it is only a hint.
      AMN_ASSIGN(const uint64_t n, read_uint(8, "FRAME"));
      if (n > in_.size() - pos_) return truncated("a FRAME of " + num(n) + " bytes");
      return {};
    }
    case Op::STOP: {
      AMN_ASSIGN(out_.root, pop("STOP"));
      stop = true;
      return {};
    }
    case Op::MARK:
      AMN_TRY(charge(1, 0));
      marks_.push_back(stack_.size());
      return {};
    case Op::POP: {  // of a bare mark too, as CPython does
      if (!marks_.empty() && marks_.back() == stack_.size()) {
        marks_.pop_back();
        --units_;
        return {};
      }
      AMN_ASSIGN(const uint32_t v, pop("POP"));
      (void)v;
      return {};
    }
    case Op::POP_MARK: {
      AMN_ASSIGN(const size_t m, pop_mark("POP_MARK"));
      units_ -= stack_.size() - m;
      stack_.resize(m);
      return {};
    }
    case Op::DUP: {
      AMN_ASSIGN(const uint32_t v, top("DUP"));
      return push(v);
    }
    case Op::NONE: return push(kNoneValue);
    case Op::NEWTRUE: return push(kTrueValue);
    case Op::NEWFALSE: return push(kFalseValue);
    case Op::BININT: case Op::BININT1: case Op::BININT2: {
      const unsigned n = op == Op::BININT ? 4 : op == Op::BININT1 ? 1 : 2;
      AMN_ASSIGN(const uint64_t raw, read_uint(n, "BININT"));
      Record r;
      r.kind = Kind::integer;
      r.integer = op == Op::BININT ? sign_extend(raw, 4) : static_cast<int64_t>(raw);
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case Op::LONG1: case Op::LONG4: {
      AMN_ASSIGN(const uint64_t n, read_uint(op == Op::LONG1 ? 1 : 4, "LONG"));
      AMN_TRY(need(n, "LONG"));
      if (n > limits_.max_single_alloc) return parse_error("a LONG4 of " + num(n) + " bytes");
      Record r;
      if (n <= 8) {
        const uint64_t raw = load_le(in_.data() + pos_, static_cast<unsigned>(n));
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
    case Op::INT: case Op::LONG: {  // protocol 0 text
      AMN_ASSIGN(const std::string_view line, read_line(op == Op::INT ? "INT" : "LONG"));
      if (op == Op::INT && (line == "00" || line == "01")) return push(line == "01" ? kTrueValue : kFalseValue);
      Record r;
      r.kind = Kind::integer;
      int64_t small = 0;
      if (parse_decimal(line, small)) {
        r.integer = small;
      } else {
        std::string_view digits = line;
        if (!digits.empty() && digits.back() == 'L') digits.remove_suffix(1);
        if (digits.empty() || digits.find_first_not_of("+-0123456789") != std::string_view::npos) {
          return parse_error("INT/LONG text '" + printable(line, kShownChars) + "' is not a number");
        }
        AMN_TRY(charge(0, digits.size()));  // before the copy
        r.kind = Kind::big_integer;  // kept as decimal text; marked by the flag (name "decimal")
        r.flag = 1;
        r.text = {add_text(digits), digits.size()};
      }
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case Op::BINFLOAT: {  // a big-endian IEEE double
      AMN_TRY(need(8, "BINFLOAT"));
      const uint64_t raw = load_be(in_.data() + pos_, 8);
      pos_ += 8;
      Record r;
      r.kind = Kind::floating;
      std::memcpy(&r.floating, &raw, 8);
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case Op::FLOAT: {  // text
      AMN_ASSIGN(const std::string_view line, read_line("FLOAT"));
      std::string s(line);
      char* end = nullptr;
      Record r;
      r.kind = Kind::floating;
      r.floating = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) return parse_error("FLOAT text '" + printable(line, kShownChars) + "' is not a number");
      AMN_ASSIGN(const uint32_t id, new_value(r));
      return push(id);
    }
    case Op::BINUNICODE: case Op::SHORT_BINUNICODE: case Op::BINUNICODE8: {
      AMN_ASSIGN(const uint64_t n, read_uint(op == Op::BINUNICODE ? 4 : op == Op::SHORT_BINUNICODE ? 1 : 8, "BINUNICODE"));
      return push_string(Kind::string, n, "a string");
    }
    case Op::BINSTRING: case Op::SHORT_BINSTRING: {  // Python 2 str, read as text
      AMN_ASSIGN(const uint64_t n, read_uint(op == Op::BINSTRING ? 4 : 1, "BINSTRING"));
      return push_string(Kind::string, n, "a string");
    }
    case Op::BINBYTES: case Op::SHORT_BINBYTES: case Op::BINBYTES8: case Op::BYTEARRAY8: {
      AMN_ASSIGN(const uint64_t n, read_uint(op == Op::BINBYTES ? 4 : op == Op::SHORT_BINBYTES ? 1 : 8, "BINBYTES"));
      return push_string(Kind::bytes, n, "a bytes value");
    }
    case Op::STRING: case Op::UNICODE: {  // a quoted repr, raw-unicode-escape: kept as written
      AMN_ASSIGN(std::string_view line, read_line(op == Op::STRING ? "STRING" : "UNICODE"));
      if (op == Op::STRING) {
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
    case Op::EMPTY_LIST: case Op::EMPTY_TUPLE: case Op::EMPTY_DICT: case Op::EMPTY_SET: {
      AMN_ASSIGN(const uint32_t id, new_value(empty_container(op == Op::EMPTY_LIST ? Kind::list : op == Op::EMPTY_TUPLE ? Kind::tuple
                                                               : op == Op::EMPTY_DICT ? Kind::dict : Kind::set)));
      return push(id);
    }
    case Op::LIST: case Op::TUPLE: case Op::FROZENSET: {  // from the mark
      AMN_ASSIGN(const size_t m, pop_mark(op == Op::LIST ? "LIST" : op == Op::TUPLE ? "TUPLE" : "FROZENSET"));
      return sequence(op == Op::LIST ? Kind::list : op == Op::TUPLE ? Kind::tuple : Kind::frozenset, m);
    }
    case Op::TUPLE1: case Op::TUPLE2: case Op::TUPLE3: {
      const size_t n = op == Op::TUPLE1 ? 1 : op == Op::TUPLE2 ? 2 : 3;
      if (stack_.size() < n || (!marks_.empty() && stack_.size() - marks_.back() < n)) {
        return parse_error("TUPLE" + num(n) + " finds fewer than " + num(n) + " values on the stack");
      }
      return sequence(Kind::tuple, stack_.size() - n);
    }
    case Op::DICT: {  // from the mark
      AMN_ASSIGN(const size_t m, pop_mark("DICT"));
      if ((stack_.size() - m) % 2) return parse_error("DICT with an odd number of values");
      AMN_ASSIGN(const uint32_t id, new_value(empty_container(Kind::dict)));
      for (size_t k = m; k < stack_.size(); ++k) AMN_TRY(add_child(id, stack_[k]));
      link(out_.values[id].node.entries, m);
      units_ -= stack_.size() - m;
      stack_.resize(m);
      return push(id);
    }
    case Op::APPEND: case Op::APPENDS: case Op::ADDITEMS: {
      size_t from;
      if (op == Op::APPEND) {
        if (stack_.size() < 2 || (!marks_.empty() && stack_.size() - marks_.back() < 2)) return parse_error("APPEND needs a list and a value");
        from = stack_.size() - 1;
      } else {
        AMN_ASSIGN(from, pop_mark(op == Op::APPENDS ? "APPENDS" : "ADDITEMS"));
        if (from == 0 || (!marks_.empty() && marks_.back() >= from)) return parse_error("APPENDS/ADDITEMS finds no container below the MARK");
      }
      const uint32_t target = stack_[from - 1];
      const Kind k = out_.values[target].kind;
      const bool ok = op == Op::ADDITEMS ? (k == Kind::set || k == Kind::object) : (k == Kind::list || k == Kind::object);
      if (!ok) return parse_error(std::string(op == Op::ADDITEMS ? "ADDITEMS" : "APPEND") + " to " + kind_name(k));
      for (size_t i = from; i < stack_.size(); ++i) AMN_TRY(add_child(target, stack_[i]));
      link(out_.values[target].node.items, from);
      units_ -= stack_.size() - from;
      stack_.resize(from);
      return {};
    }
    case Op::SETITEM: case Op::SETITEMS: {
      size_t from;
      if (op == Op::SETITEM) {
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
    case Op::GLOBAL: {  // "module\nname\n"
      AMN_ASSIGN(const std::string_view module, read_line("GLOBAL"));
      std::string m(module);
      AMN_ASSIGN(const std::string_view name, read_line("GLOBAL"));
      return global(std::move(m), std::string(name));
    }
    case Op::STACK_GLOBAL: {
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
    case Op::REDUCE: {
      AMN_ASSIGN(const uint32_t args, pop("REDUCE"));
      AMN_ASSIGN(const uint32_t callee, pop("REDUCE"));
      return make_object(callee, args, kNoValue, "REDUCE");
    }
    case Op::NEWOBJ: {
      AMN_ASSIGN(const uint32_t args, pop("NEWOBJ"));
      AMN_ASSIGN(const uint32_t cls, pop("NEWOBJ"));
      return make_object(cls, args, kNoValue, "NEWOBJ");
    }
    case Op::NEWOBJ_EX: {
      AMN_ASSIGN(const uint32_t kwargs, pop("NEWOBJ_EX"));
      AMN_ASSIGN(const uint32_t args, pop("NEWOBJ_EX"));
      AMN_ASSIGN(const uint32_t cls, pop("NEWOBJ_EX"));
      if (out_.values[kwargs].kind != Kind::dict) return parse_error("NEWOBJ_EX's keyword arguments are not a dict");
      return make_object(cls, args, kwargs, "NEWOBJ_EX");
    }
    case Op::INST: {  // "module\nname\n", arguments from the mark
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
    case Op::OBJ: {  // class and arguments from the mark
      AMN_ASSIGN(const size_t mark, pop_mark("OBJ"));
      if (stack_.size() == mark) return parse_error("OBJ finds no class after the MARK");
      const uint32_t cls = stack_[mark];
      AMN_TRY(sequence(Kind::tuple, mark + 1));
      AMN_ASSIGN(const uint32_t args, pop("OBJ"));
      AMN_ASSIGN(const uint32_t c, pop("OBJ"));
      (void)c;
      return make_object(cls, args, kNoValue, "OBJ");
    }
    case Op::BUILD: {
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
    case Op::PUT: {  // a text index
      AMN_ASSIGN(const std::string_view line, read_line("PUT"));
      int64_t idx;
      if (!parse_decimal(line, idx) || idx < 0) return parse_error("PUT index '" + printable(line, kShownChars) + "'");
      return memo_put(static_cast<uint64_t>(idx));
    }
    case Op::BINPUT: case Op::LONG_BINPUT: {
      AMN_ASSIGN(const uint64_t idx, read_uint(op == Op::BINPUT ? 1 : 4, "BINPUT"));
      return memo_put(idx);
    }
    case Op::MEMOIZE:
      return memo_put(memo_.size());
    case Op::GET: {  // a text index
      AMN_ASSIGN(const std::string_view line, read_line("GET"));
      int64_t idx;
      if (!parse_decimal(line, idx) || idx < 0) return parse_error("GET index '" + printable(line, kShownChars) + "'");
      return memo_get(static_cast<uint64_t>(idx));
    }
    case Op::BINGET: case Op::LONG_BINGET: {
      AMN_ASSIGN(const uint64_t idx, read_uint(op == Op::BINGET ? 1 : 4, "BINGET"));
      return memo_get(idx);
    }
    case Op::PERSID: case Op::BINPERSID: {  // PERSID's pid is text
      uint32_t pid;
      if (op == Op::PERSID) {
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
    case Op::EXT1: case Op::EXT2: case Op::EXT4:
      return make_error(ErrorCode::unsupported, "pickle: EXT opcodes (the copyreg extension registry) at offset " + num(opt_.base_offset + op_pos_),
                        opt_.base_offset + op_pos_);
    case Op::NEXT_BUFFER: case Op::READONLY_BUFFER:
      return make_error(ErrorCode::unsupported, "pickle: out-of-band buffers (NEXT_BUFFER / READONLY_BUFFER) at offset " + num(opt_.base_offset + op_pos_),
                        opt_.base_offset + op_pos_);
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(op));
      return parse_error(std::string("unknown opcode ") + buf);
    }
  }
}

}  // namespace amn::pickle::internal
