// The CPU burn's load: on one core, kAccumulators independent chains of fp32 FMAs per vector lane
// in the widest vector unit the CPU has, chosen at run time (the kernels are compiled with
// per-function target attributes, so the build stays generic). A chunk starts every chain from
// the same values in [1, 1.25) and runs `steps` steps of two FMAs, x = x·1.5 + 0.25 then
// x = x·(2/3) - 1/6 + 2^-20 (constants rounded to fp32): every step moves every value by about
// 2^-20, so a skipped or wrong step shows, and a chunk stays near its start. Its values are the
// same bits every time on a core that computes right, so each chunk is compared with the first.
// An FMA rounds once by
// IEEE 754, so every ISA gives the bits of a scalar std::fma reference; sse2 and generic, with no
// FMA, multiply and add (their reference too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xfbench::burn {

enum class CpuIsa { avx512f, avx2_fma, neon, sse2, generic };

CpuIsa detect_cpu_isa();           // the widest this CPU and kernel support
bool cpu_has(CpuIsa isa);          // whether this CPU can run `isa`'s kernel
std::string isa_name(CpuIsa isa);  // "avx512f", "avx2+fma", "neon", "sse2 (no FMA)", ...
int isa_lanes(CpuIsa isa);         // fp32 lanes of one vector: 16, 8 or 4
// The peak the burn is measured against, fp32 FLOP per cycle per core: FMA units x lanes x 2.
// AVX-512 64 (2 units; 32 on AMD family 19h, Zen 4's double-pumped unit), AVX2+FMA 32, NEON 16
// (2 units of 128 bits), SSE2 and generic 8 (one multiply and one add of 4 lanes).
double assumed_flop_per_cycle(CpuIsa isa);

// Independent chains per lane: an FMA unit holds ~4 in flight and a core has 2, so 8 hide its
// latency; 12 leave a margin and fit the 16 registers of AVX2 with the 4 constants.
constexpr int kAccumulators = 12;
constexpr std::uint64_t kChunkSteps = 1 << 16;  // ~0.3 ms on a 3 GHz AVX2 core

std::size_t chunk_values(CpuIsa isa);  // kAccumulators x lanes
double chunk_flops(CpuIsa isa, std::uint64_t steps);

// One chunk on this core: `out` gets chunk_values(isa) floats.
void run_chunk(CpuIsa isa, std::uint64_t steps, float* out);
// The same values one at a time in scalar code (std::fma where `isa` fuses).
void reference_chunk(CpuIsa isa, std::uint64_t steps, float* out);

// This core's clock in MHz, from chains of dependent integer adds (one per cycle on every
// x86-64 and AArch64 core), the fastest of 8 of ~0.1 ms; NaN on other architectures. With
// `load` avx512f or avx2_fma the chain runs beside that ISA's FMAs (the clock under the burn's
// own vector load: Intel's AVX-512 parts lower it); any other `load`, the chain alone.
double probe_clock_mhz(CpuIsa load = CpuIsa::generic);

}  // namespace xfbench::burn
