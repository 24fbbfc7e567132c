// Command-line flags of the peer programs: `--name=value`, or `--name` alone for "true".
//
//   PeerFlags flags({{"port", "0"}, {"use_tls", "false"}});
//   if (!flags.Parse(argc, argv)) return 2;
//   int port = flags.GetInt("port");
//
// Flag names follow the gRPC interop programs, so a harness can start any peer the same way.
// Thread-compatible.
#ifndef RILL_TESTS_PEERS_CPP_PEER_FLAGS_H_
#define RILL_TESTS_PEERS_CPP_PEER_FLAGS_H_

#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

namespace peer {

class PeerFlags {
 public:
  // `defaults` names every accepted flag with its default value.
  explicit PeerFlags(std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {}

  // Reads argv; prints the problem and returns false on an unknown flag or a bare argument.
  [[nodiscard]] bool Parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg.substr(0, 2) != "--") {
        std::fprintf(stderr, "unexpected argument: %s\n", argv[i]);
        return false;
      }
      arg.remove_prefix(2);
      std::string name(arg.substr(0, arg.find('=')));
      std::string value = arg.find('=') == std::string_view::npos
                              ? std::string("true")
                              : std::string(arg.substr(arg.find('=') + 1));
      auto it = values_.find(name);
      if (it == values_.end()) {
        std::fprintf(stderr, "unknown flag: --%s\n", name.c_str());
        return false;
      }
      it->second = std::move(value);
    }
    return true;
  }

  const std::string& Get(const std::string& name) const { return values_.at(name); }

  // The flag as an integer; -1 when it is not one.
  int GetInt(const std::string& name) const {
    const std::string& text = Get(name);
    int value = -1;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return -1;
    return value;
  }

  bool GetBool(const std::string& name) const {
    const std::string& text = Get(name);
    return text == "true" || text == "1" || text == "yes";
  }

 private:
  std::map<std::string, std::string> values_;
};

// The whole file, or "" when it cannot be read.
inline std::string ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string content;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) content.append(buf, n);
  std::fclose(f);
  return content;
}

}  // namespace peer

#endif  // RILL_TESTS_PEERS_CPP_PEER_FLAGS_H_
