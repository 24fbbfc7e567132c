#include "tests/testing/require_peer.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace rill::test {

bool PeersRequired() {
  const char* value = std::getenv("RILL_REQUIRE_PEERS");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

bool HaveProgram(const char* program) {
  return std::system((std::string("command -v ") + program + " > /dev/null 2>&1").c_str()) == 0;
}

}  // namespace rill::test
