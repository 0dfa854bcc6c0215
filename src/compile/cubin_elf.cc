#include "compile/cubin_elf.h"

#include <elf.h>

#include <cstring>
#include <optional>
#include <vector>

namespace assay {
namespace {

constexpr uint8_t kFormatSval = 0x04;  // u16 size + payload
constexpr uint8_t kFormatHval = 0x03;  // u16 value
constexpr uint8_t kAttrMaxThreads = 0x05;
constexpr uint8_t kAttrFrameSize = 0x11;
constexpr uint8_t kAttrRegCount = 0x2f;

template <typename T>
std::optional<T> ReadAt(std::string_view data, uint64_t offset) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, data.data() + offset, sizeof(T));
  return value;
}

std::string_view CString(std::string_view table, uint64_t offset) {
  if (offset >= table.size()) return {};
  std::string_view rest = table.substr(offset);
  return rest.substr(0, rest.find('\0'));
}

struct Section {
  std::string name;
  Elf64_Shdr header;
  std::string_view bytes;  // empty for NOBITS
};

std::vector<Section> ReadSections(std::string_view data) {
  std::vector<Section> out;
  auto eh = ReadAt<Elf64_Ehdr>(data, 0);
  if (!eh || !IsElf(data) || eh->e_ident[EI_CLASS] != ELFCLASS64) return out;
  if (eh->e_shentsize != sizeof(Elf64_Shdr)) return out;
  std::vector<Elf64_Shdr> headers;
  for (uint16_t i = 0; i < eh->e_shnum; ++i) {
    auto sh = ReadAt<Elf64_Shdr>(data, eh->e_shoff + uint64_t{i} * sizeof(Elf64_Shdr));
    if (!sh) return {};
    headers.push_back(*sh);
  }
  auto bytes_of = [&](const Elf64_Shdr& sh) -> std::string_view {
    if (sh.sh_type == SHT_NOBITS || sh.sh_offset > data.size() || data.size() - sh.sh_offset < sh.sh_size) {
      return {};
    }
    return data.substr(sh.sh_offset, sh.sh_size);
  };
  if (eh->e_shstrndx >= headers.size()) return out;
  const std::string_view names = bytes_of(headers[eh->e_shstrndx]);
  for (const Elf64_Shdr& sh : headers) {
    out.push_back({std::string(CString(names, sh.sh_name)), sh, bytes_of(sh)});
  }
  return out;
}

// Calls fn(attribute, payload) for each record of a .nv.info section.
template <typename Fn>
void ForEachAttribute(std::string_view info, Fn fn) {
  size_t i = 0;
  while (i + 4 <= info.size()) {
    const uint8_t format = static_cast<uint8_t>(info[i]);
    const uint8_t attr = static_cast<uint8_t>(info[i + 1]);
    if (format == kFormatSval) {
      uint16_t size = 0;
      std::memcpy(&size, info.data() + i + 2, 2);
      if (i + 4 + size > info.size()) return;
      fn(attr, info.substr(i + 4, size));
      i += 4 + size;
    } else {
      if (format == kFormatHval) fn(attr, info.substr(i + 2, 2));
      i += 4;
    }
  }
}

uint32_t U32(std::string_view payload, size_t index) {
  return ReadAt<uint32_t>(payload, index * 4).value_or(0);
}

}  // namespace

bool IsElf(std::string_view data) {
  return data.size() >= 4 && std::memcmp(data.data(), ELFMAG, SELFMAG) == 0;
}

std::map<std::string, CubinKernelInfo> ReadCubinKernels(std::string_view cubin) {
  std::map<std::string, CubinKernelInfo> out;
  const std::vector<Section> sections = ReadSections(cubin);
  std::string_view symtab, strtab;
  for (const Section& s : sections) {
    if (s.header.sh_type == SHT_SYMTAB) {
      symtab = s.bytes;
      if (s.header.sh_link < sections.size()) strtab = sections[s.header.sh_link].bytes;
    }
  }
  auto symbol_name = [&](uint32_t index) -> std::string {
    auto sym = ReadAt<Elf64_Sym>(symtab, uint64_t{index} * sizeof(Elf64_Sym));
    return sym ? std::string(CString(strtab, sym->st_name)) : std::string();
  };

  const std::string info_prefix = ".nv.info.";
  const std::string const_prefix = ".nv.constant";
  for (const Section& s : sections) {
    if (s.name.rfind(info_prefix, 0) == 0) {
      CubinKernelInfo& k = out[s.name.substr(info_prefix.size())];
      ForEachAttribute(s.bytes, [&](uint8_t attr, std::string_view payload) {
        if (attr == kAttrMaxThreads) k.max_threads = static_cast<int>(U32(payload, 0) * U32(payload, 1) * U32(payload, 2));
      });
    }
  }
  for (const Section& s : sections) {
    if (s.name == ".nv.info") {
      // Program-wide records name their function by symbol index.
      ForEachAttribute(s.bytes, [&](uint8_t attr, std::string_view payload) {
        if (attr != kAttrRegCount && attr != kAttrFrameSize) return;
        auto it = out.find(symbol_name(U32(payload, 0)));
        if (it == out.end()) return;
        if (attr == kAttrRegCount) it->second.registers = static_cast<int>(U32(payload, 1));
        if (attr == kAttrFrameSize) it->second.frame_bytes = U32(payload, 1);
      });
    } else if (s.name.rfind(const_prefix, 0) == 0) {
      // ".nv.constant0.NAME": the bank digits, a dot, then the kernel.
      const size_t dot = s.name.find('.', const_prefix.size());
      if (dot == std::string::npos) continue;
      auto it = out.find(s.name.substr(dot + 1));
      if (it != out.end()) it->second.const_bytes += static_cast<int64_t>(s.header.sh_size);
    }
  }
  return out;
}

}  // namespace assay
