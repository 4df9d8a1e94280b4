// Names of the elementwise operations and the checks of a program: what the
// library relies on before it reads a leaf or runs an instruction.
#include <string>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/error.hpp"

namespace egpu::detail {

const char* op_name(EwOp op) {
  switch (op) {
    case EwOp::load: return "load";
    case EwOp::constant: return "constant";
    case EwOp::negate: return "negate";
    case EwOp::abs: return "abs";
    case EwOp::abs2: return "abs2";
    case EwOp::sqrt: return "sqrt";
    case EwOp::rsqrt: return "rsqrt";
    case EwOp::square: return "square";
    case EwOp::cube: return "cube";
    case EwOp::inverse: return "inverse";
    case EwOp::exp: return "exp";
    case EwOp::expm1: return "expm1";
    case EwOp::log: return "log";
    case EwOp::log1p: return "log1p";
    case EwOp::log10: return "log10";
    case EwOp::sin: return "sin";
    case EwOp::cos: return "cos";
    case EwOp::tan: return "tan";
    case EwOp::asin: return "asin";
    case EwOp::acos: return "acos";
    case EwOp::atan: return "atan";
    case EwOp::sinh: return "sinh";
    case EwOp::cosh: return "cosh";
    case EwOp::tanh: return "tanh";
    case EwOp::floor: return "floor";
    case EwOp::ceil: return "ceil";
    case EwOp::round: return "round";
    case EwOp::real: return "real";
    case EwOp::imag: return "imag";
    case EwOp::conj: return "conj";
    case EwOp::arg: return "arg";
    case EwOp::logical_not: return "logical_not";
    case EwOp::cast: return "cast";
    case EwOp::add: return "add";
    case EwOp::sub: return "sub";
    case EwOp::mul: return "mul";
    case EwOp::div: return "div";
    case EwOp::min: return "min";
    case EwOp::max: return "max";
    case EwOp::pow: return "pow";
    case EwOp::eq: return "eq";
    case EwOp::ne: return "ne";
    case EwOp::lt: return "lt";
    case EwOp::le: return "le";
    case EwOp::gt: return "gt";
    case EwOp::ge: return "ge";
    case EwOp::logical_and: return "logical_and";
    case EwOp::logical_or: return "logical_or";
    case EwOp::select: return "select";
  }
  return "unknown";
}

namespace {

const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::f32: return "float";
    case ValueKind::f64: return "double";
    case ValueKind::c32: return "complex<float>";
    case ValueKind::c64: return "complex<double>";
    case ValueKind::boolean: return "bool";
  }
  return "unknown";
}

ValueKind real_kind(ValueKind k) {
  return k == ValueKind::c32 ? ValueKind::f32 : k == ValueKind::c64 ? ValueKind::f64 : k;
}

// The operands an operation takes (1, 2 or 3; 0 for leaves).
int arity(EwOp op) {
  if (op == EwOp::load || op == EwOp::constant) return 0;
  if (op == EwOp::select) return 3;
  if (op >= EwOp::add) return 2;
  return 1;
}

// The type of op applied to operands of kinds x and y (y unused for unary
// ones), or false where Eigen has no such operation.
bool result_kind(EwOp op, ValueKind x, ValueKind y, ValueKind* out) {
  const bool xb = x == ValueKind::boolean, yb = y == ValueKind::boolean;
  switch (op) {
    case EwOp::logical_not: *out = ValueKind::boolean; return xb;
    case EwOp::abs: case EwOp::abs2: case EwOp::real: case EwOp::imag: case EwOp::arg:
      *out = real_kind(x); return !xb;
    case EwOp::floor: case EwOp::ceil: case EwOp::round:
      *out = x; return !xb && !is_complex(x);
    case EwOp::add: case EwOp::sub: case EwOp::mul: case EwOp::div: {
      // equal types, or a real type with its complex
      if (xb || yb || real_kind(x) != real_kind(y)) return false;
      *out = is_complex(x) ? x : y;
      return true;
    }
    case EwOp::pow: *out = x; return !xb && x == y;
    case EwOp::min: case EwOp::max: *out = x; return !xb && x == y && !is_complex(x);
    case EwOp::eq: case EwOp::ne: *out = ValueKind::boolean; return !xb && x == y;
    case EwOp::lt: case EwOp::le: case EwOp::gt: case EwOp::ge:
      *out = ValueKind::boolean; return !xb && x == y && !is_complex(x);
    case EwOp::logical_and: case EwOp::logical_or: *out = ValueKind::boolean; return xb && yb;
    default:  // the other unary operations keep the type
      *out = x; return !xb;
  }
}

[[noreturn]] void fail(std::size_t at, const EwInstr& in, const std::string& why) {
  throw error("elementwise program: instruction " + std::to_string(at) + " (" + op_name(in.op) + "): " + why);
}

}  // namespace

void validate(const ElementwiseProgram& p) {
  validate(p, false);
}

void validate(const ElementwiseProgram& p, bool boolean_value) {
  if (p.rows < 0 || p.cols < 0) throw error("elementwise program: negative size");
  if (p.code.empty()) throw error("elementwise program: no instructions");
  if (p.code.size() > 32767) throw error("elementwise program: more than 32767 instructions");
  if (!boolean_value && p.code.back().type == ValueKind::boolean)
    throw error("elementwise program: the result is boolean; assign a scalar (select() or cast<>())");
  for (std::size_t t = 0; t < p.code.size(); ++t) {
    const EwInstr& in = p.code[t];
    const int n = arity(in.op);
    const int operands[3] = {in.x, in.y, in.z};
    for (int k = 0; k < 3; ++k) {
      const bool used = k < n;
      if (used && (operands[k] < 0 || static_cast<std::size_t>(operands[k]) >= t))
        fail(t, in, "operand " + std::to_string(k) + " is not an earlier instruction");
      if (!used && operands[k] != -1) fail(t, in, "unused operand set");
    }
    if (in.op == EwOp::load) {
      if (in.index < 0 || static_cast<std::size_t>(in.index) >= p.leaves.size()) fail(t, in, "no such leaf");
      const EwLeaf& leaf = p.leaves[static_cast<std::size_t>(in.index)];
      if (value_kind(leaf.scalar) != in.type) fail(t, in, "the leaf's scalar is not the instruction's type");
      if (leaf.m.rows != p.rows || leaf.m.cols != p.cols)
        fail(t, in, "the leaf is " + std::to_string(leaf.m.rows) + "x" + std::to_string(leaf.m.cols) +
                        " but the expression is " + std::to_string(p.rows) + "x" + std::to_string(p.cols));
      if (p.rows > 0 && p.cols > 0 && leaf.m.data == nullptr) fail(t, in, "the leaf has no data");
      continue;
    }
    if (in.op == EwOp::constant) {
      if (in.index < 0 || static_cast<std::size_t>(in.index) >= p.constants.size()) fail(t, in, "no such constant");
      if (in.type == ValueKind::boolean) fail(t, in, "a boolean constant");
      continue;
    }
    const ValueKind x = p.code[static_cast<std::size_t>(in.x)].type;
    if (in.op == EwOp::cast) {
      if (in.type == ValueKind::boolean) fail(t, in, "a cast to bool");
      if (is_complex(x) && !is_complex(in.type)) fail(t, in, "a cast from complex to real (Eigen has none)");
      continue;
    }
    if (in.op == EwOp::select) {
      const ValueKind y = p.code[static_cast<std::size_t>(in.y)].type, z = p.code[static_cast<std::size_t>(in.z)].type;
      if (x != ValueKind::boolean) fail(t, in, "the condition is not boolean");
      if (y != in.type || z != in.type) fail(t, in, "the two branches are not of the result's type");
      continue;
    }
    const ValueKind y = n == 2 ? p.code[static_cast<std::size_t>(in.y)].type : x;
    ValueKind expected = x;
    if (!result_kind(in.op, x, y, &expected))
      fail(t, in, std::string("no such operation on ") + kind_name(x) + (n == 2 ? std::string(", ") + kind_name(y) : ""));
    if (expected != in.type)
      fail(t, in, std::string("gives ") + kind_name(expected) + ", not " + kind_name(in.type));
  }
}

}  // namespace egpu::detail
