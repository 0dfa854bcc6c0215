// A whole program (kind cuda_program): built with nvcc, run as a process.
// This one never touches the GPU, so it runs on any Assay server.
#include <cstdio>

int main(int argc, char** argv) {
  std::printf("hello from an Assay worker (%d args)\n", argc - 1);
  long sum = 0;
  for (long i = 1; i <= 1000000; ++i) sum += i;
  std::printf("sum(1..1e6) = %ld\n", sum);
  return 0;
}
