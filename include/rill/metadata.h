// rill::Metadata: the custom key/value pairs of a call's headers or trailers.
//
// Keys are lowercase ASCII (0-9 a-z _ - .). Values of keys ending in "-bin" are arbitrary bytes
// (rill base64-encodes them on the wire and decodes them on receipt); other values are
// printable ASCII. Order is kept and a key may repeat.
//
//   rill::Metadata md;
//   md.Add("x-request-id", "42");
//   md.Add("trace-bin", std::string_view("\x01\x02", 2));
//   if (auto id = md.Get("x-request-id")) Use(*id);
//
// Storage is one flat byte string plus an index, both keeping their capacity across Clear(), so
// a Metadata reused call after call does not allocate.
//
// Thread safety: thread-compatible.
#ifndef RILL_METADATA_H_
#define RILL_METADATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill {

class Metadata {
 public:
  using Entry = std::pair<std::string_view, std::string_view>;

  // Appends a pair. Invalid keys or values are a programming error for metadata rill sends; the
  // call fails with INTERNAL when it is sent (see ClientContext / ServerContext).
  void Add(std::string_view key, std::string_view value);
  // Replaces every value of `key` with one value.
  void Set(std::string_view key, std::string_view value);
  // Removes every value of `key`; returns how many were removed.
  size_t Remove(std::string_view key);
  void Clear() noexcept;

  // The first value of `key`.
  [[nodiscard]] std::optional<std::string_view> Get(std::string_view key) const;
  // Every value of `key`, in order.
  [[nodiscard]] std::vector<std::string_view> GetAll(std::string_view key) const;
  [[nodiscard]] bool Contains(std::string_view key) const { return Get(key).has_value(); }

  [[nodiscard]] size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  [[nodiscard]] Entry operator[](size_t i) const noexcept;

  class Iterator {
   public:
    Iterator(const Metadata* md, size_t i) : md_(md), i_(i) {}
    Entry operator*() const { return (*md_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }

   private:
    const Metadata* md_;
    size_t i_;
  };
  [[nodiscard]] Iterator begin() const { return Iterator(this, 0); }
  [[nodiscard]] Iterator end() const { return Iterator(this, entries_.size()); }

  // Bytes of keys and values (for header-size limits).
  [[nodiscard]] size_t ByteSize() const noexcept { return bytes_.size() - removed_bytes_; }

 private:
  struct Index {
    uint32_t offset;
    uint32_t key_size;
    uint32_t value_size;
  };
  std::string bytes_;
  std::vector<Index> entries_;
  size_t removed_bytes_ = 0;
};

}  // namespace rill

#endif  // RILL_METADATA_H_
