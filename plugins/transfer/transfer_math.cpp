#include "transfer_math.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

#include "xfbench/error.hpp"
#include "xfbench/names.hpp"

namespace xfbench::transfer {

namespace {
constexpr std::size_t KiB = std::size_t(1) << 10;
constexpr std::size_t MiB = std::size_t(1) << 20;
constexpr std::size_t GiB = std::size_t(1) << 30;
}  // namespace

std::size_t parse_size(const std::string& text, const std::string& flag) {
  auto bad = [&]() {
    XF_THROW(InvalidArgument, "--xfbench_" + flag + ": '" + text +
                                  "' is not a size (examples: 8B, 4KiB, 64MiB, 1GiB, 4096)");
  };
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    std::uint64_t digit = std::uint64_t(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) bad();
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) bad();
  std::string unit = text.substr(i);
  for (char& ch : unit) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K" || unit == "KB" || unit == "KIB") scale = KiB;
  if (unit == "M" || unit == "MB" || unit == "MIB") scale = MiB;
  if (unit == "G" || unit == "GB" || unit == "GIB") scale = GiB;
  if (scale == 0 || value == 0 || value > std::numeric_limits<std::uint64_t>::max() / scale) bad();
  return std::size_t(value * scale);
}

std::vector<std::size_t> parse_sizes(const std::vector<std::string>& items,
                                     const std::string& flag) {
  std::vector<std::size_t> out;
  for (const std::string& s : items) out.push_back(parse_size(s, flag));
  return out;
}

std::string format_size(std::size_t bytes) {
  for (auto [unit, name] : {std::pair{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + " " + name;
  }
  return std::to_string(bytes) + " B";
}

std::vector<std::size_t> default_memcpy_sizes() {
  std::vector<std::size_t> out;
  for (std::size_t b = 4 * KiB; b <= GiB; b *= 4) out.push_back(b);
  return out;
}

std::vector<std::size_t> default_p2p_sizes() { return {MiB, 16 * MiB, 256 * MiB, GiB}; }

std::vector<std::size_t> default_nccl_sizes() {
  return {8, KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB, 256 * MiB, GiB, 4 * GiB};
}

const char* to_string(Direction d) {
  switch (d) {
    case Direction::h2d:
      return "h2d";
    case Direction::d2h:
      return "d2h";
    case Direction::d2d:
      return "d2d";
  }
  return "?";
}

const char* to_string(HostMemory m) {
  switch (m) {
    case HostMemory::pinned:
      return "pinned";
    case HostMemory::pageable:
      return "pageable";
    case HostMemory::device:
      return "device";
  }
  return "?";
}

const char* to_string(Engine e) { return e == Engine::ce ? "ce" : "sm"; }

std::string memcpy_name(Direction d, HostMemory m, Engine e, std::size_t bytes) {
  return CaseName("Memcpy")
      .add(to_string(d))
      .add(to_string(m))
      .add(to_string(e))
      .add("bytes", (long long)bytes)
      .str();
}

double memcpy_bytes_counted(Direction d, std::size_t bytes) {
  return d == Direction::d2d ? 2.0 * double(bytes) : double(bytes);
}

const char* to_string(P2PMode m) { return m == P2PMode::uni ? "uni" : "bi"; }

std::string p2p_name(P2PMode m, bool peer, Engine e, int src, int dst, std::size_t bytes) {
  return CaseName("P2P")
      .add(to_string(m))
      .add(peer ? "peer" : "nopeer")
      .add(to_string(e))
      .add("src", src)
      .add("dst", dst)
      .add("bytes", (long long)bytes)
      .str();
}

std::string p2p_latency_name(bool peer, Engine e, int src, int dst) {
  return CaseName("P2P")
      .add("latency")
      .add(peer ? "peer" : "nopeer")
      .add(to_string(e))
      .add("src", src)
      .add("dst", dst)
      .str();
}

double p2p_bytes_counted(P2PMode m, std::size_t bytes) {
  return m == P2PMode::bi ? 2.0 * double(bytes) : double(bytes);
}

std::vector<std::pair<int, int>> gpu_pairs(int gpus) {
  if (gpus < 2) return {{0, 1}, {1, 0}};
  std::vector<std::pair<int, int>> out;
  for (int s = 0; s < gpus; ++s) {
    for (int d = 0; d < gpus; ++d) {
      if (s != d) out.emplace_back(s, d);
    }
  }
  return out;
}

const char* to_string(Collective c) {
  switch (c) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::allgather:
      return "allgather";
    case Collective::reducescatter:
      return "reducescatter";
    case Collective::broadcast:
      return "broadcast";
    case Collective::reduce:
      return "reduce";
    case Collective::alltoall:
      return "alltoall";
    case Collective::sendrecv:
      return "sendrecv";
  }
  return "?";
}

std::vector<Collective> all_collectives() {
  return {Collective::allreduce, Collective::allgather, Collective::reducescatter,
          Collective::broadcast, Collective::reduce,    Collective::alltoall,
          Collective::sendrecv};
}

Collective parse_collective(const std::string& name) {
  for (Collective c : all_collectives()) {
    if (name == to_string(c)) return c;
  }
  XF_THROW(InvalidArgument, "--xfbench_nccl_ops: unknown op '" + name +
                                "' (expected allreduce, allgather, reducescatter, broadcast, "
                                "reduce, alltoall or sendrecv)");
}

std::string nccl_name(Collective c, Dtype t, int gpus, std::size_t bytes) {
  return CaseName("NCCL")
      .add(to_string(c))
      .add(xfbench::to_string(t))
      .add("gpus", gpus)
      .add("bytes", (long long)bytes)
      .str();
}

double bus_factor(Collective c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reducescatter:
    case Collective::alltoall:
      return (n - 1) / n;
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::sendrecv:
      return 1.0;
  }
  return 0;
}

CollectiveShape shape_for(Collective c, std::size_t bytes, std::size_t elem_size, int nranks) {
  CollectiveShape s;
  const std::size_t n = std::size_t(nranks);
  const std::size_t elems = bytes / elem_size;
  switch (c) {
    case Collective::allreduce:
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::sendrecv:
      s.send_count = s.recv_count = s.chunk = elems;
      break;
    case Collective::allgather:
      s.chunk = s.send_count = elems / n;
      s.recv_count = s.chunk * n;
      break;
    case Collective::reducescatter:
      s.chunk = s.recv_count = elems / n;
      s.send_count = s.chunk * n;
      break;
    case Collective::alltoall:
      s.chunk = elems / n;
      s.send_count = s.recv_count = s.chunk * n;
      break;
  }
  if (s.chunk == 0) return CollectiveShape{};
  s.bytes = std::max(s.send_count, s.recv_count) * elem_size;
  return s;
}

int max_exact_ranks(Dtype t) {
  switch (t) {
    case Dtype::fp16:
      return 2048 / 4;
    case Dtype::bf16:
      return 256 / 4;
    default:
      return 1 << 20;
  }
}

}  // namespace xfbench::transfer
