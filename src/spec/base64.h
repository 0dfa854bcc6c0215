// Standard base64 (RFC 4648, with padding), for binary sources (cubin, fatbin)
// carried inside a JSON spec. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace assay {

std::string Base64Encode(std::string_view bytes);
// nullopt on any character outside the alphabet, bad padding or bad length.
// Whitespace is not accepted: the spec's base64 is machine-written.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace assay
