// How a sandboxed child is isolated on this host. See docs/workers.md#sandbox.
//
//   bwrap on PATH  -> the command is wrapped: `bwrap --unshare-net --ro-bind / / ...`
//                     (read-only system, private /tmp, only writable_dir writable).
//   no bwrap       -> the child calls unshare(CLONE_NEWUSER|CLONE_NEWNET) itself before
//                     exec (no network; the file system is NOT made read-only).
//   neither works  -> no isolation beyond rlimits; a warning is logged once.
//
// Thread-safety: all functions are safe to call concurrently; the host probe runs once.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proc/subprocess.h"

namespace assay {

enum class SandboxMode { kBwrap, kUnshare, kNone };

// What this host supports, probed once (the probes fork tiny children). The
// environment variable ASSAY_SANDBOX=unshare|none caps the choice.
SandboxMode DetectSandboxMode();
const char* SandboxModeName(SandboxMode mode);

// Absolute path of `name` found in `path_var` (colon-separated), or "" if absent.
// A name containing '/' is returned as is.
std::string FindExecutable(const std::string& name, const std::string& path_var);

// Everything the forked child needs, prepared in the parent so the child only
// makes async-signal-safe system calls between fork and exec.
struct ChildSandbox {
  bool unshare_net = false;     // kUnshare mode: new user + network namespace in the child
  std::string uid_map;          // "0 1000 1\n" style lines written to /proc/self/uid_map
  std::string gid_map;
};

// Rewrites argv for the chosen mode (prefixes bwrap) and fills *child.
// argv[0] must already be an absolute path.
std::vector<std::string> ApplySandbox(const SandboxOptions& sandbox, std::vector<std::string> argv,
                                      ChildSandbox* child);

// Child side, between fork and exec: enters the namespaces. Async-signal-safe.
// Returns 0 or an errno value (the caller ignores failures: isolation is best effort
// once the probe said it works).
int EnterChildSandbox(const ChildSandbox& child);

}  // namespace assay
