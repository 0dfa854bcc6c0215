#include "spec/contract_header.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "spec/json_reader.h"

namespace assay {
namespace {

constexpr std::string_view kBlockOpen = "/* assay:";
constexpr std::string_view kLineOpen = "// assay:";
constexpr int kMaxHeaderDepth = 64;

std::string LineMsg(int line, std::string_view what) {
  return "assay header, line " + std::to_string(line) + ": " + std::string(what);
}

// The header body, with a map from body offsets back to source lines.
struct Body {
  std::string text;
  std::vector<std::pair<size_t, int>> lines;  // (offset in text, source line), ascending
  int first_line = 0;
  int LineAt(size_t offset) const {
    int line = first_line;
    for (const auto& [off, l] : lines)
      if (off <= offset) line = l;
    return line;
  }
};

// nlohmann's messages count lines within the body; keep only the reason.
std::string ParseReason(const std::string& what) {
  size_t at = what.find("column ");
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  return what;
}

// 1-based line of the first invalid UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if the text is valid.
// The same rules as the JSON layer, which refuses to write anything else.
int FirstBadUtf8Line(std::string_view s) {
  int line = 1;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n') ++line;
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    if (len == 0 || i + len > s.size()) return line;
    for (size_t k = 1; k < len; ++k) {
      unsigned char b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return line;
    }
    i += len;
  }
  return 0;
}

}  // namespace

Result<nlohmann::json> ExtractContractHeader(std::string_view source) {
  Body body;
  enum { kNone, kBlock, kLines } form = kNone;
  bool lines_open = false;  // the last line was a "// assay:" line
  int line_no = 0;
  size_t pos = 0;
  while (pos < source.size()) {
    ++line_no;
    size_t eol = source.find('\n', pos);
    if (eol == std::string_view::npos) eol = source.size();
    std::string_view line = source.substr(pos, eol - pos);
    size_t next = eol + 1;
    size_t indent = line.find_first_not_of(" \t");
    std::string_view trimmed = indent == std::string_view::npos ? "" : line.substr(indent);
    bool is_block = trimmed.substr(0, kBlockOpen.size()) == kBlockOpen;
    bool is_line = trimmed.substr(0, kLineOpen.size()) == kLineOpen;
    if ((is_block || (is_line && !lines_open)) && form != kNone)
      return Status::Rejected(LineMsg(line_no, "a second assay header (the first is at line " +
                                                   std::to_string(body.first_line) +
                                                   "); a file has one"));
    if (is_block) {
      form = kBlock;
      body.first_line = line_no;
      size_t start = pos + indent + kBlockOpen.size();
      size_t close = source.find("*/", start);
      if (close == std::string_view::npos)
        return Status::Rejected(LineMsg(line_no, "the header comment is never closed with */"));
      body.text = std::string(source.substr(start, close - start));
      int l = line_no;
      body.lines.push_back({0, l});
      for (size_t i = 0; i < body.text.size(); ++i)
        if (body.text[i] == '\n') body.lines.push_back({i + 1, ++l});
      // Continue scanning after the comment, so a second header is caught.
      line_no = l;
      next = source.find('\n', close);
      next = next == std::string_view::npos ? source.size() : next + 1;
      lines_open = false;
    } else if (is_line) {
      if (form == kNone) form = kLines, body.first_line = line_no;
      if (!body.text.empty()) body.text += '\n';
      body.lines.push_back({body.text.size(), line_no});
      body.text += trimmed.substr(kLineOpen.size());
      lines_open = true;
    } else {
      lines_open = false;
    }
    pos = next;
  }
  if (form == kNone) return nlohmann::json::object();
  if (!spec_internal::JsonDepthWithin(body.text, kMaxHeaderDepth))
    return Status::Rejected(LineMsg(body.first_line, "the header nests deeper than " +
                                                         std::to_string(kMaxHeaderDepth) +
                                                         " levels"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.text);
  } catch (const nlohmann::json::parse_error& e) {
    size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    return Status::Rejected(LineMsg(body.LineAt(byte), "invalid JSON: " + ParseReason(e.what())));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range: a number too large
    return Status::Rejected(LineMsg(body.first_line, "invalid JSON: " + ParseReason(e.what())));
  }
  if (!j.is_object())
    return Status::Rejected(LineMsg(body.first_line, "the header must be a JSON object {...}"));
  return j;
}

bool HasMainFunction(std::string_view source) {
  for (size_t at = source.find("main"); at != std::string_view::npos;
       at = source.find("main", at + 1)) {
    if (at > 0) {
      char before = source[at - 1];
      if (std::isalnum(static_cast<unsigned char>(before)) || before == '_') continue;
    }
    size_t i = at + 4;
    while (i < source.size() && (source[i] == ' ' || source[i] == '\t' || source[i] == '\n')) ++i;
    if (i < source.size() && source[i] == '(') return true;
  }
  return false;
}

Result<nlohmann::json> SpecFromSourceFile(std::string_view source, std::string_view filename) {
  auto header = ExtractContractHeader(source);
  if (!header.ok()) return header.status();
  nlohmann::json spec = std::move(header).value();
  bool has_header = !spec.empty();
  if (spec.contains("source"))
    return Status::Rejected("the assay header cannot carry 'source': the file is the source",
                            "source");
  if (!spec.contains("kind")) {
    if (has_header) spec["kind"] = "cuda";
    else if (HasMainFunction(source)) spec["kind"] = "cuda_program";
  }
  if (int line = FirstBadUtf8Line(source))
    return Status::Rejected("line " + std::to_string(line) +
                                ": the file is not UTF-8 text (send binaries as blob or base64)",
                            "source.text");
  spec["source"] = {{"text", std::string(source)}};
  if (!filename.empty()) spec["source"]["filename"] = std::string(filename);
  return spec;
}

}  // namespace assay
