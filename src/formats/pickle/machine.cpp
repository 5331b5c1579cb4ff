// The pickle machine: its values, stack, marks and memo, each charged against the limits
// as it grows, and the run loop (step.cpp says what each opcode does).
#include "formats/pickle/machine.h"

#include <algorithm>
#include <cstring>

#include "core/bytes.h"
#include "core/checked.h"

namespace amn::pickle::internal {

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

bool has_children(Kind k) {
  return k == Kind::tuple || k == Kind::list || k == Kind::dict || k == Kind::set || k == Kind::frozenset ||
         k == Kind::object;
}

Status Machine::charge(uint64_t units, uint64_t bytes) {
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

Result<uint32_t> Machine::new_value(const Record& r, uint64_t extra_bytes) {
  AMN_TRY(charge(1, sizeof(Record) + extra_bytes));
  out_.values.push_back(r);
  return static_cast<uint32_t>(out_.values.size() - 1);
}

// Appends a payload to the text arena; its offset there.
uint64_t Machine::add_text(std::string_view s) {
  const uint64_t at = out_.text.size();
  out_.text.append(s);
  return at;
}

void Machine::link(Record::Span& list, size_t from) {
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

// One contiguous run per container: a single chain link is used where it lies, longer
// chains are copied, oldest first, to the end of the slots (at most doubling them).
void Machine::finish() {
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

Status Machine::push(uint32_t v) {
  AMN_TRY(charge(1, 0));
  stack_.push_back(v);
  return {};
}

Result<uint32_t> Machine::pop(const char* op) {
  if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
    return parse_error(std::string(op) + " finds no value on the stack");
  }
  const uint32_t v = stack_.back();
  stack_.pop_back();
  --units_;
  return v;
}

Result<uint32_t> Machine::top(const char* op) {
  if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
    return parse_error(std::string(op) + " finds no value on the stack");
  }
  return stack_.back();
}

Result<size_t> Machine::pop_mark(const char* op) {
  if (marks_.empty()) return parse_error(std::string(op) + " finds no MARK");
  const size_t m = marks_.back();
  marks_.pop_back();
  --units_;
  return m;
}

Status Machine::add_child(uint32_t container, uint32_t child) {
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

Result<std::string_view> Machine::read_line(const char* op) {
  const auto* begin = in_.data() + pos_;
  const auto* nl = static_cast<const uint8_t*>(std::memchr(begin, '\n', in_.size() - pos_));
  if (!nl) return truncated(std::string(op) + "'s text argument");
  std::string_view line(reinterpret_cast<const char*>(begin), static_cast<size_t>(nl - begin));
  pos_ += line.size() + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

Result<uint64_t> Machine::read_uint(unsigned n, const char* op) {
  AMN_TRY(need(n, op));
  const uint64_t v = load_le(in_.data() + pos_, n);
  pos_ += n;
  return v;
}

Status Machine::push_string(Kind kind, uint64_t n, const char* op) {
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

Status Machine::global(std::string module, std::string name) {
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
Status Machine::make_object(uint32_t callee, uint32_t args, uint32_t kwargs, const char* op) {
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

Status Machine::memo_put(uint64_t index) {
  AMN_ASSIGN(const uint32_t v, top("PUT"));
  auto [it, fresh] = memo_.emplace(index, v);
  if (fresh) return charge(1, 0);
  it->second = v;
  return {};
}

Status Machine::memo_get(uint64_t index) {
  auto it = memo_.find(index);
  if (it == memo_.end()) return parse_error("GET of memo entry " + num(index) + ", which was never PUT");
  return push(it->second);
}

// Pops the values above stack position `from` into a new container.
Status Machine::sequence(Kind kind, size_t from) {
  AMN_ASSIGN(const uint32_t id, new_value(empty_container(kind)));
  const size_t n = stack_.size() - from;
  for (size_t k = from; k < stack_.size(); ++k) AMN_TRY(add_child(id, stack_[k]));
  link(out_.values[id].node.items, from);
  stack_.resize(from);
  units_ -= n;
  return push(id);
}

Result<Pickle> Machine::run() {
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
    const auto op = static_cast<Op>(in_[pos_++]);
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

Error Machine::disallowed_error() const {
  {
    std::string names;
    uint64_t named = 0, distinct = 0;
    uint64_t first = kNoOffset;
    for (const auto& g : out_.globals) {
      if (g.allowed) continue;
      ++distinct;
      if (first == kNoOffset) first = g.first_offset;
      if (named < opt_.max_named_in_error) {
        names += (named ? ", " : "") + printable(global_name(g), kShownChars);
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

}  // namespace amn::pickle::internal
