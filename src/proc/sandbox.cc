#include "proc/sandbox.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <string_view>

#include "common/log.h"

namespace assay {
namespace {

// Runs `fn` in a forked child and reports whether it exited 0. Only used by the
// one-time probe; the child makes async-signal-safe calls only.
template <typename Fn>
bool ProbeInChild(Fn fn) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(fn() ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool BwrapWorks(const std::string& bwrap) {
  return ProbeInChild([&] {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    const char* argv[] = {bwrap.c_str(), "--ro-bind", "/", "/", "--unshare-net",
                          "--die-with-parent", "/bin/true", nullptr};
    execv(argv[0], const_cast<char* const*>(argv));
    return false;
  });
}

bool UnshareWorks() {
  return ProbeInChild([] { return unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0; });
}

// Async-signal-safe: no allocation.
int WriteWhole(const char* path, const char* data, size_t size) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = write(fd, data, size);
  int err = n == static_cast<ssize_t>(size) ? 0 : (n < 0 ? errno : EIO);
  close(fd);
  return err;
}

// A fresh network namespace has "lo" down; bring it up so loopback works
// inside (programs that talk to themselves over 127.0.0.1 keep working).
void BringUpLoopback() {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP;
    ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
}

}  // namespace

const char* SandboxModeName(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kBwrap: return "bwrap";
    case SandboxMode::kUnshare: return "unshare";
    case SandboxMode::kNone: return "none";
  }
  return "none";
}

std::string FindExecutable(const std::string& name, const std::string& path_var) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return name;
  std::string_view rest = path_var;
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return "";
}

SandboxMode DetectSandboxMode() {
  static const SandboxMode mode = [] {
    const char* path = getenv("PATH");
    std::string bwrap = FindExecutable("bwrap", path ? path : "/usr/bin:/bin");
    // ASSAY_SANDBOX=unshare|none caps the choice (tests of the fallbacks, hosts
    // where bwrap misbehaves). Anything else, or unset: the best that works.
    const char* forced = getenv("ASSAY_SANDBOX");
    std::string_view cap = forced ? forced : "";
    SandboxMode m = SandboxMode::kNone;
    if (cap == "none") {
      // nothing
    } else if (cap != "unshare" && !bwrap.empty() && BwrapWorks(bwrap)) {
      m = SandboxMode::kBwrap;
    } else if (UnshareWorks()) {
      m = SandboxMode::kUnshare;
    }
    auto event = log::Event("sandbox.mode");
    event.Kv("mode", SandboxModeName(m));
    if (m == SandboxMode::kNone) {
      event.Kv("detail", "neither bwrap nor unshare(CLONE_NEWUSER|CLONE_NEWNET) works; "
                         "sandboxed programs run WITHOUT network isolation").Warn();
    } else if (m == SandboxMode::kUnshare) {
      event.Kv("detail", "bwrap not available; network isolated by unshare, "
                         "file system not read-only").Info();
    } else {
      event.Info();
    }
    return m;
  }();
  return mode;
}

std::vector<std::string> ApplySandbox(const SandboxOptions& sandbox, std::vector<std::string> argv,
                                      ChildSandbox* child) {
  *child = ChildSandbox{};
  if (!sandbox.enabled) return argv;
  SandboxMode mode = DetectSandboxMode();
  if (mode == SandboxMode::kUnshare) {
    child->unshare_net = sandbox.no_network;
    child->uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
    child->gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";
    return argv;
  }
  if (mode != SandboxMode::kBwrap) return argv;

  const char* path = getenv("PATH");
  std::vector<std::string> out = {FindExecutable("bwrap", path ? path : "/usr/bin:/bin"),
                                  // bwrap's payload dies when bwrap is killed with the group.
                                  "--die-with-parent"};
  // No --new-session: it would move the payload out of our process group, and a
  // kill(-pgid) would no longer reach it or its children. The child already
  // calls setsid() before exec'ing bwrap, so it has no controlling terminal.
  if (sandbox.no_network) out.push_back("--unshare-net");
  if (sandbox.read_only_system) {
    out.insert(out.end(), {"--ro-bind", "/", "/"});
  } else {
    out.insert(out.end(), {"--bind", "/", "/"});
  }
  // /dev as is: CUDA programs need /dev/nvidia*, /dev/nvidia-uvm, /dev/shm.
  out.insert(out.end(), {"--dev-bind", "/dev", "/dev", "--proc", "/proc",
                         // A private /tmp: programs and the CUDA runtime may write
                         // scratch files; nothing leaks to or from other jobs.
                         "--tmpfs", "/tmp"});
  // The private /tmp must not hide the program itself (a build or install
  // under /tmp): bring its directory back, read-only, before the writable dir
  // (a later mount wins where they overlap).
  if (!argv.empty() && argv[0].rfind("/tmp/", 0) == 0) {
    std::string dir = std::filesystem::path(argv[0]).parent_path().string();
    out.insert(out.end(), {"--ro-bind", dir, dir});
  }
  if (!sandbox.writable_dir.empty()) {
    std::string w = sandbox.writable_dir.string();
    out.insert(out.end(), {"--bind", w, w});
  }
  for (const auto& dir : sandbox.extra_writable_dirs) {
    std::string w = dir.string();
    out.insert(out.end(), {"--bind", w, w});
  }
  out.push_back("--");
  out.insert(out.end(), std::make_move_iterator(argv.begin()), std::make_move_iterator(argv.end()));
  return out;
}

int EnterChildSandbox(const ChildSandbox& child) {
  if (!child.unshare_net) return 0;
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) return errno;
  // The uid/gid maps keep the child's ids the same inside the namespace, so the
  // files it creates are owned as usual. setgroups must be denied before gid_map.
  WriteWhole("/proc/self/setgroups", "deny", 4);
  int err = WriteWhole("/proc/self/uid_map", child.uid_map.data(), child.uid_map.size());
  if (err == 0) err = WriteWhole("/proc/self/gid_map", child.gid_map.data(), child.gid_map.size());
  BringUpLoopback();
  return err;
}

}  // namespace assay
