#include "elf_check.hpp"

#include <elf.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

namespace xfbench::host {
namespace {

std::string bytes(std::uint64_t n) { return std::to_string(n) + " bytes"; }

// Reads `n` bytes at `offset`; false when the file is shorter.
bool read_at(std::ifstream& f, std::uint64_t offset, void* out, std::size_t n) {
  f.clear();
  f.seekg(std::streamoff(offset));
  f.read(static_cast<char*>(out), std::streamsize(n));
  return f.gcount() == std::streamsize(n);
}

std::string past_end(const char* what, std::uint64_t end, std::uint64_t size) {
  return std::string("truncated ELF: ") + what + " ends at byte " + std::to_string(end) +
         ", the file has " + bytes(size);
}

// Whether [offset, offset + length) lies in a file of `size` bytes (without overflow).
bool inside(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace

std::string elf_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("cannot read: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  const std::uint64_t size = std::uint64_t(st.st_size);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::string("cannot read: ") + std::strerror(errno);

  Elf64_Ehdr eh{};
  if (!read_at(f, 0, &eh, EI_NIDENT)) {
    return size == 0 ? "empty file" : "not an ELF file (" + bytes(size) + ")";
  }
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF file";
  if (!read_at(f, 0, &eh, sizeof eh)) return past_end("the ELF header", sizeof eh, size);
  if (eh.e_type != ET_DYN)
    return "not a shared library (ELF type " + std::to_string(eh.e_type) + ")";
#if defined(__x86_64__)
  if (eh.e_machine != EM_X86_64)
    return "built for another CPU (ELF machine " + std::to_string(eh.e_machine) + ")";
#elif defined(__aarch64__)
  if (eh.e_machine != EM_AARCH64)
    return "built for another CPU (ELF machine " + std::to_string(eh.e_machine) + ")";
#endif

  if (eh.e_phnum == 0) return "no program headers (not a loadable library)";
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) return "unexpected program header size";
  const std::uint64_t ph_bytes = std::uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
  if (!inside(eh.e_phoff, ph_bytes, size)) {
    return past_end("the program header table", eh.e_phoff + ph_bytes, size);
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(f, eh.e_phoff, ph.data(), ph_bytes)) return "cannot read the program headers";
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_NULL && !inside(p.p_offset, p.p_filesz, size)) {
      return past_end(p.p_type == PT_LOAD ? "a loadable segment" : "a segment",
                      p.p_offset + p.p_filesz, size);
    }
  }

  // Section headers are optional for loading, but Boost.DLL and debuggers read them.
  if (eh.e_shnum > 0) {
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return "unexpected section header size";
    const std::uint64_t sh_bytes = std::uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr);
    if (!inside(eh.e_shoff, sh_bytes, size)) {
      return past_end("the section header table", eh.e_shoff + sh_bytes, size);
    }
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    if (!read_at(f, eh.e_shoff, sh.data(), sh_bytes)) return "cannot read the section headers";
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL &&
          !inside(s.sh_offset, s.sh_size, size)) {
        return past_end("a section", s.sh_offset + s.sh_size, size);
      }
    }
  }
  return "";
}

}  // namespace xfbench::host
