// How a failed Status becomes an HTTP response, the same way on every route:
//   {"error": {"class": "<ErrorClassName>", "message": "...", "field": "..."}}
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "api/http.h"
#include "common/status.h"

namespace assay::api {

// HTTP status for a failure class: rejected 400, unauthorized 401,
// not_found 404, infra_error 503, anything else 500.
int HttpStatusFor(ErrorClass c);

// The error document for `status` (which must not be OK).
nlohmann::json ErrorJson(const Status& status);

// Sets res to the error document with HttpStatusFor(status), or with
// `http_status` when it is non-zero (413, 415, 503 ...).
void SetError(httplib::Response& res, const Status& status, int http_status = 0);

// Sets res to `body` as application/json with `http_status`.
void SetJson(httplib::Response& res, const nlohmann::json& body, int http_status = 200);

}  // namespace assay::api
