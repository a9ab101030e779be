// Checks a plugin file before the dynamic loader maps it. dlopen() trusts the ELF headers: a file
// cut short (a copy interrupted, a full disk) has segments that point past its end, and touching
// them raises SIGBUS inside dlopen, which no error handling can catch. Reading the headers first
// turns that into one line naming the file.
#pragma once

#include <string>

namespace xfbench::host {

// Why `path` cannot be a loadable 64-bit ELF shared object of this machine, or "" when its
// headers and every segment and section they name lie inside the file.
std::string elf_problem(const std::string& path);

}  // namespace xfbench::host
