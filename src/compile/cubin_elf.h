// Reads what a cubin (a CUDA ELF image) says about its kernels, without any
// toolkit binary: the kernel list, register counts, `__launch_bounds__`
// (EIATTR_MAX_THREADS) and the per-kernel constant banks. The .nv.info
// attribute layout is NVIDIA's undocumented but stable EIATTR format: records
// of {u8 format, u8 attribute, payload}, where format 4 carries a u16 size.
//
// Thread-safety: pure function. Never trusts the image: every offset is
// bounds-checked, and a malformed image yields an empty or partial map.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace assay {

struct CubinKernelInfo {
  int registers = 0;        // EIATTR_REGCOUNT
  int max_threads = 0;      // EIATTR_MAX_THREADS (x*y*z of __launch_bounds__ / .maxntid), 0 if none
  int64_t const_bytes = 0;  // sizes of .nv.constantN.NAME (bank 0: driver area + parameters)
  int64_t frame_bytes = 0;  // EIATTR_FRAME_SIZE [bytes]
};

// Kernels are the functions with a `.nv.info.NAME` section; keyed by mangled name.
std::map<std::string, CubinKernelInfo> ReadCubinKernels(std::string_view cubin);

// True when `data` starts with the ELF magic.
bool IsElf(std::string_view data);

}  // namespace assay
