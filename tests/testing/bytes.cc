#include "tests/testing/bytes.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>

#include "rill/mem/buffer.h"

namespace rill::test {

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string bytes(size, '\0');
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t word = rng();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  for (; i < size; ++i) bytes[i] = static_cast<char>(rng());
  return bytes;
}

std::string ProtobufLike(size_t size, uint64_t seed) {
  static constexpr std::string_view kWords[] = {
      "alpha", "bravo",  "charlie", "delta", "echo",    "foxtrot",  "golf",  "hotel",
      "india", "juliet", "kilo",    "lima",  "mike",    "november", "oscar", "papa",
      "user",  "order",  "status",  "ok",    "pending", "shipped",  "id",    "name"};
  std::mt19937_64 rng(seed);
  std::string bytes;
  bytes.reserve(size + 64);
  while (bytes.size() < size) {
    // field 1: varint; field 2: string; field 3: fixed32.
    bytes.push_back(0x08);
    uint64_t v = rng() % 100000;
    do {
      bytes.push_back(static_cast<char>((v & 0x7F) | (v >= 0x80 ? 0x80 : 0)));
      v >>= 7;
    } while (v != 0);
    const std::string_view word = kWords[rng() % std::size(kWords)];
    bytes.push_back(0x12);
    bytes.push_back(static_cast<char>(word.size()));
    bytes.append(word);
    bytes.push_back(0x1d);
    const uint32_t fixed = static_cast<uint32_t>(rng() % 16);
    bytes.append(reinterpret_cast<const char*>(&fixed), 4);
  }
  bytes.resize(size);
  return bytes;
}

BufferSlice SliceOf(std::string_view bytes, BufferPool& pool, std::span<const size_t> pieces) {
  BufferSlice slice;
  size_t offset = 0;
  for (size_t i = 0; offset < bytes.size(); ++i) {
    const size_t n = std::min(pieces[i % pieces.size()], bytes.size() - offset);
    slice.Append(Buffer::Copy(bytes.substr(offset, n), pool));
    offset += n;
  }
  return slice;
}

BufferSlice SliceOf(std::string_view bytes, BufferPool& pool) {
  return BufferSlice(Buffer::Copy(bytes, pool));
}

}  // namespace rill::test
