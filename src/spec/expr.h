// A small, safe integer expression language for shapes and launch sizes:
//   "n", "ceil_div(n, 256)", "max(1, rows * cols / 4)", "2 * (k + 1) % 7", "-n"
// Integers (decimal), names, + - * / % (C semantics: truncation toward zero),
// unary minus, parentheses, and the functions ceil_div(a, b), min(a, b),
// max(a, b). Every operation is checked: division by zero and int64 overflow
// are errors, never undefined behaviour. Input length and nesting depth are
// bounded so hostile input cannot exhaust the stack.
//
// Errors are Status::Rejected with a message naming the column; the field is
// left empty, the caller knows the JSON path and sets it.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace assay {

inline constexpr size_t kMaxExprLength = 256;  // [bytes]
inline constexpr int kMaxExprDepth = 32;       // nested parentheses/calls/unary minus

// Evaluates `text` with the given variable values.
Result<int64_t> EvalExpr(std::string_view text, const std::map<std::string, int64_t>& vars);

// Checks syntax and that every name used is in `names`, without evaluating
// (so no division-by-zero or overflow errors).
Status CheckExpr(std::string_view text, const std::set<std::string>& names);

}  // namespace assay
