// grpc.channelz.v1.Channelz: the process's servers, their listening sockets and connections,
// its channels and subchannels, with their call, stream and message counters, for channelz
// dashboards and tools (grpcdebug and the like).
//
//   rill::ServerBuilder builder;
//   builder.AddListeningPort("0.0.0.0:50051").RegisterService(&greeter);
//   rill::AddChannelzService(builder);
//   auto server = builder.Build();
//
// The service reads rill/channelz.h: it shows every server and channel of the process, not only
// this server. Adding it turns on the recording of timestamps and flow-control windows
// (rill::channelz::Enable()). Listings page as channelz.proto says: ids >= start_*_id, at most
// max_results (0: 100) per response, `end` set when nothing follows; an id that names nothing
// of the kind asked for is NOT_FOUND, a negative max_results INVALID_ARGUMENT.
#ifndef RILL_SERVICES_CHANNELZ_H_
#define RILL_SERVICES_CHANNELZ_H_

namespace rill {

class ServerBuilder;

// Registers the channelz service on `builder`; the server keeps it alive.
void AddChannelzService(ServerBuilder& builder);

}  // namespace rill

#endif  // RILL_SERVICES_CHANNELZ_H_
