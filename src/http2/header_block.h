// HeaderBlock: an ordered list of header fields stored in one reusable byte string.
//
// Used for header blocks rill sends (request headers, response headers, trailers). The storage
// keeps its capacity across Clear(), so a block reused call after call stops allocating.
//
//   HeaderBlock block;
//   block.Add(":status", "200");
//   block.Add("content-type", "application/grpc");
//   for (const HeaderField& f : block) ...
//
// Thread safety: thread-compatible.
#ifndef RILL_SRC_HTTP2_HEADER_BLOCK_H_
#define RILL_SRC_HTTP2_HEADER_BLOCK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rill::internal {

struct HeaderField {
  std::string_view name;
  std::string_view value;
  // Sensitive fields are never added to the peer's HPACK dynamic table.
  bool never_index = false;
  // The bytes live at least until the header block is sent (no copy needed).
  bool static_name = false;
  bool static_value = false;
};

class HeaderBlock {
 public:
  // Copies name and value.
  void Add(std::string_view name, std::string_view value, bool never_index = false);
  // Keeps references instead of copies: the strings must outlive the sending of the block
  // (string literals, strings owned by the server or channel).
  void AddStatic(std::string_view name, std::string_view value) {
    entries_.push_back(Entry{name.data(), value.data(), 0, static_cast<uint32_t>(name.size()), 0,
                             static_cast<uint32_t>(value.size()), false});
  }
  // A static name with a copied value.
  void AddStaticName(std::string_view name, std::string_view value);
  void Clear() noexcept {
    bytes_.clear();
    entries_.clear();
  }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  [[nodiscard]] size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] HeaderField operator[](size_t i) const noexcept;

  class Iterator {
   public:
    Iterator(const HeaderBlock* block, size_t index) : block_(block), index_(index) {}
    HeaderField operator*() const { return (*block_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    const HeaderBlock* block_;
    size_t index_;
  };
  [[nodiscard]] Iterator begin() const { return Iterator(this, 0); }
  [[nodiscard]] Iterator end() const { return Iterator(this, entries_.size()); }

 private:
  struct Entry {
    const char* name;   // static bytes, or null: bytes_[name_offset, +name_size)
    const char* value;  // static bytes, or null: bytes_[value_offset, +value_size)
    uint32_t name_offset;
    uint32_t name_size;
    uint32_t value_offset;
    uint32_t value_size;
    bool never_index;
  };
  std::string bytes_;
  std::vector<Entry> entries_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_HEADER_BLOCK_H_
