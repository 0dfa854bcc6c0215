// Test helpers shared by the spec tests: a valid vector-add spec to mutate.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "spec/job_spec.h"

namespace assay::testing {

inline nlohmann::json VectorAddSpec() {
  return nlohmann::json::parse(R"json({
    "schema_version": 1,
    "kind": "cuda",
    "name": "vector add",
    "source": {"text": "extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }"},
    "entry": "add",
    "args": [
      {"name": "a", "role": "in", "dtype": "f32", "shape": ["n"]},
      {"name": "b", "role": "in", "dtype": "f32", "shape": ["n"], "init": {"kind": "normal", "mean": 0, "std": 2}},
      {"name": "c", "role": "out", "dtype": "f32", "shape": ["n"]},
      {"name": "n", "role": "scalar", "dtype": "i32", "value": 1024}
    ],
    "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]},
    "reference": {
      "kind": "cuda",
      "source": {"text": "extern \"C\" __global__ void ref(const float* a, const float* b, float* c, int n) { for (int i = 0; i < n; ++i) c[i] = a[i] + b[i]; }"},
      "entry": "ref",
      "launch": {"grid": [1], "block": [1]}
    },
    "outputs": ["c"]
  })json");
}

inline const std::string kHash(64, 'a');

// One edit of a document: a JSON pointer and the new value (null: remove).
struct Edit {
  std::string pointer;
  nlohmann::json value;
};

inline nlohmann::json Apply(nlohmann::json doc, const std::vector<Edit>& edits) {
  for (const Edit& e : edits) {
    nlohmann::json::json_pointer p(e.pointer);
    if (e.value.is_null()) {
      doc[p.parent_pointer()].erase(p.back());
    } else {
      doc[p] = e.value;
    }
  }
  return doc;
}

// Parses, and on success checks the normalized form round-trips exactly.
inline Result<JobSpec> ParseAndRoundTrip(const nlohmann::json& doc, const SpecLimits& limits = {}) {
  Result<JobSpec> r = ParseJobSpec(doc.dump(), limits);
  if (r.ok()) {
    nlohmann::json norm = ToJson(*r);
    Result<JobSpec> again = ParseJobSpec(norm.dump(), limits);
    EXPECT_TRUE(again.ok()) << again.status().ToString() << "\n" << norm.dump(2);
    if (again.ok()) {
      EXPECT_TRUE(*again == *r) << norm.dump(2);
      EXPECT_EQ(ToJson(*again), norm);
    }
  }
  return r;
}

}  // namespace assay::testing
