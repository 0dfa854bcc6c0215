// Size and range limits applied while parsing a job spec (docs/job-spec.md,
// "Limits"). A spec that breaks one is Rejected with the path of the field.
// The defaults are the server's; `assay serve` may lower them.
// Thread-safety: a plain value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace assay {

struct SpecLimits {
  // Whole spec document as received [bytes].
  size_t max_spec_bytes = size_t{8} << 20;
  // Nesting depth of the JSON document (objects and arrays).
  int max_json_depth = 64;
  // One source (inline text, or base64 after decoding) [bytes].
  size_t max_source_bytes = size_t{4} << 20;
  // Entries in `args`.
  size_t max_args = 64;
  // Dimensions of one tensor argument.
  size_t max_dims = 8;
  // Elements of one tensor argument.
  int64_t max_elements_per_tensor = int64_t{1} << 31;
  // Sum over all tensor arguments of elements * dtype size [bytes].
  int64_t max_total_bytes = int64_t{8} << 30;
  // correctness.trials upper bound.
  int max_trials = 100;
  // kernelbench num_trials upper bound.
  int max_num_trials = 10000;
  // timeout_s upper bound [s].
  double max_timeout_s = 3600;
  // timing.max_samples upper bound.
  int max_samples = 100000;
  // timing.time_budget_ms upper bound [ms].
  int64_t max_time_budget_ms = 600'000;
  // compile.flags entries, and bytes per flag.
  size_t max_flags = 64;
  size_t max_flag_bytes = 256;
  // launch.shared_mem_bytes upper bound [bytes] (no GPU offers more per block).
  int64_t max_shared_mem_bytes = int64_t{256} << 10;
  // cuda_program: argv entries, bytes per entry, env entries, bytes per value, stdin.
  size_t max_argv = 256;
  size_t max_arg_bytes = 4096;
  size_t max_env = 64;
  size_t max_env_value_bytes = 4096;
  size_t max_stdin_bytes = size_t{1} << 20;
  // program.stdout_limit_bytes / stderr_limit_bytes upper bound [bytes].
  int64_t max_output_limit_bytes = int64_t{16} << 20;
  // profile.sections entries.
  size_t max_profile_sections = 32;
  // Candidates in one batch (POST /v1/batches). Every candidate is a job; the
  // whole batch is validated and stored in one transaction.
  size_t max_batch_candidates = 1000;
};

}  // namespace assay
