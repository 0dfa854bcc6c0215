// Starts a real `assay serve` on 127.0.0.1 (ephemeral port) in its own process
// group with a fresh data dir, and talks to it over HTTP. Used by the
// integration tests; the server is killed (SIGKILL to the group) on teardown.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace assay::testing {

struct HttpReply {
  int status = 0;          // 0 = no connection
  std::string body;
  nlohmann::json json() const;
};

class ServerProcess {
 public:
  // data_dir: reuse one to test restarts; extra_args are appended to `assay serve`.
  ServerProcess(std::filesystem::path data_dir, std::vector<std::string> extra_args = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts and waits until /health answers (up to 30 s). False on failure.
  bool Start();
  void Kill9();             // SIGKILL to the whole group, reaped
  void Terminate();         // SIGTERM, wait for a clean exit
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }

  HttpReply Get(const std::string& path, const std::string& key = "") const;
  HttpReply Post(const std::string& path, const std::string& body, const std::string& key = "",
                 const std::string& content_type = "application/json") const;
  // Submits a spec and returns the job id ("" on failure).
  std::string Submit(const nlohmann::json& spec, const std::string& key = "") const;
  // Polls until the job is terminal or timeout; returns the job document.
  nlohmann::json WaitJob(const std::string& id, double timeout_s = 60, const std::string& key = "") const;

 private:
  std::filesystem::path data_dir_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  int port_ = 0;
};

std::filesystem::path AssayBinary();

// Processes whose command line mentions `needle` (workers and their
// children), this test process excluded.
std::vector<pid_t> ProcessesMentioning(const std::string& needle);
// Runs `assay ARGS...` with env additions; returns {exit code, stdout+stderr}.
std::pair<int, std::string> RunAssay(const std::vector<std::string>& args,
                                     const std::vector<std::string>& env = {});

}  // namespace assay::testing
