#include "worker/protocol.h"

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/util.h"

namespace assay {
namespace {

constexpr int64_t kMinFrameRestMs = 5000;

void PutLe32(uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t GetLe32(const unsigned char* in) {
  return uint32_t{in[0]} | uint32_t{in[1]} << 8 | uint32_t{in[2]} << 16 | uint32_t{in[3]} << 24;
}

// Waits for `events` on fd until the absolute monotonic deadline (-1 = forever).
// Returns 1 ready, 0 timeout, -1 error (errno set).
int WaitFd(int fd, short events, int64_t deadline) {
  while (true) {
    int wait_ms = -1;
    if (deadline >= 0) wait_ms = static_cast<int>(std::max<int64_t>(0, deadline - MonotonicMs()));
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

Result<Frame> Fail(FrameError kind, FrameError* why, std::string msg) {
  if (why != nullptr) *why = kind;
  if (kind == FrameError::kTimeout) return Status::Timeout(std::move(msg));
  return Status::Infra(std::move(msg));
}

// Reads exactly `size` bytes. Returns bytes read before EOF (< size) or -1 on
// error / deadline (errno ETIMEDOUT for the deadline).
ssize_t ReadFull(int fd, char* buf, size_t size, int64_t deadline) {
  size_t got = 0;
  while (got < size) {
    int ready = WaitFd(fd, POLLIN, deadline);
    if (ready < 0) return -1;
    if (ready == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    ssize_t n = read(fd, buf + got, size - got);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

Status WriteFrame(int fd, const Frame& frame, int64_t timeout_ms) {
  std::string json = frame.json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (json.size() > kMaxFrameJsonBytes) {
    return Status::Infra("frame JSON of " + std::to_string(json.size()) + " bytes exceeds the 16 MiB limit");
  }
  if (frame.payload.size() > kMaxFramePayloadBytes) {
    return Status::Infra("frame payload of " + std::to_string(frame.payload.size()) +
                         " bytes exceeds the 1 GiB limit");
  }
  unsigned char header[8];
  PutLe32(static_cast<uint32_t>(json.size()), header);
  PutLe32(static_cast<uint32_t>(frame.payload.size()), header + 4);

  struct iovec iov[3] = {{header, sizeof header},
                         {json.data(), json.size()},
                         {const_cast<char*>(frame.payload.data()), frame.payload.size()}};
  int first = 0;
  const int64_t deadline = timeout_ms < 0 ? -1 : MonotonicMs() + timeout_ms;
  while (first < 3) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    ssize_t n = writev(fd, iov + first, 3 - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        int ready = WaitFd(fd, POLLOUT, deadline);
        if (ready == 0) return Status::Infra("timed out writing a frame: the reader is not reading");
        if (ready < 0) return Status::Infra(std::string("poll: ") + strerror(errno));
        continue;
      }
      return Status::Infra(std::string("writing a frame: ") + strerror(errno));
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0 && first < 3) {
      size_t take = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + take;
      iov[first].iov_len -= take;
      left -= take;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return Status::Ok();
}

Result<Frame> ReadFrame(int fd, int64_t timeout_ms, FrameError* why) {
  if (why != nullptr) *why = FrameError::kNone;
  const int64_t start = MonotonicMs();
  int ready = WaitFd(fd, POLLIN, timeout_ms < 0 ? -1 : start + timeout_ms);
  if (ready == 0) return Fail(FrameError::kTimeout, why, "no frame within " + std::to_string(timeout_ms) + " ms");
  if (ready < 0) return Fail(FrameError::kIo, why, std::string("poll: ") + strerror(errno));

  // The frame has begun: the rest follows promptly unless the writer died.
  const int64_t rest_deadline = MonotonicMs() + std::max(timeout_ms, kMinFrameRestMs);
  unsigned char header[8];
  ssize_t n = ReadFull(fd, reinterpret_cast<char*>(header), sizeof header, rest_deadline);
  if (n == 0) return Fail(FrameError::kEof, why, "the peer closed the pipe");
  if (n < 0) {
    if (errno == ETIMEDOUT) return Fail(FrameError::kMalformed, why, "frame header stalled");
    return Fail(FrameError::kIo, why, std::string("reading a frame: ") + strerror(errno));
  }
  if (n < static_cast<ssize_t>(sizeof header)) return Fail(FrameError::kMalformed, why, "truncated frame header");
  uint32_t json_len = GetLe32(header);
  uint32_t payload_len = GetLe32(header + 4);
  if (json_len > kMaxFrameJsonBytes) {
    return Fail(FrameError::kMalformed, why, "frame JSON length " + std::to_string(json_len) + " exceeds 16 MiB");
  }
  if (payload_len > kMaxFramePayloadBytes) {
    return Fail(FrameError::kMalformed, why,
                "frame payload length " + std::to_string(payload_len) + " exceeds 1 GiB");
  }
  std::string json(json_len, '\0');
  Frame frame;
  frame.payload.resize(payload_len);
  for (std::string* part : {&json, &frame.payload}) {
    if (part->empty()) continue;
    n = ReadFull(fd, part->data(), part->size(), rest_deadline);
    if (n < 0 && errno != ETIMEDOUT) {
      return Fail(FrameError::kIo, why, std::string("reading a frame: ") + strerror(errno));
    }
    if (n != static_cast<ssize_t>(part->size())) {
      return Fail(FrameError::kMalformed, why, n < 0 ? "frame body stalled" : "truncated frame body");
    }
  }
  frame.json = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (frame.json.is_discarded() || !frame.json.is_object()) {
    return Fail(FrameError::kMalformed, why, "frame JSON is not a JSON object");
  }
  return frame;
}

nlohmann::json NewMessage(std::string_view type) {
  return nlohmann::json{{"v", kProtocolVersion}, {"type", type}};
}

Result<std::string> MessageType(const nlohmann::json& m) {
  auto v = m.find("v");
  if (v == m.end() || !v->is_number_integer() || v->get<int>() != kProtocolVersion) {
    return Status::Infra("worker protocol version mismatch: expected v=" + std::to_string(kProtocolVersion) +
                         ", got " + (v == m.end() ? std::string("none") : v->dump()));
  }
  auto t = m.find("type");
  if (t == m.end() || !t->is_string()) return Status::Infra("worker message without a type");
  return t->get<std::string>();
}

nlohmann::json StatusToJson(const Status& s) {
  return nlohmann::json{{"class", ErrorClassName(s.error_class())}, {"message", s.message()}};
}

Status StatusFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::Infra("malformed status from the worker");
  std::string name = j.value("class", "infra_error");
  std::string message = j.value("message", "");
  auto c = ErrorClassFromName(name);
  if (!c) return Status::Infra("unknown error class '" + name + "' from the worker: " + message);
  if (*c == ErrorClass::kOk) return Status::Ok();
  return Status(*c, std::move(message));
}

}  // namespace assay
