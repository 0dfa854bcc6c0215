// How blobs are encoded at rest: zstd (level 3) when it saves space, raw
// otherwise. Content addresses are the lower-case hex SHA-256 of the RAW bytes,
// so the same content has one address whatever its encoding.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace assay {

enum class BlobCodec { kRaw, kZstd };

std::string_view BlobCodecName(BlobCodec c);  // "raw" | "zstd" (the stored column value)

struct EncodedBlob {
  BlobCodec codec = BlobCodec::kRaw;
  std::string data;  // what is stored
};

// zstd level 3; falls back to raw when the compressed form is not smaller.
Result<EncodedBlob> EncodeBlob(std::string_view raw);

// Decodes `stored` (codec by its column name) to exactly `raw_size` bytes and
// checks that their SHA-256 is `hash`. Any mismatch is an Infra error: the
// store handed back bytes that are not what was put.
Result<std::string> DecodeBlob(std::string_view codec, std::string_view stored, int64_t raw_size,
                               std::string_view hash);

// Whether `hash` looks like a content address: 64 lower-case hex chars.
bool IsBlobHash(std::string_view hash);

}  // namespace assay
