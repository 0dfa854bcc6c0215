// A program that never touches CUDA: with CUDA_INJECTION64_PATH set it must
// run exactly as without it, and no kernel timing file may appear.
#include <cstdio>

int main(int argc, char** argv) {
  long long sum = 0;
  for (int i = 1; i <= 1000; ++i) sum += i;
  std::printf("no cuda here, sum %lld, args %d\n", sum, argc - 1);
  return 0;
}
