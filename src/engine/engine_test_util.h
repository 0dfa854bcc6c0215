// Job specs shared by the engine's tests (CPU plan tests and GPU tests).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace assay::engine_test {

inline const char* kAddSource = R"(
extern "C" __global__ void add(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
)";

// A vector add of n f32 elements: x, y in, out out, n scalar; grid ceil_div(n, 256).
inline nlohmann::json AddSpec(int n, const std::string& source = kAddSource, const std::string& entry = "add") {
  return {
      {"schema_version", 1},
      {"kind", "cuda"},
      {"source", {{"text", source}}},
      {"entry", entry},
      {"launch", {{"grid", {"ceil_div(n, 256)"}}, {"block", {256}}}},
      {"args",
       {{{"name", "x"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
        {{"name", "y"}, {"role", "in"}, {"dtype", "f32"}, {"shape", {"n"}}},
        {{"name", "out"}, {"role", "out"}, {"dtype", "f32"}, {"shape", {"n"}}},
        {{"name", "n"}, {"role", "scalar"}, {"dtype", "i32"}, {"value", n}}}},
      {"reference",
       {{"kind", "cuda"},
        {"source", {{"text", kAddSource}}},
        {"entry", "add"},
        {"launch", {{"grid", {"ceil_div(n, 256)"}}, {"block", {256}}}}}},
      {"correctness", {{"trials", 3}, {"seed", 42}}},
      {"timing", {{"enabled", true}, {"time_budget_ms", 200}, {"warmup_ms", 20}, {"max_samples", 50}}},
      {"outputs", {"out"}},
  };
}

}  // namespace assay::engine_test
