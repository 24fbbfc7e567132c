// rill_binlog: prints a gRPC binary log as text, one entry after another.
//
//   rill_binlog FILE      (FILE: delimited grpc.binarylog.v1.GrpcLogEntry messages, as
//                          rill::BinaryLog writes them; "-" reads stdin)
//
// Each entry is printed in protobuf's text format under a line naming its position, call and
// event. Exit codes: 0 the whole file was read, 1 it ends inside an entry or holds one that does
// not parse (what came before is printed), 2 bad usage or a file that cannot be opened.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "grpc/binlog/v1/binarylog.pb.h"

namespace {

using grpc::binarylog::v1::GrpcLogEntry;

int Run(int fd) {
  google::protobuf::io::FileInputStream input(fd);
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  GrpcLogEntry entry;
  std::string text;
  for (uint64_t index = 0;; ++index) {
    google::protobuf::io::CodedInputStream coded(&input);
    uint32_t size = 0;
    if (!coded.ReadVarint32(&size)) {
      return coded.CurrentPosition() == 0 ? 0 : 1;  // a clean end, or a cut length
    }
    const auto limit = coded.PushLimit(static_cast<int>(size));
    if (!entry.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage() ||
        coded.BytesUntilLimit() != 0) {
      std::fprintf(stderr, "rill_binlog: entry %llu (%u bytes) does not parse\n",
                   static_cast<unsigned long long>(index), size);
      return 1;
    }
    coded.PopLimit(limit);
    text.clear();
    printer.PrintToString(entry, &text);
    std::printf("# entry %llu: call %llu #%llu %s (%s)\n%s\n",
                static_cast<unsigned long long>(index),
                static_cast<unsigned long long>(entry.call_id()),
                static_cast<unsigned long long>(entry.sequence_id_within_call()),
                GrpcLogEntry::EventType_Name(entry.type()).c_str(),
                GrpcLogEntry::Logger_Name(entry.logger()).c_str(), text.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: rill_binlog FILE   (prints a gRPC binary log as text)\n");
    return 2;
  }
  const int fd = std::strcmp(argv[1], "-") == 0 ? 0 : ::open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "rill_binlog: cannot open %s: %s\n", argv[1], std::strerror(errno));
    return 2;
  }
  const int rc = Run(fd);
  if (fd != 0) ::close(fd);
  return rc;
}
