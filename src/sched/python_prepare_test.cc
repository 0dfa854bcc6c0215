// The scheduler's side of the Python kinds: the prepare step against a fake
// harness run by a real interpreter (build once per key, cache hits, single
// flight, failures), and the capabilities the workers' hellos offer.
#include "sched/python_prepare.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "common/util.h"
#include "sched/job_service_impl.h"

namespace assay {
namespace {

using nlohmann::json;

// Appends a line to TRITON_CACHE_DIR/runs (writable in the sandbox) for every prepare, sleeps a little (so
// concurrent prepares overlap), "builds" into TORCH_EXTENSIONS_DIR, and fails
// when the candidate says FAIL.
const char* kFakeHarness = R"(import json, os, sys, time
mode, req_path, res_path = sys.argv[1], sys.argv[3], sys.argv[5]
req = json.load(open(req_path))
runs = os.path.join(os.environ["TRITON_CACHE_DIR"], "runs")
open(runs, "a").write(mode + " " + os.environ["CUDA_VISIBLE_DEVICES"] + "|" + os.environ.get("TORCH_CUDA_ARCH_LIST", "") + "\n")
src = open(req["candidate"]["path"]).read()
time.sleep(0.3)
print("building with ninja")
if "FAIL" in src:
    json.dump({"v": 1, "status": {"class": "compile_error", "message": "RuntimeError: Error building extension 'x'",
               "detail": "nvcc: error: bad"}, "compiled": False, "warnings": []}, open(res_path, "w"))
    sys.exit(0)
ext = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "my_ext")
os.makedirs(ext, exist_ok=True)
open(os.path.join(ext, "my_ext.so"), "w").write("elf")
json.dump({"v": 1, "status": {"class": "ok", "message": "", "phase": "prepare"}, "compiled": True,
           "prepare": {"duration_ms": 300.0, "extensions": ["my_ext"]}, "warnings": []}, open(res_path, "w"))
)";

class PythonPrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("pyprep_");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
    ASSERT_TRUE(WriteFileAtomic(dir_->path() / "fake_harness.py", kFakeHarness).ok());
    o_.interpreter = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    o_.harness = dir_->path() / "fake_harness.py";
    o_.cache_dir = dir_->path() / "cache";
    o_.work_dir = dir_->path() / "work";
    o_.arch_list = "9.0";
    o_.sandbox = true;
    o_.timeout_ms = 60'000;
  }
  JobSpec Spec(const std::string& candidate) {
    json doc = {{"kind", "torch_cuda"}, {"source", {{"text", candidate}}}};
    auto r = ParseJobSpecJson(doc);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : JobSpec{};
  }
  int Runs() {
    auto text = ReadFile(o_.cache_dir / "triton" / "runs");
    if (!text.ok()) return 0;
    return static_cast<int>(std::count(text->begin(), text->end(), '\n'));
  }
  std::unique_ptr<TempDir> dir_;
  PythonPrepareOptions o_;
  const json probe_ = {{"python", "3.12.3"}, {"torch", "2.11.0"}, {"torch_cuda", "13.0"}};
};

TEST_F(PythonPrepareTest, BuildsOnceThenHitsTheCache) {
  PythonPreparer p(o_);
  PythonPrepareOutput a = p.Prepare("j_1", Spec("load_inline(...)"), {}, probe_, nullptr);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString() << "\n" << a.compile.dump(2);
  EXPECT_FALSE(a.compile["cache_hit"].get<bool>());
  EXPECT_GT(a.compile["duration_ms"].get<double>(), 0);
  EXPECT_EQ(a.compile["extensions"], json({"my_ext"}));
  EXPECT_EQ(a.compile["arch"], "9.0");
  EXPECT_NE(a.compile["log"].get<std::string>().find("building with ninja"), std::string::npos);
  const std::string key = a.compile["cache_key"];
  EXPECT_EQ(key, PythonExtensionKey("load_inline(...)", probe_, "9.0"));
  EXPECT_TRUE(std::filesystem::exists(o_.cache_dir / "torch_ext" / key / "my_ext" / "my_ext.so"));
  // No GPU in the prepare; the arch list as the worker will use it.
  EXPECT_EQ(ReadFile(o_.cache_dir / "triton" / "runs").value(), "prepare |9.0\n");

  PythonPrepareOutput b = p.Prepare("j_2", Spec("load_inline(...)"), {}, probe_, nullptr);
  ASSERT_TRUE(b.status.ok());
  EXPECT_TRUE(b.compile["cache_hit"].get<bool>());
  EXPECT_EQ(b.compile["cache_key"], key);
  EXPECT_EQ(b.compile["extensions"], json({"my_ext"}));
  EXPECT_EQ(Runs(), 1);
  // Another source is another key.
  EXPECT_FALSE(p.Prepare("j_3", Spec("load_inline(...) # v2"), {}, probe_, nullptr).compile["cache_hit"].get<bool>());
  EXPECT_EQ(Runs(), 2);
}

TEST_F(PythonPrepareTest, ConcurrentPreparesOfOneKeyBuildOnce) {
  PythonPreparer p(o_);
  std::vector<std::thread> threads;
  std::vector<PythonPrepareOutput> outs(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { outs[i] = p.Prepare("j_" + std::to_string(i), Spec("same"), {}, probe_, nullptr); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(Runs(), 1);
  int hits = 0;
  for (const auto& o : outs) {
    EXPECT_TRUE(o.status.ok()) << o.status.ToString();
    hits += o.compile["cache_hit"].get<bool>();
  }
  EXPECT_EQ(hits, 3);
}

TEST_F(PythonPrepareTest, ABuildFailureIsACompileErrorWithTheLogAndIsNotRemembered) {
  PythonPreparer p(o_);
  PythonPrepareOutput a = p.Prepare("j_1", Spec("FAIL"), {}, probe_, nullptr);
  EXPECT_EQ(a.status.error_class(), ErrorClass::kCompileError);
  EXPECT_EQ(a.status.message(), "RuntimeError: Error building extension 'x'");
  const std::string log = a.compile["log"];
  EXPECT_NE(log.find("nvcc: error: bad"), std::string::npos) << log;
  EXPECT_NE(log.find("building with ninja"), std::string::npos) << log;
  EXPECT_FALSE(p.Prepare("j_2", Spec("FAIL"), {}, probe_, nullptr).compile["cache_hit"].get<bool>());
  EXPECT_EQ(Runs(), 2);
}

TEST_F(PythonPrepareTest, CancelStopsThePrepare) {
  std::atomic<bool> cancel{true};
  PythonPreparer p(o_);
  PythonPrepareOutput a = p.Prepare("j_1", Spec("x"), {}, probe_, &cancel);
  EXPECT_EQ(a.status.error_class(), ErrorClass::kCancelled);
  EXPECT_FALSE(std::filesystem::exists(o_.cache_dir / "torch_ext" / a.compile["cache_key"].get<std::string>() /
                                       "assay_prepared.json"));
}

TEST(WorkerCapabilitiesTest, PythonKindsComeFromTheHellos) {
  Capabilities caps;
  json cpu = {{"capabilities", {{"kinds", {"cuda_program", "torch", "torch_cuda", "kernelbench"}}}},
              {"python", {{"ok", true}, {"device", "cpu"}, {"interpreter", "/usr/bin/python3"},
                          {"kinds", {"torch", "torch_cuda", "kernelbench"}}, {"error", nullptr}}}};
  AddWorkerCapabilities({cpu}, &caps);
  EXPECT_EQ(caps.supported, (std::set<JobKind>{JobKind::kTorch, JobKind::kTorchCuda, JobKind::kKernelbench}));
  EXPECT_EQ(caps.cpu_kinds, caps.supported);
  EXPECT_EQ(caps.python_note, "triton does not import in /usr/bin/python3");

  Capabilities none;
  json broken = {{"python", {{"ok", false}, {"device", "cuda"}, {"kinds", json::array()},
                             {"error", "torch does not import in /x/python3: No module named 'torch'"}}}};
  AddWorkerCapabilities({broken}, &none);
  EXPECT_TRUE(none.supported.empty());
  EXPECT_EQ(none.python_note, "torch does not import in /x/python3: No module named 'torch'");

  Capabilities off;
  AddWorkerCapabilities({json{{"capabilities", {{"kinds", {"cuda"}}}}}}, &off);
  EXPECT_EQ(off.python_note, "the server runs no Python interpreter");
  Capabilities nobody;
  AddWorkerCapabilities({}, &nobody);
  EXPECT_EQ(nobody.python_note, "no worker has started");
}

}  // namespace
}  // namespace assay
