#include "src/http2/header_block.h"

namespace rill::internal {

void HeaderBlock::Add(std::string_view name, std::string_view value, bool never_index) {
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(name);
  bytes_.append(value);
  entries_.push_back(Entry{nullptr, nullptr, offset, static_cast<uint32_t>(name.size()),
                           offset + static_cast<uint32_t>(name.size()),
                           static_cast<uint32_t>(value.size()), never_index});
}

void HeaderBlock::AddStaticName(std::string_view name, std::string_view value) {
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(value);
  entries_.push_back(Entry{name.data(), nullptr, 0, static_cast<uint32_t>(name.size()), offset,
                           static_cast<uint32_t>(value.size()), false});
}

HeaderField HeaderBlock::operator[](size_t i) const noexcept {
  const Entry& e = entries_[i];
  const char* base = bytes_.data();
  return HeaderField{
      std::string_view(e.name != nullptr ? e.name : base + e.name_offset, e.name_size),
      std::string_view(e.value != nullptr ? e.value : base + e.value_offset, e.value_size),
      e.never_index, e.name != nullptr, e.value != nullptr};
}

}  // namespace rill::internal
