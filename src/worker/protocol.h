// The framed protocol between the server (WorkerClient) and an `assay worker`
// process, over two pipes (server -> worker on the worker's fd 3, worker ->
// server on its fd 4). Specified in docs/workers.md#protocol.
//
// A frame is:  u32 LE json_len | u32 LE payload_len | json bytes | payload bytes
// The JSON is an object with "v" (kProtocolVersion) and "type"; the payload is
// opaque bytes (may be empty) that belong to the message.
//
// Thread-safety: the functions are reentrant; concurrent writers to one fd must
// serialize themselves (a frame is written in several write() calls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace assay {

// Bump on any incompatible change (see docs/workers.md for the rules). Both
// ends refuse a frame with another version.
inline constexpr int kProtocolVersion = 1;
inline constexpr uint32_t kMaxFrameJsonBytes = 16u << 20;     // 16 MiB
inline constexpr uint32_t kMaxFramePayloadBytes = 1u << 30;   // 1 GiB

struct Frame {
  nlohmann::json json;   // an object with "v" and "type"
  std::string payload;   // opaque bytes
};

// Why ReadFrame failed. EOF means the writer closed its end (for the server:
// the worker died or exited); kMalformed means the stream cannot be trusted any more.
enum class FrameError { kNone, kEof, kTimeout, kMalformed, kIo };

// Writes one whole frame. If `fd` is O_NONBLOCK, waits up to timeout_ms [ms]
// (-1 = forever) for room in the pipe; a blocking fd blocks. Retries EINTR.
// Infra on a closed reader (EPIPE: needs SIGPIPE ignored), an oversized frame or
// a timeout. The JSON is serialized with invalid UTF-8 replaced.
Status WriteFrame(int fd, const Frame& frame, int64_t timeout_ms = -1);

// Reads one frame. timeout_ms [ms] (-1 = forever) bounds the wait for the
// frame's first byte; once a frame has begun, the rest must follow within
// max(timeout_ms, 5000) ms or the stream is declared malformed (a writer never
// stops half-way through a frame unless it died). Failures: Timeout for
// kTimeout, Infra otherwise; *why (optional) says which.
Result<Frame> ReadFrame(int fd, int64_t timeout_ms, FrameError* why = nullptr);

// {"v": 1, "type": type}
nlohmann::json NewMessage(std::string_view type);
// The "type" of a message with the right version; Infra otherwise.
Result<std::string> MessageType(const nlohmann::json& message);

// A Status as {"class": "runtime_error", "message": "..."} and back
// (an unknown class becomes infra_error).
nlohmann::json StatusToJson(const Status& s);
Status StatusFromJson(const nlohmann::json& j);

}  // namespace assay
