// A program that never touches CUDA: with CUDA_INJECTION64_PATH set it must
// run exactly as without it, and no kernel timing file may appear.
// `assay_cupti_no_cuda_probe mark` also loads $CUDA_INJECTION64_PATH itself
// and calls AssayCuptiMark and AssayCuptiFlush, which must be harmless before
// (and without) CUDA.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  long long sum = 0;
  for (int i = 1; i <= 1000; ++i) sum += i;
  std::printf("no cuda here, sum %lld, args %d\n", sum, argc - 1);
  if (argc > 1 && std::strcmp(argv[1], "mark") == 0) {
    const char* lib = std::getenv("CUDA_INJECTION64_PATH");
    void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : nullptr;
    auto mark = h ? reinterpret_cast<void (*)(const char*)>(dlsym(h, "AssayCuptiMark")) : nullptr;
    if (mark == nullptr) {
      std::printf("no AssayCuptiMark: %s\n", h ? "symbol missing" : dlerror());
      return 3;
    }
    for (int i = 0; i < 3; ++i) mark("before cuda");
    mark(nullptr);
    auto flush = reinterpret_cast<void (*)()>(dlsym(h, "AssayCuptiFlush"));
    if (flush == nullptr) {
      std::printf("no AssayCuptiFlush\n");
      return 3;
    }
    flush();
    std::printf("marked\n");
  }
  return 0;
}
