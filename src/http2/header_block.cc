#include "src/http2/header_block.h"

namespace rill::internal {

void HeaderBlock::Add(std::string_view name, std::string_view value, bool never_index) {
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(name);
  bytes_.append(value);
  entries_.push_back(Entry{offset, static_cast<uint32_t>(name.size()),
                           static_cast<uint32_t>(value.size()), never_index});
}

HeaderField HeaderBlock::operator[](size_t i) const noexcept {
  const Entry& e = entries_[i];
  const std::string_view all(bytes_);
  return HeaderField{all.substr(e.name_offset, e.name_size),
                     all.substr(e.name_offset + e.name_size, e.value_size), e.never_index};
}

}  // namespace rill::internal
