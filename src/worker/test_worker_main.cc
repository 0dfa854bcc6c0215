// assay_test_worker: the worker entry point as `assay worker` calls it, plus
// job kinds that misbehave on purpose, for worker_test.cc only:
//   test_crash           the worker itself dies with SIGSEGV
//   test_hang            the worker's main thread blocks forever (heartbeats go on)
//   test_stop_heartbeat  the whole worker stops (SIGSTOP): no heartbeats
//   test_echo            returns {"echo": spec, "pid": worker pid}
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "worker/job_runner.h"
#include "worker/worker_client.h"

int main(int argc, char** argv) {
  int device = -1;
  std::string work_dir;
  bool sandbox = true;
  if (argc < 2 || std::strcmp(argv[1], "worker") != 0) {
    std::fprintf(stderr, "usage: %s worker --device N --work-dir DIR [--no-sandbox]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (a == "--work-dir" && i + 1 < argc) {
      work_dir = argv[++i];
    } else if (a == "--no-sandbox") {
      sandbox = false;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  using assay::RunContext;
  using assay::WorkOutcome;
  assay::RegisterJobRunner("test_crash", [](const RunContext&) -> WorkOutcome {
    raise(SIGSEGV);
    return {};
  });
  assay::RegisterJobRunner("test_hang", [](const RunContext&) -> WorkOutcome {
    while (true) pause();
  });
  assay::RegisterJobRunner("test_stop_heartbeat", [](const RunContext&) -> WorkOutcome {
    raise(SIGSTOP);
    return {};
  });
  assay::RegisterJobRunner("test_echo", [](const RunContext& ctx) -> WorkOutcome {
    WorkOutcome out;
    out.result = {{"echo", *ctx.spec}, {"pid", getpid()}};
    return out;
  });
  return assay::WorkerMain(device, work_dir, sandbox);
}
