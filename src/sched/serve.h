// `assay serve`: the single-host server. Opens the store, recovers interrupted
// jobs, starts one worker per visible GPU (one GPU-less worker when there is
// none), the compile pool and the HTTP API, and runs until SIGINT/SIGTERM.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace assay {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0 = pick a free port (printed on start)
  std::filesystem::path data_dir = ".assay";// store (assay.db), compile cache, work dirs
  bool no_auth = false;                     // only allowed when host is a loopback address
  int compile_threads = 0;                  // 0 = number of CPU cores
  int max_attempts = 2;                     // runs of a job after infrastructure failures
  int64_t max_request_bytes = 64LL << 20;   // request body limit
  int64_t max_sse_streams = 64;             // concurrent event streams
  bool sandbox = true;                      // sandbox user programs
  std::filesystem::path port_file;          // if set, the bound port is written here once listening
  std::string log_level = "info";
  bool log_json = false;
  // The Python kinds' interpreter (docs/python-kinds.md): empty = $ASSAY_PYTHON,
  // else `python3` from PATH; "none" = no Python kinds. Workers offer the kinds
  // only when its probe imports torch.
  std::filesystem::path python;
  // "cuda", or "cpu": run the Python kinds on the CPU (tests and CI only; the
  // timings are host clocks and mean little). Never the default.
  std::string python_device = "cuda";
  int python_standby = 3;  // harness processes per worker started ahead of jobs (`--python-standby`)
};

// Returns the process exit code.
int ServeMain(const ServeOptions& options);

}  // namespace assay
