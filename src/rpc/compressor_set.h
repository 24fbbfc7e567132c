// CompressorSet: the compressors one server or channel can use, and its grpc-accept-encoding.
//
// Thread safety: immutable after construction; shared by every reactor.
#ifndef RILL_SRC_RPC_COMPRESSOR_SET_H_
#define RILL_SRC_RPC_COMPRESSOR_SET_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/compression.h"

namespace rill::internal {

class CompressorSet {
 public:
  // gzip, deflate and zstd.
  static std::vector<std::shared_ptr<Compressor>> BuiltIns();

  explicit CompressorSet(std::vector<std::shared_ptr<Compressor>> compressors);

  // Null for "identity", the empty name and unknown names.
  [[nodiscard]] Compressor* Find(std::string_view name) const noexcept;
  // "identity,gzip,deflate,zstd": no spaces, since some peers split on ',' without trimming.
  [[nodiscard]] const std::string& accept_encoding() const noexcept { return accept_encoding_; }

 private:
  std::vector<std::shared_ptr<Compressor>> compressors_;
  std::string accept_encoding_;
};

// True when `name` appears in a grpc-accept-encoding value (comma-separated, spaces allowed).
bool AcceptsEncoding(std::string_view accept_encoding, std::string_view name);

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_COMPRESSOR_SET_H_
