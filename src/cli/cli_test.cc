#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/spec_builder.h"
#include "cli/table.h"
#include "common/util.h"

namespace assay::cli {
namespace {

using nlohmann::json;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FormatTest, CompileResultShowsResourceTableAndLog) {
  json r = json::parse(R"({
    "schema_version": 1, "job_id": "j_1", "kind": "compile", "state": "done", "error": null,
    "compile": {"compiler": "nvrtc", "arch": "sm_90", "toolkit_version": "13.0", "cache_hit": false,
                "duration_ms": 41.5, "log": "warning: unused variable",
                "kernels": {"add": {"registers": 18, "shared_bytes": 49152, "local_bytes": 0,
                                    "spill_stores": 4, "spill_loads": 8, "const_bytes": 360,
                                    "max_threads_per_block": 1024}}},
    "program": null, "timing": null, "outputs": {}})");
  std::string text = FormatResult(r);
  EXPECT_TRUE(Contains(text, "Compile (nvrtc, sm_90, CUDA 13.0, 41.5 ms)")) << text;
  EXPECT_TRUE(Contains(text, "registers")) << text;
  EXPECT_TRUE(Contains(text, "add  ")) << text;
  EXPECT_TRUE(Contains(text, "48.0 KiB")) << text;
  EXPECT_TRUE(Contains(text, "4 / 8 B")) << text;
  EXPECT_TRUE(Contains(text, "warning: unused variable")) << text;
  EXPECT_FALSE(Contains(text, "Outputs")) << "empty sections are hidden:\n" << text;
}

TEST(FormatTest, ProgramResultShowsExitAndTruncatedStdout) {
  json r = json::parse(R"({
    "schema_version": 1, "job_id": "j_2", "kind": "cuda_program", "state": "done",
    "program": {"exit_code": 0, "stdout": "sum = 42\n", "stdout_truncated": true, "stdout_bytes": 3145728,
                "stderr": "", "kernels": [{"name": "add", "gpu_time_ms": 0.012}]}})");
  std::string text = FormatResult(r);
  EXPECT_TRUE(Contains(text, "Program: exit code 0")) << text;
  EXPECT_TRUE(Contains(text, "stdout (truncated; 3.00 MiB in all)")) << text;
  EXPECT_TRUE(Contains(text, "    sum = 42")) << text;
  EXPECT_FALSE(Contains(text, "stderr")) << text;
  EXPECT_TRUE(Contains(text, "kernels: [1 items]")) << text;
}

TEST(FormatTest, FailureShowsClassMessageAndDetail) {
  json r = json::parse(R"({
    "schema_version": 1, "job_id": "j_3", "kind": "cuda", "state": "failed",
    "error": {"class": "runtime_error", "message": "illegal memory access",
              "detail": {"cuda_error": "CUDA_ERROR_ILLEGAL_ADDRESS"}},
    "timing": {"median_ms": 0.0123, "min_ms": 0.011, "converged": true, "samples_ms": [1, 2]},
    "telemetry": {"power_w": 250.5}})");
  std::string text = FormatResult(r);
  EXPECT_TRUE(Contains(text, "state failed")) << text;
  EXPECT_TRUE(Contains(text, "error: runtime_error: illegal memory access")) << text;
  EXPECT_TRUE(Contains(text, "cuda_error: CUDA_ERROR_ILLEGAL_ADDRESS")) << text;
  EXPECT_TRUE(Contains(text, "12.3 µs")) << text;
  EXPECT_TRUE(Contains(text, "converged: yes")) << text;
  EXPECT_FALSE(Contains(text, "samples_ms")) << text;
  EXPECT_TRUE(Contains(text, "Telemetry")) << text;
  EXPECT_TRUE(Contains(text, "power_w: 250.5")) << text;
}

TEST(FormatTest, HumanUnits) {
  EXPECT_EQ(FormatMicros(0.5), "500 ns");
  EXPECT_EQ(FormatMicros(12.34), "12.3 µs");
  EXPECT_EQ(FormatMicros(4560), "4.56 ms");
  EXPECT_EQ(FormatMicros(2.5e6), "2.50 s");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(49152), "48.0 KiB");
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80.0 GiB");
}

TEST(FormatTest, TableAlignsColumnsByDisplayWidth) {
  Table t({"a", "time"});
  t.AddRow({"µµ", "1"});
  t.AddRow({"long-name", "2"});
  std::string text = t.Render();
  EXPECT_TRUE(Contains(text, "a          time\n")) << text;
  EXPECT_TRUE(Contains(text, "µµ         1\n")) << text;
  EXPECT_TRUE(Contains(text, "long-name  2\n")) << text;
}

TEST(FormatTest, JobListAndGpus) {
  json list = json::parse(R"({"jobs": [{"id": "j_a", "kind": "cuda", "state": "queued"}], "next": "j_a"})");
  std::string text = FormatJobList(list);
  EXPECT_TRUE(Contains(text, "j_a")) << text;
  EXPECT_TRUE(Contains(text, "--before j_a")) << text;
  EXPECT_EQ(FormatJobList(json::parse(R"({"jobs": [], "next": null})")), "No jobs.\n");

  std::ostringstream out;
  EXPECT_EQ(PrintGpus(json::parse(R"({"gpus": [], "reason": "CUDA driver not found"})"), false, out), kExitInfra);
  EXPECT_EQ(out.str(), "No GPU found: CUDA driver not found\n");
  std::ostringstream one;
  EXPECT_EQ(PrintGpus(json::parse(R"({"gpus": [{"index": 0, "name": "NVIDIA H100", "arch": "sm_90",
                                     "total_memory_bytes": 85899345920, "sm_count": 132}]})"),
                      false, one),
            kExitOk);
  EXPECT_TRUE(Contains(one.str(), "NVIDIA H100  sm_90  80.0 GiB  132")) << one.str();
}

class SpecBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("assay-cli-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::string Write(const std::string& name, const std::string& text) {
    auto path = dir_->path() / name;
    EXPECT_TRUE(WriteFileAtomic(path, text).ok());
    return path.string();
  }
  std::optional<TempDir> dir_;
};

TEST_F(SpecBuilderTest, ContractHeaderGivesTheSpec) {
  SpecOptions o;
  o.file = Write("add.cu", "/* assay: {\"kind\": \"cuda\", \"entry\": \"add\"} */\n"
                           "extern \"C\" __global__ void add(float* x) {}\n");
  o.arch = "sm_80";
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["kind"], "cuda");
  EXPECT_EQ((*spec)["entry"], "add");
  EXPECT_EQ((*spec)["source"]["filename"], "add.cu");
  EXPECT_TRUE(Contains((*spec)["source"]["text"], "__global__ void add"));
  EXPECT_EQ((*spec)["compile"]["arch"], "sm_80");
  EXPECT_EQ((*spec)["schema_version"], 1);
}

TEST_F(SpecBuilderTest, MainMakesACudaProgram) {
  SpecOptions o;
  o.file = Write("prog.cu", "#include <cstdio>\nint main() { printf(\"hi\\n\"); }\n");
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["kind"], "cuda_program");

  o.compile_only = true;
  EXPECT_EQ((*BuildSpec(o))["kind"], "compile");
}

TEST_F(SpecBuilderTest, UnknownKindIsRejectedWithAHint) {
  SpecOptions o;
  o.file = Write("k.cu", "__global__ void k() {}\n");
  auto spec = BuildSpec(o);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(spec.status().field(), "kind");
  EXPECT_TRUE(Contains(spec.status().message(), "--compile-only")) << spec.status().message();
  EXPECT_EQ(ExitCodeFor(spec.status()), kExitUsage);
}

TEST_F(SpecBuilderTest, SpecFileTakesSourceFromFile) {
  SpecOptions o;
  o.spec_file = Write("spec.json", R"({"kind": "cuda", "entry": "k", "name": "from-file"})");
  o.file = Write("k.cu", "extern \"C\" __global__ void k() {}\n");
  auto spec = BuildSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ((*spec)["name"], "from-file");
  EXPECT_EQ((*spec)["source"]["filename"], "k.cu");

  o.spec_file = Write("bad.json", "{\"kind\": ");
  auto bad = BuildSpec(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "malformed JSON at byte")) << bad.status().message();
}

TEST(ExitCodeTest, JobStatesAndClassesMapToDocumentedCodes) {
  EXPECT_EQ(ExitCodeForJob(json{{"state", "done"}}), kExitOk);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "cancelled"}}), kExitCancelled);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "timed_out"}}), kExitJobFailed);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}, {"error", {{"class", "compile_error"}}}}), kExitJobFailed);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}, {"error", {{"class", "wrong_result"}}}}), kExitJobFailed);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}, {"error", {{"class", "infra_error"}}}}), kExitInfra);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}, {"error", {{"class", "rejected"}}}}), kExitUsage);
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}, {"result", {{"error", {{"class", "launch_error"}}}}}}),
            kExitJobFailed);
  // A failure nobody classified is not blamed on the user.
  EXPECT_EQ(ExitCodeForJob(json{{"state", "failed"}}), kExitInfra);
}

TEST(ClientTest, ServerErrorDocumentKeepsItsClass) {
  Status s = StatusFromReply({400, R"({"error": {"class": "rejected", "message": "bad dtype", "field": "args[0].dtype"}})",
                              "application/json"});
  EXPECT_EQ(s.error_class(), ErrorClass::kRejected);
  EXPECT_EQ(s.field(), "args[0].dtype");
  EXPECT_EQ(StatusFromReply({502, "<html>bad gateway</html>", "text/html"}).error_class(), ErrorClass::kInfraError);
  EXPECT_EQ(StatusFromReply({401, "", ""}).error_class(), ErrorClass::kUnauthorized);
}

TEST(ClientTest, UnreachableServerExitsWithInfraCodeAndClearMessage) {
  // A port that was free a moment ago: nothing listens there.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);
  close(fd);

  JobOptions o;
  o.common.server = "http://127.0.0.1:" + std::to_string(port);
  o.id = "j_x";
  std::ostringstream out, err;
  EXPECT_EQ(StatusCommand(o, out, err), kExitInfra);
  EXPECT_TRUE(Contains(err.str(), "error: infra_error: cannot reach the Assay server at http://127.0.0.1:" +
                                      std::to_string(port)))
      << err.str();
  EXPECT_EQ(out.str(), "");
}

TEST(ClientTest, ServerUrlComesFromFlagThenEnvironment) {
  setenv("ASSAY_SERVER", "http://gpu-box:9000/", 1);
  setenv("ASSAY_API_KEY", "assay_k", 1);
  ClientOptions env = ResolveClientOptions({});
  EXPECT_EQ(env.server, "http://gpu-box:9000");
  EXPECT_EQ(env.api_key, "assay_k");
  ClientOptions flag;
  flag.server = "localhost:1234";
  EXPECT_EQ(ResolveClientOptions(flag).server, "http://localhost:1234");
  unsetenv("ASSAY_SERVER");
  unsetenv("ASSAY_API_KEY");
  EXPECT_EQ(ResolveClientOptions({}).server, kDefaultServer);
}

}  // namespace
}  // namespace assay::cli
