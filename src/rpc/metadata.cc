#include "rill/metadata.h"

#include <functional>

namespace rill {

void Metadata::Add(std::string_view key, std::string_view value) {
  // A view into our own bytes (a value just read with Get(), say) would dangle once append()
  // reallocates: copy such arguments first.
  const auto inside = [this](std::string_view s) {
    return !s.empty() && std::less_equal<>()(bytes_.data(), s.data()) &&
           std::less<>()(s.data(), bytes_.data() + bytes_.size());
  };
  if (inside(key) || inside(value)) {
    const std::string copy = std::string(key) + std::string(value);
    Add(std::string_view(copy).substr(0, key.size()), std::string_view(copy).substr(key.size()));
    return;
  }
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(key);
  bytes_.append(value);
  entries_.push_back(
      Index{offset, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())});
}

void Metadata::Set(std::string_view key, std::string_view value) {
  // `value` may point into this metadata; copy it before removing.
  std::string copy(value);
  Remove(key);
  Add(key, copy);
}

size_t Metadata::Remove(std::string_view key) {
  size_t removed = 0;
  size_t out = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if ((*this)[i].first == key) {
      removed_bytes_ += entries_[i].key_size + entries_[i].value_size;
      ++removed;
      continue;
    }
    entries_[out++] = entries_[i];
  }
  entries_.resize(out);
  return removed;
}

void Metadata::Clear() noexcept {
  bytes_.clear();
  entries_.clear();
  removed_bytes_ = 0;
}

std::optional<std::string_view> Metadata::Get(std::string_view key) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry e = (*this)[i];
    if (e.first == key) return e.second;
  }
  return std::nullopt;
}

std::vector<std::string_view> Metadata::GetAll(std::string_view key) const {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry e = (*this)[i];
    if (e.first == key) out.push_back(e.second);
  }
  return out;
}

Metadata::Entry Metadata::operator[](size_t i) const noexcept {
  const Index& e = entries_[i];
  const std::string_view all(bytes_);
  return {all.substr(e.offset, e.key_size), all.substr(e.offset + e.key_size, e.value_size)};
}

}  // namespace rill
