#include "rill/services/admin.h"

namespace rill {

AdminServices AddAdminServices(ServerBuilder& builder) {
  AdminServices admin;
  admin.health = AddHealthService(builder);
  AddReflectionService(builder);
  AddChannelzService(builder);
  return admin;
}

}  // namespace rill
