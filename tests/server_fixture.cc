#include "tests/server_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "api/http.h"

namespace assay::testing {

using nlohmann::json;

json HttpReply::json() const { return json::parse(body, nullptr, false); }

std::filesystem::path AssayBinary() {
  // ASSAY_BIN lets a relocated bundle (the GPU machine) point at its binary.
  if (const char* bin = std::getenv("ASSAY_BIN"); bin && *bin) return bin;
  return std::filesystem::path(ASSAY_BINARY_DIR) / "assay";
}

ServerProcess::ServerProcess(std::filesystem::path data_dir, std::vector<std::string> extra_args)
    : data_dir_(std::move(data_dir)), extra_args_(std::move(extra_args)) {}

ServerProcess::~ServerProcess() { Kill9(); }

bool ServerProcess::Start() {
  std::filesystem::create_directories(data_dir_);
  auto port_file = data_dir_ / "port";
  std::filesystem::remove(port_file);
  std::vector<std::string> args = {AssayBinary().string(), "serve", "--port", "0", "--data-dir",
                                   data_dir_.string(), "--port-file", port_file.string()};
  for (auto& a : extra_args_) args.push_back(a);
  std::string log = (data_dir_ / "server.log").string();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::ifstream in(port_file);
    int p = 0;
    if (in >> p && p > 0) {
      port_ = p;
      if (Get("/health").status == 200) return true;
    }
  }
  return false;
}

void ServerProcess::Kill9() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ServerProcess::Terminate() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      ::kill(-pid_, SIGKILL);  // anything it left behind
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Kill9();
}

namespace {
httplib::Headers AuthHeaders(const std::string& key) {
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  return h;
}
}  // namespace

HttpReply ServerProcess::Get(const std::string& path, const std::string& key) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(5);
  c.set_read_timeout(30);
  auto r = c.Get(path.c_str(), AuthHeaders(key));
  if (!r) return {};
  return {r->status, r->body};
}

HttpReply ServerProcess::Post(const std::string& path, const std::string& body, const std::string& key,
                              const std::string& content_type) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(5);
  c.set_read_timeout(60);
  c.set_write_timeout(60);
  auto r = c.Post(path.c_str(), AuthHeaders(key), body, content_type.c_str());
  if (!r) return {};
  return {r->status, r->body};
}

std::string ServerProcess::Submit(const json& spec, const std::string& key) const {
  auto r = Post("/v1/jobs", spec.dump(), key);
  if (r.status != 201) return "";
  return r.json().value("id", "");
}

json ServerProcess::WaitJob(const std::string& id, double timeout_s, const std::string& key) const {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  json last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Get("/v1/jobs/" + id, key);
    if (r.status == 200) {
      last = r.json();
      std::string s = last.value("state", "");
      if (s == "done" || s == "failed" || s == "cancelled" || s == "timed_out") return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return last;
}

std::pair<int, std::string> RunAssay(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return {-1, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<std::string> all = {AssayBinary().string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(needle) != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

}  // namespace assay::testing
