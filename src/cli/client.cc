#include "cli/client.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "api/http.h"

namespace assay::cli {

ClientOptions ResolveClientOptions(ClientOptions o) {
  if (o.server.empty()) {
    const char* env = std::getenv("ASSAY_SERVER");
    o.server = env && *env ? env : kDefaultServer;
  }
  while (!o.server.empty() && o.server.back() == '/') o.server.pop_back();
  if (o.server.find("://") == std::string::npos) o.server = "http://" + o.server;
  if (o.api_key.empty()) {
    const char* env = std::getenv("ASSAY_API_KEY");
    if (env) o.api_key = env;
  }
  return o;
}

struct ApiClient::Impl {
  explicit Impl(const ClientOptions& o) : client(o.server) {
    client.set_connection_timeout(o.connect_timeout_ms / 1000, (o.connect_timeout_ms % 1000) * 1000);
    client.set_read_timeout(o.io_timeout_ms / 1000, (o.io_timeout_ms % 1000) * 1000);
    client.set_write_timeout(o.io_timeout_ms / 1000, (o.io_timeout_ms % 1000) * 1000);
    if (!o.api_key.empty()) client.set_bearer_token_auth(o.api_key.c_str());
  }
  httplib::Client client;
};

ApiClient::ApiClient(ClientOptions options)
    : options_(ResolveClientOptions(std::move(options))), impl_(std::make_unique<Impl>(options_)) {}

ApiClient::~ApiClient() = default;

namespace {

std::string Describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "connection failed (nothing listening, or host unreachable)";
    case httplib::Error::ConnectionTimeout: return "connection timed out";
    case httplib::Error::Read: return "connection lost while reading the reply";
    case httplib::Error::Write: return "connection lost while sending the request";
    case httplib::Error::SSLConnection: return "TLS handshake failed";
    default: return httplib::to_string(e);
  }
}

Result<HttpReply> ToReply(const std::string& server, httplib::Result res) {
  if (!res) {
    return Status::Infra("cannot reach the Assay server at " + server + ": " + Describe(res.error()) +
                         " (is `assay serve` running? set --server or ASSAY_SERVER)");
  }
  return HttpReply{res->status, res->body, res->get_header_value("Content-Type")};
}

Result<nlohmann::json> ToJson(Result<HttpReply> reply) {
  if (!reply.ok()) return reply.status();
  if (reply->status < 200 || reply->status >= 300) return StatusFromReply(*reply);
  auto doc = nlohmann::json::parse(reply->body, nullptr, false);
  if (doc.is_discarded()) return Status::Infra("the server sent a reply that is not JSON");
  return doc;
}

}  // namespace

Result<HttpReply> ApiClient::Get(const std::string& path) {
  return ToReply(options_.server, impl_->client.Get(path.c_str()));
}

Result<HttpReply> ApiClient::Head(const std::string& path) {
  return ToReply(options_.server, impl_->client.Head(path.c_str()));
}

Result<HttpReply> ApiClient::Post(const std::string& path, const std::string& body, const std::string& content_type) {
  return ToReply(options_.server, impl_->client.Post(path.c_str(), body, content_type.c_str()));
}

Result<nlohmann::json> ApiClient::GetJson(const std::string& path) { return ToJson(Get(path)); }

Result<nlohmann::json> ApiClient::PostJson(const std::string& path, const std::string& body) {
  return ToJson(Post(path, body, "application/json"));
}

Status StatusFromReply(const HttpReply& reply) {
  auto doc = nlohmann::json::parse(reply.body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
    const auto& e = doc["error"];
    auto cls = ErrorClassFromName(e.value("class", std::string()));
    return Status(cls.value_or(ErrorClass::kInfraError), e.value("message", std::string("error")),
                  e.value("field", std::string()));
  }
  std::string msg = "HTTP " + std::to_string(reply.status);
  switch (reply.status) {
    case 401: return Status::Unauthorized(msg + ": set ASSAY_API_KEY");
    case 404: return Status::NotFound(msg);
    default: break;
  }
  if (reply.status >= 400 && reply.status < 500) return Status::Rejected(msg);
  return Status::Infra(msg);
}

}  // namespace assay::cli
