#include "spec/expr.h"

#include <cctype>
#include <string>

namespace assay {
namespace {

// Recursive descent over:
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := '-' unary | primary
//   primary := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
// In check-only mode names are looked up in a set and no arithmetic is done.
class Parser {
 public:
  Parser(std::string_view text, const std::map<std::string, int64_t>* vars,
         const std::set<std::string>* names)
      : text_(text), vars_(vars), names_(names) {}

  Result<int64_t> Run() {
    if (text_.size() > kMaxExprLength)
      return Status::Rejected("expression is longer than " + std::to_string(kMaxExprLength) +
                              " bytes");
    SkipSpace();
    if (pos_ == text_.size()) return Status::Rejected("empty expression");
    int64_t v = 0;
    if (!Expr(&v)) return Status::Rejected(error_);
    SkipSpace();
    if (pos_ != text_.size()) {
      Fail("unexpected '" + std::string(1, text_[pos_]) + "'");
      return Status::Rejected(error_);
    }
    return v;
  }

 private:
  bool check_only() const { return vars_ == nullptr; }

  bool Fail(std::string what) {
    if (error_.empty()) error_ = what + " at column " + std::to_string(pos_ + 1);
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Accept(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }

  bool Expr(int64_t* out) {
    if (!Term(out)) return false;
    for (;;) {
      char op = Peek('+') ? '+' : Peek('-') ? '-' : 0;
      if (!op) return true;
      ++pos_;
      int64_t rhs = 0;
      if (!Term(&rhs)) return false;
      if (check_only()) continue;
      bool overflow = op == '+' ? __builtin_add_overflow(*out, rhs, out)
                                : __builtin_sub_overflow(*out, rhs, out);
      if (overflow) return Fail("integer overflow");
    }
  }

  bool Term(int64_t* out) {
    if (!Unary(out)) return false;
    for (;;) {
      char op = Peek('*') ? '*' : Peek('/') ? '/' : Peek('%') ? '%' : 0;
      if (!op) return true;
      ++pos_;
      int64_t rhs = 0;
      if (!Unary(&rhs)) return false;
      if (check_only()) continue;
      if (op == '*') {
        if (__builtin_mul_overflow(*out, rhs, out)) return Fail("integer overflow");
        continue;
      }
      if (rhs == 0) return Fail("division by zero");
      if (*out == INT64_MIN && rhs == -1) return Fail("integer overflow");
      *out = op == '/' ? *out / rhs : *out % rhs;
    }
  }

  bool Unary(int64_t* out) {
    if (!Accept('-')) return Primary(out);
    if (++depth_ > kMaxExprDepth) return Fail("expression nested too deeply");
    if (!Unary(out)) return false;
    --depth_;
    if (check_only()) return true;
    if (*out == INT64_MIN) return Fail("integer overflow");
    *out = -*out;
    return true;
  }

  bool Primary(int64_t* out) {
    SkipSpace();
    if (pos_ >= text_.size()) return Fail("unexpected end of expression");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      if (++depth_ > kMaxExprDepth) return Fail("expression nested too deeply");
      if (!Expr(out)) return false;
      --depth_;
      if (!Accept(')')) return Fail("expected ')'");
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return Number(out);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return NameOrCall(out);
    return Fail("unexpected '" + std::string(1, c) + "'");
  }

  bool Number(int64_t* out) {
    int64_t v = 0;
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v)) {
        pos_ = start;
        return Fail("integer literal out of range");
      }
      ++pos_;
    }
    if (pos_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      return Fail("unexpected '" + std::string(1, text_[pos_]) + "' after a number");
    *out = v;
    return true;
  }

  bool NameOrCall(int64_t* out) {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (Peek('(')) return Call(name, start, out);
    if (check_only()) {
      if (names_->count(name)) return true;
    } else if (auto it = vars_->find(name); it != vars_->end()) {
      *out = it->second;
      return true;
    }
    pos_ = start;
    return Fail("unknown name '" + name + "'");
  }

  bool Call(const std::string& fn, size_t start, int64_t* out) {
    if (fn != "ceil_div" && fn != "min" && fn != "max") {
      pos_ = start;
      return Fail("unknown function '" + fn + "' (known: ceil_div, min, max)");
    }
    Accept('(');
    if (++depth_ > kMaxExprDepth) return Fail("expression nested too deeply");
    int64_t a = 0, b = 0;
    if (!Expr(&a)) return false;
    if (!Accept(',')) return Fail(fn + "() takes two arguments; expected ','");
    if (!Expr(&b)) return false;
    if (!Accept(')')) return Fail(fn + "() takes two arguments; expected ')'");
    --depth_;
    if (check_only()) return true;
    if (fn == "min") {
      *out = a < b ? a : b;
    } else if (fn == "max") {
      *out = a > b ? a : b;
    } else {
      // Sizes only: a negative count or divisor is a bug in the spec.
      if (b <= 0 || a < 0) {
        pos_ = start;
        return Fail("ceil_div(a, b) needs a >= 0 and b > 0, got ceil_div(" + std::to_string(a) +
                    ", " + std::to_string(b) + ")");
      }
      *out = a / b + (a % b != 0 ? 1 : 0);
    }
    return true;
  }

  std::string_view text_;
  const std::map<std::string, int64_t>* vars_;
  const std::set<std::string>* names_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

Result<int64_t> EvalExpr(std::string_view text, const std::map<std::string, int64_t>& vars) {
  return Parser(text, &vars, nullptr).Run();
}

Status CheckExpr(std::string_view text, const std::set<std::string>& names) {
  Result<int64_t> r = Parser(text, nullptr, &names).Run();
  return r.ok() ? Status::Ok() : r.status();
}

}  // namespace assay
