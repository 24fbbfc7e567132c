#include "src/rpc/compressor_set.h"

#include "rill/channel.h"

namespace rill {

std::vector<std::shared_ptr<Compressor>> DefaultCompressors() {
  return {GzipCompressor(), DeflateCompressor(), ZstdCompressor()};
}

}  // namespace rill

namespace rill::internal {

std::vector<std::shared_ptr<Compressor>> CompressorSet::BuiltIns() { return DefaultCompressors(); }

CompressorSet::CompressorSet(std::vector<std::shared_ptr<Compressor>> compressors)
    : compressors_(std::move(compressors)), accept_encoding_("identity") {
  for (const auto& compressor : compressors_) {
    accept_encoding_ += ',';
    accept_encoding_.append(compressor->name());
  }
}

Compressor* CompressorSet::Find(std::string_view name) const noexcept {
  for (const auto& compressor : compressors_) {
    if (compressor->name() == name) return compressor.get();
  }
  return nullptr;
}

bool AcceptsEncoding(std::string_view accept_encoding, std::string_view name) {
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item == name) return true;
    if (comma == std::string_view::npos) break;
    accept_encoding.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace rill::internal
