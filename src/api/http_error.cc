#include "api/http_error.h"

#include <nlohmann/json.hpp>

namespace assay::api {

int HttpStatusFor(ErrorClass c) {
  switch (c) {
    case ErrorClass::kRejected: return 400;
    case ErrorClass::kUnauthorized: return 401;
    case ErrorClass::kNotFound: return 404;
    case ErrorClass::kInfraError: return 503;
    default: return 500;
  }
}

nlohmann::json ErrorJson(const Status& status) {
  nlohmann::json e = {{"class", std::string(ErrorClassName(status.error_class()))},
                      {"message", status.message()}};
  if (!status.field().empty()) e["field"] = status.field();
  return {{"error", std::move(e)}};
}

void SetError(httplib::Response& res, const Status& status, int http_status) {
  SetJson(res, ErrorJson(status), http_status != 0 ? http_status : HttpStatusFor(status.error_class()));
}

void SetJson(httplib::Response& res, const nlohmann::json& body, int http_status) {
  res.status = http_status;
  // `replace` keeps a response valid JSON even if some stored text is not UTF-8.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                  "application/json");
}

}  // namespace assay::api
