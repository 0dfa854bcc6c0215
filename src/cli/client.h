// The CLI's HTTP client for the Assay API (docs/api.md). Every failure is a
// Status: the server's error document keeps its class; a transport failure
// becomes infra_error "cannot reach the Assay server at URL: ...".
//
// Thread-safety: one ApiClient per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace assay::cli {

inline constexpr char kDefaultServer[] = "http://127.0.0.1:8080";

struct ClientOptions {
  // Base URL, "http://host:port" (https works too). Empty: $ASSAY_SERVER, then kDefaultServer.
  std::string server;
  // API key sent as "Authorization: Bearer". Empty: $ASSAY_API_KEY (may stay empty).
  std::string api_key;
  // Connect timeout [ms] and read/write timeout [ms] per request.
  int64_t connect_timeout_ms = 5'000;
  int64_t io_timeout_ms = 60'000;
};

// Fills server and api_key from the environment where they are empty.
ClientOptions ResolveClientOptions(ClientOptions options);

struct HttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
};

class ApiClient {
 public:
  explicit ApiClient(ClientOptions options);  // options are resolved here
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  const std::string& server() const { return options_.server; }

  // Raw exchanges; only transport failures are errors here.
  Result<HttpReply> Get(const std::string& path);
  Result<HttpReply> Head(const std::string& path);
  Result<HttpReply> Post(const std::string& path, const std::string& body, const std::string& content_type);

  // JSON exchanges: a non-2xx reply becomes its error document's Status.
  Result<nlohmann::json> GetJson(const std::string& path);
  Result<nlohmann::json> PostJson(const std::string& path, const std::string& body);

 private:
  ClientOptions options_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The Status a non-2xx reply stands for: the class from its error document,
// or one derived from the HTTP status when the body is not ours (a proxy).
Status StatusFromReply(const HttpReply& reply);

}  // namespace assay::cli
